"""A sweep folder written by an earlier version (tests/fixtures/schema1_sweep: files without a `schema`
field) stays readable by every command, and `sweep run` on its spec finishes it.

The fixture is a real sweep of 1 variant x 2 seeds: seed 0 succeeded, seed 1 was stopped by SIGINT with a
checkpoint at 1024 of its 2048 timesteps. Its finished run's model files were deleted to keep it small.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from conftest import TINY_XML, run_sweep, write_spec

FIXTURE = Path(__file__).parent / "fixtures" / "schema1_sweep"
DONE, STOPPED = "walker_s0_b95a302d", "walker_s1_3300fee5"


@pytest.fixture
def old_sweep(tmp_path) -> tuple[Path, Path]:
    """The fixture copied into tmp_path/runs/schema1, and the spec that produced it."""
    sweep_dir = tmp_path / "runs" / "schema1"
    shutil.copytree(FIXTURE, sweep_dir)
    spec = write_spec(tmp_path, {
        "name": "schema1", "env": "HalfCheetah-v5", "max_episode_steps": 100,
        "variants": [{"name": "walker", "xml": str(TINY_XML)}], "seeds": 2, "total_timesteps": 2048,
        "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1}, "eval": {"episodes": 1},
        "checkpoint_every": 256, "runs_dir": "runs"})
    return sweep_dir, spec


def test_status_reads_an_old_sweep_folder(old_sweep):
    sweep_dir, _ = old_sweep
    proc = run_sweep("status", "--json", str(sweep_dir))
    assert proc.returncode == 0, proc.stderr
    runs = {r["run_id"]: r for r in json.loads(proc.stdout)["runs"]}
    assert runs[DONE]["state"] == "succeeded" and runs[DONE]["final_return"] == pytest.approx(-5.71643)
    assert runs[STOPPED]["state"] == "interrupted" and runs[STOPPED]["timesteps"] == 1024
    assert not any(r["problems"] for r in runs.values())
    (sweep_dir / "index.jsonl").unlink()  # the run files alone say the same
    again = {r["run_id"]: r for r in json.loads(run_sweep("status", "--json", str(sweep_dir)).stdout)["runs"]}
    assert again == runs
    table = run_sweep("status", str(sweep_dir))
    assert table.returncode == 0 and DONE in table.stdout and STOPPED in table.stdout


def test_report_and_plot_read_an_old_sweep_folder(old_sweep, tmp_path):
    sweep_dir, _ = old_sweep
    proc = run_sweep("report", str(sweep_dir))
    assert proc.returncode == 0, proc.stderr
    [row] = list(csv.DictReader((sweep_dir / "report.csv").open()))
    assert row["variant"] == "walker" and row["runs"] == "2" and row["succeeded"] == "1"
    assert float(row["mean_return"]) == pytest.approx(-5.71643)
    plot = run_sweep("plot", str(sweep_dir), "-o", str(tmp_path / "curves.png"))
    assert plot.returncode == 0, plot.stderr
    assert (tmp_path / "curves.png").stat().st_size > 0 and (tmp_path / "curves_final.png").stat().st_size > 0


def test_run_on_the_same_spec_resumes_the_stopped_run(old_sweep):
    sweep_dir, spec = old_sweep
    done_before = {p.name: p.read_bytes() for p in (sweep_dir / DONE).iterdir() if p.is_file()}
    proc = run_sweep("run", str(spec), "--workers", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 to run, 1 already succeeded" in proc.stdout
    assert {p.name: p.read_bytes() for p in (sweep_dir / DONE).iterdir() if p.is_file()} == done_before
    result = json.loads((sweep_dir / STOPPED / "result.json").read_text())
    assert result["resumed_from"] == 1024 and result["timesteps"] == 2048
    status = json.loads((sweep_dir / STOPPED / "status.json").read_text())
    assert status["state"] == "succeeded" and status["attempts"] == 2
    variants = json.loads((sweep_dir / "variants.json").read_text())["variants"]
    assert [v["name"] for v in variants] == ["walker"]  # written by this version's launcher
