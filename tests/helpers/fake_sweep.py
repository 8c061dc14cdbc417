"""Hand-written runs and sweep folders with known files: the one builder every test uses for them."""

from __future__ import annotations

import csv
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from mjsweep.sweepdir.files import RunDir, write_json_atomic
from mjsweep.sweepdir.models import RunSpec, RunState, RunStatus

PROGRESS_HEADER = ("iteration", "timesteps", "wall_s", "fps", "ep_rew_mean", "ep_len_mean", "rollout_s", "train_s")


def run_spec(variant: str, seed: int, grid: dict[str, Any] | None = None, total: int = 1000,
             xml: str = "/nonexistent.xml", **fields: Any) -> RunSpec:
    """A run of the fake sweep, named as the planner names runs; `fields` set any other RunSpec field."""
    grid = grid or {}
    run_id = "_".join([variant, *(f"{k}={v}" for k, v in grid.items()), f"s{seed}"])
    values = {"run_id": run_id, "sweep": "fake", "variant": variant, "grid": grid, "seed": seed,
              "env": "HalfCheetah-v5", "xml": xml, "xml_sha256": "0", "env_kwargs": {}, "max_episode_steps": None,
              "policy": "MlpPolicy", "ppo": {}, "total_timesteps": total, "n_envs": 1, "checkpoint_every": total,
              "eval_episodes": 1, "eval_deterministic": True, "content_hash": "0"}
    return RunSpec(**{**values, **fields})


def numbered_run(i: int, cpus: int = 1) -> RunSpec:
    """Run r{i}: seed i of variant v, ten timesteps, as the scheduler tests hand out by the dozen."""
    return run_spec("v", i, total=10, run_id=f"r{i}", cpus=cpus)


def make_run(sweep: Path, spec: RunSpec, state: RunState | None = None, result: dict | None = None,
             progress: list[tuple[int, float, float | None]] | None = None,
             monitor: list[tuple[float, int]] | None = None, pid: int | None = None,
             host: str | None = None, attempts: int = 1) -> RunDir:
    """A run folder. progress: (timesteps, fps, ep_rew_mean) rows; monitor: (return, length) episodes."""
    run = RunDir(sweep / spec.run_id)
    run.path.mkdir(parents=True, exist_ok=True)
    write_json_atomic(run.spec_json, spec.model_dump(mode="json"))
    if state is not None:
        run.write_status(RunStatus(state=state, attempts=attempts, pid=pid,
                                   host=host or socket.gethostname()))
    if result is not None:
        write_json_atomic(run.result_json, {"run_id": spec.run_id, "torch_threads": 1, **result})
    if progress is not None:
        write_progress(run, progress)
    if monitor is not None:
        lines = ['#{"t_start": 0.0, "env_id": "HalfCheetah-v5"}', "r,l,t"]
        lines += [f"{r},{length},{i * 0.1:.1f}" for i, (r, length) in enumerate(monitor)]
        run.monitor_csv.write_text("\n".join(lines) + "\n")
    return run


def write_progress(run: RunDir, rows: list[tuple[int, float, float | None]]) -> None:
    with open(run.progress_csv, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(PROGRESS_HEADER)
        for i, (steps, fps, rew) in enumerate(rows, start=1):
            writer.writerow([i, steps, steps / fps, fps, "" if rew is None else rew, "", 0.1, 0.1])


def result(eval_return: float, fps: float = 1000.0, timesteps: int = 1000, **extra) -> dict:
    return {"eval_mean_return": eval_return, "eval_std_return": 0.0, "fps": fps, "timesteps": timesteps,
            **extra}


def dead_pid() -> int:
    """The pid of a process that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def every_state(sweep: Path) -> None:
    """One run in each state; the two running runs: one whose process lives (this test), one whose died."""
    make_run(sweep, run_spec("v", 0))  # pending: spec.json only
    make_run(sweep, run_spec("v", 1), RunState.RUNNING, pid=os.getpid(),
             progress=[(100, 500.0, -3.0), (200, 400.0, -2.0)])
    make_run(sweep, run_spec("v", 2), RunState.RUNNING, pid=dead_pid())
    make_run(sweep, run_spec("v", 3), RunState.SUCCEEDED, result=result(5.0))
    make_run(sweep, run_spec("v", 4), RunState.FAILED, attempts=2)
    make_run(sweep, run_spec("v", 5), RunState.INTERRUPTED)
    corrupt = make_run(sweep, run_spec("v", 6))
    corrupt.status_json.write_text("{not json")
