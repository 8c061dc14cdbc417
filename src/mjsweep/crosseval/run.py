"""Running the evaluation processes, at most `workers` at once, and writing the matrix."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import InputError
from ..launchers.spawn import spawn_worker, worker_env
from ..sweepdir.files import RunDir, SweepDir, write_text_atomic
from .pairs import Cell, PolicyJob, jobs, matrix, to_csv, trained_runs

GRACE_S = 5.0
POLL_S = 0.2


class NothingToEvaluate(InputError):
    """The sweep folder has no trained policy."""


@dataclass
class CrossOutcome:
    cells: list[Cell]
    csv: Path
    heatmap: Path | None
    evaluated: int
    """Policies evaluated by this invocation (the others had every result already)."""
    failed: list[str]
    """Run ids whose evaluation process failed, each with its last output line."""


def evaluate_cross(sweep: SweepDir, episodes: int, workers: int, deterministic: bool = True,
                   say: Callable[[str], None] = print) -> CrossOutcome:
    sweep = SweepDir(sweep.path.resolve())  # the evaluation processes run in a folder of their own
    trained, every = trained_runs(sweep)
    if not trained:
        raise NothingToEvaluate(f"{sweep.path}: no succeeded run with a model.zip to evaluate")
    todo = jobs(sweep, trained, every, episodes)
    say(f"cross: {len(trained)} policies x {len({r.variant for r in every})} variants, "
        f"{sum(len(j.targets) for j in todo)} pairs to evaluate, {workers} at once")
    failed = _run_all(todo, episodes, deterministic, workers, say) if todo else []
    cells = matrix(sweep, trained)
    sweep.cross.mkdir(parents=True, exist_ok=True)
    csv, heatmap = sweep.cross_matrix_csv, sweep.cross_matrix_png
    write_text_atomic(csv, to_csv(cells))
    return CrossOutcome(cells, csv, heatmap if _heatmap(cells, sweep.path.name, heatmap) else None, len(todo),
                        failed)


def _job_file(job: PolicyJob, folder: Path, episodes: int, deterministic: bool) -> Path:
    run_dir = RunDir(Path(job.run_dir))
    stats = run_dir.vecnormalize
    data = {"model": str(run_dir.model_zip), "vecnormalize": str(stats) if stats.is_file() else None,
            "algo": job.run.algo, "seed": job.run.seed, "episodes": episodes, "deterministic": deterministic,
            "targets": [{**asdict(t), "result": str(t.result)} for t in job.targets]}
    path = folder / f"{job.run.run_id}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _run_all(todo: list[PolicyJob], episodes: int, deterministic: bool, workers: int,
             say: Callable[[str], None]) -> list[str]:
    """Each job in its own one-thread process group that dies with this process; Ctrl-C stops them all."""
    failed: list[str] = []
    running: dict[str, tuple[subprocess.Popen, Path]] = {}
    pending = list(todo)
    with tempfile.TemporaryDirectory(prefix="mjsweep-cross-") as tmp:
        try:
            while pending or running:
                while pending and len(running) < workers:
                    job = pending.pop(0)
                    log = Path(tmp) / f"{job.run.run_id}.log"
                    running[job.run.run_id] = (_start(_job_file(job, Path(tmp), episodes, deterministic), log), log)
                for run_id, (proc, log) in list(running.items()):
                    if proc.poll() is None:
                        continue
                    del running[run_id]
                    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
                    for line in lines:
                        if line.startswith("cross: "):
                            say(line)
                    if proc.returncode != 0:
                        failed.append(f"{run_id}: {lines[-1] if lines else f'exit {proc.returncode}'}")
                time.sleep(POLL_S)
        finally:
            _stop(proc for proc, _ in running.values())
    return failed


def _start(job_file: Path, log: Path) -> subprocess.Popen:
    return spawn_worker([sys.executable, "-m", "mjsweep.crosseval.worker", str(job_file)], job_file.parent, log,
                        worker_env())


def _stop(procs) -> None:
    """SIGINT to each process group, a grace period, then SIGKILL to what is left."""
    procs = [p for p in procs if p.poll() is None]
    for proc in procs:
        _signal_group(proc, signal.SIGINT)
    deadline = time.monotonic() + GRACE_S
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    for proc in procs:
        _signal_group(proc, signal.SIGKILL)
        proc.wait()


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def _heatmap(cells: list[Cell], title: str, output: Path) -> bool:
    """Train group x test variant, coloured by mean return, each cell written out; False without numbers."""
    if not any(c.mean is not None for c in cells):
        return False
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False  # names and grid values are user text: drawn, never parsed as math
    import matplotlib.pyplot as plt
    import numpy as np

    trains, tests = sorted({c.train for c in cells}), sorted({c.test for c in cells})
    grid = np.full((len(trains), len(tests)), np.nan)
    for c in cells:
        if c.mean is not None:
            grid[trains.index(c.train), tests.index(c.test)] = c.mean
    fig, ax = plt.subplots(figsize=(1.6 * len(tests) + 3, 0.6 * len(trains) + 2))
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", aspect="auto")
    low, high = float(np.nanmin(grid)), float(np.nanmax(grid))
    for c in cells:
        text = f"{c.mean:.1f}\n[{c.ci_low:.1f}, {c.ci_high:.1f}]" if c.mean is not None else "skipped"
        # viridis turns yellow towards its top: dark text there
        bright = c.mean is None or high == low or (c.mean - low) / (high - low) > 0.6
        ax.text(tests.index(c.test), trains.index(c.train), text, ha="center", va="center", fontsize=8,
                color="black" if bright else "white")
    ax.set_xticks(range(len(tests)), tests, rotation=30, ha="right")
    ax.set_yticks(range(len(trains)), trains)
    ax.set(xlabel="evaluated on", ylabel="trained on", title=f"{title}: mean return over seeds, 95% bootstrap CI")
    fig.colorbar(image, ax=ax, label="mean return")
    fig.savefig(output, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return True
