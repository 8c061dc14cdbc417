"""End to end through the installed `sweep` console script: real processes, real MuJoCo, real PPO."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
import yaml

from helpers.commands import run_dirs, run_sweep, write_spec
from helpers.models import REPO, TINY_XML
from mjsweep.sweepdir import index as runindex
from mjsweep.ui.status import read_sweep

RESULT_KEYS = {"eval_mean_return", "eval_std_return", "timesteps", "wall_s", "fps", "rollout_s", "train_s",
               "torch_threads", "xml_sha256", "versions", "peak_rss_mb"}
VERSION_KEYS = {"python", "torch", "stable-baselines3", "gymnasium", "mujoco"}


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_smoke_config_end_to_end(tmp_path):
    runs_dir = tmp_path / "runs with space"
    proc = run_sweep("run", str(REPO / "configs" / "smoke.yaml"), "--runs-dir", str(runs_dir))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sweep_dir = runs_dir / "smoke"
    resolved = yaml.safe_load((sweep_dir / "sweep.yaml").read_text())
    assert resolved["name"] == "smoke" and Path(resolved["variants"][0]["xml"]).is_absolute()
    run_dirs = sorted(p for p in sweep_dir.iterdir() if (p / "spec.json").is_file())
    assert len(run_dirs) == 4  # 2 variants x 2 seeds
    for run_dir in run_dirs:
        check_run_dir(run_dir)
    assert "4 succeeded, 0 failed" in proc.stdout
    # index.jsonl holds a line per ended run that `sweep status` reads instead of the run files
    index = sweep_dir / "index.jsonl"
    assert sorted(runindex.ended_entries(index)) == [d.name for d in run_dirs]
    from_index = read_sweep(sweep_dir, load1=0.0, cores=2).runs
    index.unlink()
    from_files = read_sweep(sweep_dir, load1=0.0, cores=2).runs
    assert from_index == from_files and {r.state for r in from_files} == {"succeeded"}

    before = snapshot(sweep_dir)
    again = run_sweep("run", str(REPO / "configs" / "smoke.yaml"), "--runs-dir", str(runs_dir))
    assert again.returncode == 0 and "0 to run, 4 already succeeded" in again.stdout
    after = snapshot(sweep_dir)
    run_files = [k for k in before if "/" in k]
    assert run_files and all(after[k] == before[k] for k in run_files)  # finished runs untouched
    assert sorted(runindex.ended_entries(index)) == [d.name for d in run_dirs]  # rebuilt for the skipped runs
    assert read_sweep(sweep_dir, load1=0.0, cores=2).runs == from_files

    report = run_sweep("report", str(sweep_dir))
    assert report.returncode == 0, report.stderr
    rows = list(csv.DictReader((sweep_dir / "report.csv").open()))
    assert sorted(r["variant"] for r in rows) == ["walker", "walker-long"]
    for row in rows:
        assert row["runs"] == "2" and row["succeeded"] == "2" and row["failed"] == "0"
        returns = [json.loads((d / "result.json").read_text())["eval_mean_return"] for d in run_dirs
                   if json.loads((d / "spec.json").read_text())["variant"] == row["variant"]]
        assert abs(float(row["mean_return"]) - sum(returns) / 2) < 1e-4 * max(1.0, abs(sum(returns)))


def check_run_dir(run_dir: Path) -> None:
    from stable_baselines3 import PPO
    from stable_baselines3.common.monitor import load_results

    spec = json.loads((run_dir / "spec.json").read_text())
    assert spec["run_id"] == run_dir.name
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "succeeded" and status["returncode"] == 0 and status["attempts"] == 1
    assert status["pid"] > 0 and status["host"] and status["started_at"] and status["ended_at"]
    result = json.loads((run_dir / "result.json").read_text())
    assert RESULT_KEYS <= set(result) and VERSION_KEYS <= set(result["versions"])
    assert result["torch_threads"] == 1
    assert result["timesteps"] == spec["total_timesteps"] == 2048
    assert result["rollout_s"] > 0 and result["train_s"] > 0 and result["fps"] > 0
    assert result["xml_sha256"] == spec["xml_sha256"]
    assert "done, eval return" in (run_dir / "log.txt").read_text()
    episodes = load_results(str(run_dir))  # SB3's own reader accepts our monitor.csv
    assert len(episodes) >= 2048 // 200 - 1 and set(episodes["l"]) == {200}
    progress = list(csv.DictReader((run_dir / "progress.csv").open()))
    assert [int(r["timesteps"]) for r in progress] == [256 * i for i in range(1, 9)]
    assert all(float(r["rollout_s"]) > 0 and float(r["train_s"]) > 0 and float(r["fps"]) > 0 for r in progress)
    # result.json carries progress.csv's summary, which `sweep status` reads instead of the file
    assert result["ep_rew_mean"] == float(progress[-1]["ep_rew_mean"])
    assert result["early_fps"] == sorted(float(r["fps"]) for r in progress[:3])[1]
    model = PPO.load(str(run_dir / "model.zip"), device="cpu")
    assert model.num_timesteps == 2048


def test_each_figure_measures_what_it_claims(tmp_path, tiny_spec):
    """20 evaluation episodes (2,000 steps after 512 of training) leave fps alone: it counts rollout +
    update; evaluation, saving and start-up are figures of their own, and the wall time holds them all."""
    tiny_spec["eval"] = {"episodes": 20}
    proc = run_sweep("run", str(write_spec(tmp_path, tiny_spec)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sweep_dir = tmp_path / "runs" / "tiny"
    [run_dir] = run_dirs(sweep_dir)
    r = json.loads((run_dir / "result.json").read_text())
    progress = list(csv.DictReader((run_dir / "progress.csv").open()))
    assert r["training_s"] == pytest.approx(r["rollout_s"] + r["train_s"], abs=0.002)
    assert r["training_s"] == pytest.approx(sum(float(row["rollout_s"]) + float(row["train_s"]) for row in progress),
                                            abs=0.002)
    assert r["fps"] == pytest.approx(r["timesteps"] / r["training_s"], rel=1e-3)
    assert r["eval_s"] > 0 and r["save_s"] > 0 and r["startup_s"] > 0
    assert r["wall_s"] >= r["training_s"] + r["save_s"] + r["eval_s"] - 0.005  # from training start to the end
    assert r["fps"] > r["timesteps"] / r["wall_s"]  # what fps was when it counted the evaluation too

    [status] = json.loads(run_sweep("status", str(sweep_dir), "--json").stdout)["runs"]
    assert [status[k] for k in ("fps", "training_s", "eval_s", "save_s", "startup_s")] == [
        r[k] for k in ("fps", "training_s", "eval_s", "save_s", "startup_s")]
    [group] = json.loads(run_sweep("report", str(sweep_dir), "-f", "json").stdout)["groups"]
    assert (group["mean_fps"], group["mean_eval_s"]) == (r["fps"], r["eval_s"])


def test_a_variant_failing_at_run_time_does_not_stop_the_others(tmp_path, tiny_spec):
    tiny_spec.update({
        "env": "helpers.flaky_env:FlakyCheetah",
        "variants": [{"name": "good", "xml": str(TINY_XML)},
                     {"name": "bad", "xml": str(TINY_XML), "env_kwargs": {"fail_after": 400}}],
        "seeds": 2,
    })
    spec = write_spec(tmp_path, tiny_spec)
    path = os.pathsep.join(p for p in (str(REPO / "tests"), os.environ.get("PYTHONPATH")) if p)  # CI's pins too
    proc = run_sweep("run", str(spec), env={"PYTHONPATH": path})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "2 succeeded, 2 failed" in proc.stdout
    sweep_dir = tmp_path / "runs" / "tiny"
    states = {}
    for run_dir in (p for p in sweep_dir.iterdir() if (p / "spec.json").is_file()):
        variant = json.loads((run_dir / "spec.json").read_text())["variant"]
        status = json.loads((run_dir / "status.json").read_text())
        states.setdefault(variant, []).append(status["state"])
        if variant == "bad":
            assert status["failure"] == "error" and status["returncode"] == 1 and status["attempts"] == 1
            assert "FloatingPointError: simulation diverged after 400 steps" in status["error_tail"]
            assert not (run_dir / "result.json").exists()
        else:
            assert (run_dir / "result.json").exists()
    assert states == {"good": ["succeeded"] * 2, "bad": ["failed"] * 2}
    report = run_sweep("report", str(sweep_dir))
    assert report.returncode == 0
    rows = {r["variant"]: r for r in csv.DictReader((sweep_dir / "report.csv").open())}
    assert rows["bad"]["failed"] == "2" and rows["bad"]["mean_return"] == ""
    assert rows["good"]["succeeded"] == "2"


def test_dry_run_prints_the_plan_and_starts_nothing(tmp_path, tiny_spec):
    tiny_spec["grid"] = {"ppo.learning_rate": [0.001, 0.0003]}
    tiny_spec["seeds"] = [3, 4]
    spec = write_spec(tmp_path, tiny_spec)
    proc = run_sweep("run", str(spec), "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("walker_learning_rate=") == 4
    assert "dry run: 4 to start, 0 to resume, 0 to skip; nothing started" in proc.stdout
    assert not (tmp_path / "runs").exists()


def test_validate_prints_a_row_per_variant(tmp_path, tiny_spec):
    tiny_spec["variants"].append({"name": "long", "xml": str(TINY_XML.with_name("tiny_walker_long.xml"))})
    proc = run_sweep("validate", str(write_spec(tmp_path, tiny_spec)))
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if "walker" in line or "long" in line]
    assert len(lines) >= 2 and all("ok" in line for line in lines[-2:])
    assert not (tmp_path / "runs").exists()


def test_a_training_leaves_no_logger_folder_in_the_temp_dir(tmp_path):
    # SB3's default logger makes an empty SB3-<time> folder in the temp dir for every training.
    temp = tmp_path / "temp"
    temp.mkdir()
    spec = write_spec(tmp_path, {"name": "quiet", "env": "HalfCheetah-v5", "max_episode_steps": 50,
                                 "variants": [{"name": "walker", "xml": str(TINY_XML)}], "total_timesteps": 128,
                                 "ppo": {"n_steps": 64, "batch_size": 32, "n_epochs": 1}, "eval": {"episodes": 1},
                                 "runs_dir": "runs"})
    done = run_sweep("run", str(spec), "--report-every", "off", env={"TMPDIR": str(temp)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert [p.name for p in temp.iterdir() if p.name.startswith("SB3-")] == []
