"""Figures of the launcher at scale: a dry run of a large plan, and reading a large sweep folder."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from ..engine.sweep import prepare
from ..results.runview import index_entry
from ..sweepdir import index as runindex
from ..sweepdir.csvfiles import ProgressRow, csv_text
from ..sweepdir.files import SweepDir
from ..sweepdir.models import RunResult, RunState, RunStatus
from .batches import bench_spec, children_cpu_s, write_spec
from .figures import BenchConfig, ScaleFigures


def measure_scale(config: BenchConfig, xml: Path, folder: Path) -> ScaleFigures:
    """Generate a sweep folder of config.scale_runs finished runs, then time the commands that read it."""
    runs_dir = folder / "runs"
    spec_path = write_spec(folder, bench_spec(config, xml, "scale", config.scale_runs, runs_dir))
    plan = prepare(spec_path, check_envs=False)
    _fill_sweep_dir(plan.sweep_dir.path, [run.model_dump(mode="json") for run in plan.runs])
    dry_run = _time_command(["run", "--dry-run", str(spec_path)])
    status = _time_command(["status", str(plan.sweep_dir.path)])
    return ScaleFigures(config.scale_runs, *dry_run, *status)


def _fill_sweep_dir(path: Path, specs: list[dict]) -> None:
    """What a finished sweep leaves that `sweep status` reads: spec.json, status.json, result.json and
    progress.csv per run (plain writes: this is a fixture, not a sweep, so it skips the per-file fsync),
    and index.jsonl, built from those files as the launcher builds it."""
    sweep_dir = SweepDir(path)
    status = json.dumps(RunStatus(state=RunState.SUCCEEDED, attempts=1, returncode=0, pid=1, host="bench",
                                  started_at="2026-01-01T00:00:00+00:00", ended_at="2026-01-01T00:10:00+00:00",
                                  peak_rss_mb=300.0).to_file())
    for spec in specs:
        run = sweep_dir.run(spec["run_id"])
        run.path.mkdir(parents=True, exist_ok=True)
        run.spec_json.write_text(json.dumps(spec), encoding="utf-8")
        run.status_json.write_text(status, encoding="utf-8")
        result = RunResult(run_id=spec["run_id"], eval_mean_return=float(spec["seed"] % 7), eval_std_return=0.0,
                           timesteps=spec["total_timesteps"], fps=700.0, torch_threads=1, early_fps=700.0,
                           ep_rew_mean=2.5)
        run.result_json.write_text(json.dumps(result.to_file()), encoding="utf-8")
        run.progress_csv.write_text(_progress_csv(spec["total_timesteps"]), encoding="utf-8")
    runindex.rewrite(sweep_dir.index_jsonl, [index_entry(run_dir) for run_dir in sweep_dir.run_dirs()])


def _progress_csv(timesteps: int, iterations: int = 4) -> str:
    rows = (ProgressRow(i, timesteps * i // iterations, 3.0 * i, 700.0, -1.5 + i, 1000.0, 2.2, 0.8)
            for i in range(1, iterations + 1))
    return csv_text(ProgressRow, rows)


def _time_command(args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of `sweep ARGS` as a fresh process (interpreter start-up included, as a user
    sees it). The CPU time tells how much of the wall time other work on the machine took."""
    cpu_before, started = children_cpu_s(), time.monotonic()
    done = subprocess.run([sys.executable, "-m", "mjsweep.ui.cli", *args], stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600)
    elapsed, cpu = time.monotonic() - started, children_cpu_s() - cpu_before
    if done.returncode != 0:
        raise RuntimeError(f"sweep {' '.join(args)} failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    return round(elapsed, 3), round(cpu, 3)

