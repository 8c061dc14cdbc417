"""docs/sweep-folder.md's file listing is the one scripts/folder_listing.py generates from the sweep folder's
contract (sweepdir/files.py), and a real sweep with the features that write files (normalization, periodic
evaluation and its best model, checkpoints, the HTML report with its comparison figures) writes no file the
listing lacks."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from helpers.commands import run_sweep, write_spec
from helpers.models import REPO, TINY_LONG_XML, TINY_SPEC, TINY_XML


def _listing_script():
    spec = importlib.util.spec_from_file_location("folder_listing", REPO / "scripts" / "folder_listing.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LISTING = _listing_script()


def _patterns(entries: list[tuple[str, str]]) -> list[re.Pattern[str]]:
    """A regex per listed path: a <placeholder> is one name; a folder with nothing listed in it holds anything
    (W&B's, TensorBoard's, a model's snapshot), a folder with listed files holds only those."""
    paths = [path for path, _ in entries]
    out = []
    for path in paths:
        regex = re.sub(r"<[^>]+>", "[^/]+", re.escape(path).replace(r"\<", "<").replace(r"\>", ">"))
        opaque = path.endswith("/") and not any(other != path and other.startswith(path) for other in paths)
        out.append(re.compile(regex.rstrip("/") + ("(/.*)?" if opaque else "")))
    return out


def _unlisted(folder: Path, patterns: list[re.Pattern[str]], skip: set[str] = frozenset()) -> list[str]:
    names = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    return sorted(n for n in names if n.split("/")[0] not in skip and not any(p.fullmatch(n) for p in patterns))


def test_the_pages_listing_is_the_one_the_contract_generates():
    page = (REPO / "docs" / "sweep-folder.md").read_text(encoding="utf-8")
    assert LISTING.page_listing(page) == LISTING.listing(), "run: .venv/bin/python scripts/folder_listing.py --write"


def test_every_file_a_real_sweep_writes_is_in_the_listing(tmp_path):
    variants = [{"name": "walker", "xml": str(TINY_XML)}, {"name": "long", "xml": str(TINY_LONG_XML)}]
    spec = {**TINY_SPEC, "variants": variants, "seeds": 2, "total_timesteps": 256,
            "ppo": {"n_steps": 64, "batch_size": 64, "n_epochs": 1}, "normalize": True,
            "eval": {"every": 128, "episodes": 1}, "checkpoint_every": 128}
    ran = run_sweep("run", str(write_spec(tmp_path, spec)), "--workers", "2")
    assert ran.returncode == 0, ran.stderr
    sweep = tmp_path / "runs" / "tiny"
    reported = run_sweep("report", str(sweep), "--format", "html", "--compare")
    assert reported.returncode == 0, reported.stderr
    run_folders = [p for p in sweep.iterdir() if (p / "spec.json").is_file()]
    assert len(run_folders) == 4
    # the features under test wrote their files, so the walk below looks at them
    for run_folder in run_folders:
        for name in ("vecnormalize.pkl", "evaluations.csv", "best_model.zip", "checkpoints/checkpoint.json"):
            assert (run_folder / name).is_file(), name
        assert any(run_folder.glob("checkpoints/exact_*.npz"))
    assert all((sweep / name).is_file() for name in ("report.html", "report_matrix.svg", "plan.json"))

    assert _unlisted(sweep, _patterns(LISTING.sweep_entries()), skip={p.name for p in run_folders}) == []
    for run_folder in run_folders:
        assert _unlisted(run_folder, _patterns(LISTING.run_entries())) == []


def test_a_file_the_listing_lacks_is_found(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    for name in ("model.zip", "checkpoints/model_128.zip", "wandb/run-1/files/config.yaml",
                 "stray.txt", "checkpoints/model_128.bin"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    assert _unlisted(tmp_path, _patterns(LISTING.run_entries())) == ["checkpoints/model_128.bin", "stray.txt"]
