"""`sweep bench`: a real tiny bench end to end (its figures complete and consistent, not its speed),
plus the pure pieces: batch sizes, the table, the recommendation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import TINY_XML, run_sweep
from mjsweep.bench import Batch, BenchConfig, BenchReport, ScaleFigures, batch_sizes
from mjsweep.bench.table import COLUMNS, render
from mjsweep.launchers.local import THREAD_VARS

STEPS, N_STEPS = 256, 128


def _torch_default_threads() -> int:
    """What torch picks in a fresh process with no thread caps: what the naive pool must see."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                         capture_output=True, text=True, env=env, check=True, timeout=120)
    return int(out.stdout.strip())


@pytest.mark.slow
def test_tiny_bench_reports_every_figure_consistently(tmp_path: Path):
    # The caller's shell caps threads: the naive baseline must still get torch's defaults.
    done = run_sweep("bench", "--env", "HalfCheetah-v5", "--xml", str(TINY_XML), "--steps", str(STEPS),
                     "--n-steps", str(N_STEPS), "--max-workers", "2", "--scale-runs", "40", "--json",
                     cwd=tmp_path, env={"OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    cores = len(os.sched_getaffinity(0))

    mj = report["mjsweep"]
    assert [b["n"] for b in mj] == batch_sizes(2, cores)
    solo = mj[0]
    assert solo["n"] == 1 and report["solo_fps"] == pytest.approx(solo["aggregate_fps"], abs=0.1)
    for b in mj:
        assert b["kind"] == "mjsweep" and b["failed"] == 0
        assert b["timesteps"] == b["n"] * STEPS  # every run trained, and only what it was asked to
        assert b["aggregate_fps"] == pytest.approx(b["timesteps"] / b["wall_s"], rel=0.01, abs=0.1)
        assert b["efficiency"] == pytest.approx(b["aggregate_fps"] / (b["n"] * solo["aggregate_fps"]), abs=0.002)
        assert b["torch_threads"] == 1
        assert 0 < b["startup_s"] < b["wall_s"]
        assert b["peak_rss_mb"] > 50 and b["run_fps"] > 0
        assert b["rollout_s"] > 0 and b["train_s"] > 0
        assert 0 <= b["launcher_cpu"] < 1
        assert b["workers_cpu_s"] > 0 and b["cores_busy"] == pytest.approx(
            b["workers_cpu_s"] / (b["wall_s"] * min(b["n"], cores)), abs=0.002)

    naive = report["naive"]
    assert naive["kind"] == "naive" and naive["n"] == cores
    assert naive["timesteps"] == cores * STEPS
    assert naive["torch_threads"] == _torch_default_threads()
    assert naive["workers_cpu_s"] > 0 and naive["cores_busy"] > 0
    at_cores = max((b for b in mj if b["n"] <= cores), key=lambda b: b["n"])
    assert report["speedup_over_naive"] == pytest.approx(at_cores["aggregate_fps"] / naive["aggregate_fps"],
                                                         rel=0.01)
    assert report["recommended_workers"] in [b["n"] for b in mj]

    scale = report["scale"]
    assert scale["runs"] == 40 and scale["dry_run_s"] > 0 and scale["status_s"] > 0
    assert scale["status_how"] == "sweep status"
    assert report["config"]["ppo"] == {"n_steps": N_STEPS} and report["config"]["cores"] == cores


def test_bench_rejects_a_missing_xml(tmp_path: Path):
    done = run_sweep("bench", "--xml", str(tmp_path / "nope.xml"), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().startswith("error: --xml") and "nope.xml" in done.stderr


def test_bench_rejects_an_env_without_a_default_xml(tmp_path: Path):
    done = run_sweep("bench", "--env", "CartPole-v1", "--scale-runs", "0", cwd=tmp_path)
    assert done.returncode == 2
    assert "error: " in done.stderr and "--xml" in done.stderr


def test_batch_sizes_double_and_include_cores_and_the_maximum():
    assert batch_sizes(4, 2) == [1, 2, 4]
    assert batch_sizes(12, 6) == [1, 2, 4, 6, 8, 12]
    assert batch_sizes(1, 2) == [1]


def _batch(kind: str, n: int, wall: float, **extra) -> Batch:
    fields = dict(run_fps=700.0, rollout_s=8.0, train_s=3.0, startup_s=1.9, peak_rss_mb=330.0, torch_threads=1,
                  launcher_cpu=0.002)
    fields.update(extra)
    return Batch(kind=kind, n=n, wall_s=wall, timesteps=n * 8192, **fields)


def _report() -> BenchReport:
    mj = [_batch("mjsweep", 1, 10.0), _batch("mjsweep", 2, 10.5), _batch("mjsweep", 4, 20.5)]
    naive = _batch("naive", 2, 70.0, rollout_s=None, train_s=None, torch_threads=2, launcher_cpu=None)
    return BenchReport(BenchConfig(cores=2, max_workers=4), mj, naive, ScaleFigures(10_000, 1.2, 0.8, "sweep status"),
                       "host", "cpu", 0.1)


def test_report_figures_and_recommendation():
    report = _report()
    assert report.solo.aggregate == pytest.approx(819.2)
    assert report.efficiency(report.mjsweep[1]) == pytest.approx(10.0 / 10.5)
    assert report.at_cores().n == 2
    assert report.speedup_over_naive == pytest.approx(70.0 / 10.5)
    # N=4 is 2.4% ahead of N=2: within 3%, so the smaller batch is recommended.
    assert report.recommended_workers() == 2
    assert report.recommended_workers(tolerance=0.01) == 4


def test_table_has_a_row_per_batch_and_every_target():
    text = render(_report())
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| batch"))
    rows = [line for line in lines[header + 2:] if line.startswith("|")]
    assert len(rows) == 4 and all(row.count("|") == len(COLUMNS) + 1 for row in rows)
    assert rows[0].startswith("| mjsweep (solo) | 1 |") and rows[-1].startswith("| naive | 2 |")
    assert "recommended: sweep run --workers 2" in text
    assert "- met: >= 5x the naive pool" in text
    assert sum(line.startswith("- ") for line in lines) == 7
