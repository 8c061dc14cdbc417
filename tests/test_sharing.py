"""What a researcher shares after a sweep, on a real trained sweep: the contact sheet kept in the sweep
folder, a video of each variant's policy, and report.html opened in a real headless Chromium."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from conftest import TINY_LONG_XML, TINY_XML, run_sweep, write_spec
from helpers.rendering import needs_gl
from mjsweep.rendering.videos import NoVideo, choose
from mjsweep.results import ResultRow


def row(seed: int, final: float, variant: str = "walker", ok: bool = True) -> ResultRow:
    result = {"eval_mean_return": final} if ok else None
    return ResultRow(f"{variant}_s{seed}", variant, {}, seed, variant, "succeeded" if ok else "failed", None, result)


def test_a_video_shows_the_seed_with_the_median_final_return(tmp_path):
    rows = [row(0, 5.0), row(1, 1.0), row(2, 3.0), row(3, 9.0, ok=False), row(0, 2.0, "long"), row(1, 4.0, "long")]
    picked = {c.row.variant: c.row.seed for c in choose(rows, tmp_path)}
    assert picked == {"walker": 2, "long": 0}  # the middle of 1, 3, 5; the lower middle of 2, 4
    assert [c.row.seed for c in choose(rows, tmp_path, variant="walker", seed=0)] == [0]
    with pytest.raises(NoVideo, match="variant 'walker' seed 3"):
        choose(rows, tmp_path, variant="walker", seed=3)  # seed 3 failed: it has no model


def test_best_falls_back_to_the_final_model_where_a_run_kept_no_best(tmp_path):
    (tmp_path / "walker_s0").mkdir()
    (tmp_path / "walker_s1").mkdir()
    (tmp_path / "walker_s1" / "best_model.zip").write_bytes(b"")
    by_seed = {c.row.seed: c.model.name for c in choose([row(0, 1.0)], tmp_path, best=True)}
    by_seed |= {c.row.seed: c.model.name for c in choose([row(1, 1.0)], tmp_path, best=True)}
    assert by_seed == {0: "model.zip", 1: "best_model.zip"}


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A real sweep of two variants x two seeds, started with --pictures."""
    folder = tmp_path_factory.mktemp("sharing")
    spec = write_spec(folder, {
        "name": "share", "env": "HalfCheetah-v5", "max_episode_steps": 100,
        "variants": [{"name": "walker", "xml": str(TINY_XML)}, {"name": "walker-long", "xml": str(TINY_LONG_XML)}],
        "seeds": 2, "total_timesteps": 512, "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1},
        "eval": {"episodes": 1}, "runs_dir": "runs",
    })
    proc = run_sweep("run", str(spec), "--quiet", "--pictures", str(folder / "pictures"))
    assert proc.returncode == 0, proc.stderr
    return folder / "runs" / "share"


@needs_gl
def test_run_with_pictures_keeps_the_contact_sheet_in_the_sweep_folder(trained):
    kept = trained / "pictures" / "contact_sheet.png"
    assert kept.read_bytes() == (trained.parents[1] / "pictures" / "contact_sheet.png").read_bytes()


@needs_gl
def test_video_of_each_variant_has_the_frames_its_seconds_ask_for(trained):
    import imageio.v2 as imageio

    proc = run_sweep("video", str(trained), "--seconds", "1", "--gif")
    assert proc.returncode == 0, proc.stderr
    written = sorted(Path(line) for line in proc.stdout.split())
    assert [p.name for p in written] == ["walker-long.mp4", "walker.mp4"]
    for path in written:
        reader = imageio.get_reader(path)
        fps = reader.get_meta_data()["fps"]
        frames = list(reader.iter_data())  # the reader itself claims an infinite length
        reader.close()
        # HalfCheetah-v5 steps 5 physics steps of the tiny walker's 0.01 s: 20 frames a simulated second.
        assert fps == pytest.approx(20.0) and len(frames) == 20
        assert frames[0].shape == (240, 320, 3)
        assert frames[0].std() > 10, "not blank"
        assert np.abs(frames[0].astype(int) - frames[-1].astype(int)).mean() > 1, "the robot moves"
        assert Image.open(path.with_suffix(".gif")).n_frames == 20
    assert "frames" in proc.stderr  # progress
