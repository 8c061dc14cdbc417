"""W&B tracking: a real offline run written into the run folder, grouped and tagged, and the checks that
stop a sweep before anything starts."""

from __future__ import annotations

import json

import pytest

from helpers.commands import run_sweep, write_spec
from helpers.wandb_records import by_kind
from mjsweep.spec.loading import load
from mjsweep.worker.tracking import check_tracking

pytest.importorskip("wandb")


def values(items) -> dict:
    return {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in items}


def test_each_run_logs_its_progress_and_result_to_its_own_offline_wandb_run(tmp_path, tiny_spec):
    tiny_spec.update({"seeds": 2, "tracking": {"wandb": {"project": "mjsweep-test", "mode": "offline",
                                                          "tags": ["smoke"]}}})
    tiny_spec["eval"]["every"] = 256
    spec = write_spec(tmp_path, tiny_spec)
    proc = run_sweep("run", str(spec))
    assert proc.returncode == 0, proc.stderr
    runs = sorted(p for p in (tmp_path / "runs" / "tiny").iterdir() if (p / "spec.json").exists())
    assert len(runs) == 2
    ids = set()
    for run_dir in runs:
        spec_json = json.loads((run_dir / "spec.json").read_text())
        result = json.loads((run_dir / "result.json").read_text())
        [log] = list((run_dir / "wandb").glob("offline-run-*/run-*.wandb"))
        kinds = by_kind(log)
        [run] = [r.run for r in kinds["run"]]
        ids.add(run.run_id)
        assert run.run_group == "walker" and run.display_name == spec_json["run_id"]
        assert set(run.tags) == {"variant=walker", f"seed={spec_json['seed']}", "smoke"}
        config = values(run.config.update)
        assert config["run_id"] == spec_json["run_id"] and config["seed"] == spec_json["seed"]
        history = [values(r.history.item) for r in kinds["history"]]
        progress = (run_dir / "progress.csv").read_text().splitlines()[1:]
        rows = [h for h in history if "train/fps" in h]
        assert [h["timesteps"] for h in rows] == [int(line.split(",")[1]) for line in progress]
        assert all("time/rollout_s" in h for h in rows)
        evaluations = [h for h in history if "eval/mean_return" in h]
        written = (run_dir / "evaluations.csv").read_text().splitlines()[1:]
        assert [(h["timesteps"], h["eval/mean_return"]) for h in evaluations] == [
            (int(line.split(",")[0]), pytest.approx(float(line.split(",")[1]))) for line in written]
        assert len(evaluations) == 2  # at 256 and 512 timesteps
        summary = {}
        for record in kinds["summary"]:
            summary.update(values(record.summary.update))
        assert summary["eval_mean_return"] == pytest.approx(result["eval_mean_return"])
        assert summary["fps"] == pytest.approx(result["fps"])
        assert [r.exit.exit_code for r in kinds["exit"]] == [0]
    assert len(ids) == 2, "a W&B run per mjsweep run"


def test_online_tracking_without_a_login_stops_before_anything_starts(tmp_path, tiny_spec):
    tiny_spec["tracking"] = {"wandb": {"project": "p", "mode": "online"}}
    spec = write_spec(tmp_path, tiny_spec)
    proc = run_sweep("run", str(spec), env={"HOME": str(tmp_path), "WANDB_API_KEY": "",
                                             "NETRC": str(tmp_path / "no-netrc")})
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: {spec}:") and "tracking.wandb.mode" in line and "wandb login" in line
    assert not (tmp_path / "runs").exists()


def test_tracking_without_the_package_is_a_spec_error(tmp_path, tiny_spec, monkeypatch):
    import importlib.util

    tiny_spec["tracking"] = {"wandb": {"project": "p"}}
    spec = load(write_spec(tmp_path, tiny_spec))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a))
    with pytest.raises(Exception, match=r"tracking\.wandb: W&B tracking needs the wandb package: "
                                        r"pip install 'mjsweep\[wandb\]'"):
        check_tracking(spec)
