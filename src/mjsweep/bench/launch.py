"""What a user waits for before training begins: `sweep run` as a fresh process, timed to its first run
started (interpreter, imports, spec checks and deep validation, the lock, the run folders, the worker's
process) and to that run's first env step (plus the worker's own start-up, from its result.json). The
sweep has two runs, one at a time: the second shows a run's start once the sweep is under way (for
--start template, forked from a template that is ready)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from ..sweepdir.files import RunDir, SweepDir, read_or_none
from ..sweepdir.models import RunState
from .batches import bench_spec, write_spec
from .figures import BenchConfig, LaunchFigures

POLL_S = 0.01
"""Seconds between looks at the sweep folder while `sweep run` starts."""


def measure_launch(config: BenchConfig, xml: Path, folder: Path, start_with: str = "exec",
                   timeout_s: float = 600) -> LaunchFigures:
    """A two-run sweep through `sweep run --workers 1 --start START_WITH` as a fresh process, watched from
    outside."""
    spec = bench_spec(config, xml, "launch", 2, folder / "runs")
    spec["total_timesteps"] = min(config.steps, int(config.ppo.get("n_steps", 2048)))  # one PPO iteration
    spec_path = write_spec(folder, spec)
    sweep_dir = SweepDir(folder / "runs" / "launch")
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "mjsweep.ui.cli", "run", str(spec_path), "--workers", "1",
                             "--start", start_with, "--quiet"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    first_run, first_dir = None, None
    while first_run is None and proc.poll() is None and time.monotonic() - started < timeout_s:
        if (first_dir := _a_run_started(sweep_dir)) is not None:
            first_run = time.monotonic() - started
        else:
            time.sleep(POLL_S)
    try:
        _, err = proc.communicate(timeout=max(1.0, timeout_s - (time.monotonic() - started)))
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    if proc.returncode != 0 or first_run is None or first_dir is None:
        raise RuntimeError(f"sweep run of the launch figure failed (exit {proc.returncode}): {err.strip()[-500:]}")
    first = _startup(first_dir)
    later = [_startup(d) for d in sweep_dir.run_dirs() if d.path != first_dir.path]
    return LaunchFigures(round(first_run, 3), first, start_with, later[0] if later else None)


def _startup(run_dir: RunDir) -> float | None:
    result = _result(run_dir)
    return round(result.startup_s, 3) if result is not None and result.startup_s is not None else None


def _a_run_started(sweep_dir: SweepDir) -> RunDir | None:
    if not sweep_dir.path.is_dir():
        return None
    for run_dir in sweep_dir.run_dirs():
        try:
            state = json.loads(run_dir.status_json.read_text(encoding="utf-8")).get("state")
        except (OSError, ValueError):
            continue
        if state in (RunState.RUNNING, RunState.SUCCEEDED, RunState.FAILED):
            return run_dir
    return None


def _result(run_dir):
    return read_or_none(run_dir.read_result)
