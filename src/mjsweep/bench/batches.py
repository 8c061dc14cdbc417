"""Running one batch of N concurrent trainings: through mjsweep, or through a naive multiprocessing.Pool."""

from __future__ import annotations

import multiprocessing
import os
import resource
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from statistics import mean
from typing import TYPE_CHECKING, Any, Protocol

import yaml
from rich.console import Console

from ..childproc import THREAD_VARS
from ..engine.scheduler import SchedulerOptions, SweepOutcome
from ..engine.sweep import SweepPlan, execute, planned_runs, prepare
from ..launchers.local import LocalLauncher
from ..sweepdir.files import RunDir, SweepDir, read_or_none
from ..sweepdir.models import RunResult
from .figures import Batch, BenchConfig
from .naive import NaiveJob, train_default_threads

if TYPE_CHECKING:
    from ..engine.scheduler import Event
    from ..plan.planned import PlannedRun


class LiveTable(Protocol):
    """What `sweep run` draws while its runs go on (ui/live.py's progress)."""

    def planned(self, planned: list[PlannedRun]) -> None: ...

    def event(self, event: Event) -> None: ...

    def close(self) -> None: ...


DrawLive = Callable[[Console, SweepDir], LiveTable]
"""Makes the live table on a console: the ui hands it in (ui/live.make_progress), as the bench sits below the ui."""


def bench_spec(config: BenchConfig, xml: Path, name: str, seeds: int, runs_dir: Path) -> dict[str, Any]:
    """A sweep spec of `seeds` runs that differ only by seed, evaluated on one episode each."""
    spec: dict[str, Any] = {
        "name": name, "env": config.env, "variants": [{"name": "bench", "xml": str(xml)}],
        "seeds": seeds, "total_timesteps": config.steps, "ppo": dict(config.ppo),
        "env_kwargs": dict(config.env_kwargs), "eval": {"episodes": 1}, "runs_dir": str(runs_dir),
    }
    if config.max_episode_steps:
        spec["max_episode_steps"] = config.max_episode_steps
    return spec


def write_spec(folder: Path, spec: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def mjsweep_batch(config: BenchConfig, xml: Path, n: int, folder: Path, draw: DrawLive) -> Batch:
    """N runs at once through `sweep run`'s own path: spec.json run dirs, Scheduler, LocalLauncher, worker, and
    the live table that `draw` makes."""
    spec_path = write_spec(folder, bench_spec(config, xml, f"bench-{n}", n, folder / "runs"))
    plan = prepare(spec_path)
    outcome, wall, cpu, workers_cpu = _timed_execute(plan, n, draw)
    results = [_result(plan.sweep_dir.run(run.run_id)) for run in plan.runs]
    done = [r for r in results if r is not None]
    uss = [peak for run in plan.runs if (peak := _peak_uss_mb(plan.sweep_dir.run(run.run_id))) is not None]
    return Batch(
        kind="mjsweep", n=n, wall_s=round(wall, 3), timesteps=sum(r.timesteps or 0 for r in done),
        run_fps=round(mean(training_fps(r.timesteps or 0, r.rollout_s or 0.0, r.train_s or 0.0) for r in done), 1)
        if done else 0.0,
        rollout_s=_mean(done, "rollout_s"), train_s=_mean(done, "train_s"),
        startup_s=_max(done, "startup_s"), peak_rss_mb=_max(done, "peak_rss_mb"),
        torch_threads=int(_max(done, "torch_threads") or 0) or None, spread_s=_spread(done, "attempt_wall_s"),
        workers_cpu_s=round(workers_cpu, 2), launcher_cpu=round(cpu / wall, 4) if wall > 0 else None,
        failed=len(outcome.failed) + len(outcome.interrupted) + len(outcome.pending),
        peak_uss_mb=max(uss) if uss else None,
    )


def _timed_execute(plan: SweepPlan, n: int, draw: DrawLive) -> tuple[SweepOutcome, float, float, float]:
    """Run the plan N at a time as `sweep run` does on a terminal (scheduling and the live table, drawn to
    a terminal nobody sees); its wall time, the launcher's CPU and the workers' CPU seconds."""
    cpu_before, children_before, started = _own_cpu_s(), children_cpu_s(), time.monotonic()
    with LocalLauncher() as launcher, open(os.devnull, "w", encoding="utf-8") as screen:
        progress = draw(Console(file=screen, force_terminal=True, width=160), plan.sweep_dir)
        try:
            outcome = execute(plan, planned_runs(plan), launcher, SchedulerOptions(max_workers=n, retries=0),
                              on_event=progress.event, on_planned=progress.planned)
        finally:
            progress.close()
    wall = time.monotonic() - started
    return outcome, wall, _own_cpu_s() - cpu_before, children_cpu_s() - children_before


def naive_batch(config: BenchConfig, xml: Path, n: int) -> Batch:
    """N trainings in a multiprocessing.Pool(N), each with torch's default thread count."""
    jobs = [NaiveJob(config.env, str(xml), dict(config.env_kwargs), config.max_episode_steps,
                     dict(config.ppo), config.steps, seed) for seed in range(n)]
    # 'spawn': fresh interpreters, so nothing the bench process set up leaks into the baseline.
    context = multiprocessing.get_context("spawn")
    children_before, started = children_cpu_s(), time.monotonic()
    with _without_thread_caps(), context.Pool(n) as pool:
        results = pool.map(train_default_threads, jobs, chunksize=1)
        pool.close()
        pool.join()  # reaped, so their CPU time shows in RUSAGE_CHILDREN
    wall = time.monotonic() - started
    workers_cpu = children_cpu_s() - children_before
    return Batch(
        kind="naive", n=n, wall_s=round(wall, 3), timesteps=sum(r.timesteps for r in results),
        run_fps=round(mean(training_fps(r.timesteps, r.rollout_s, r.train_s) for r in results), 1),
        rollout_s=round(mean(r.rollout_s for r in results), 3), train_s=round(mean(r.train_s for r in results), 3),
        startup_s=round(max(r.startup_s for r in results), 3),
        peak_rss_mb=round(max(r.peak_rss_mb for r in results), 1),
        torch_threads=max(r.torch_threads for r in results), workers_cpu_s=round(workers_cpu, 2),
    )


def training_fps(timesteps: int, rollout_s: float, train_s: float) -> float:
    """One run's env steps per second of training (rollout + update), both timed by training.PhaseTimer:
    the run fps of the mjsweep and the naive batches alike, start-up, saving and evaluation left out."""
    return float(timesteps) / max(float(rollout_s) + float(train_s), 1e-9)


@contextmanager
def _without_thread_caps() -> Iterator[None]:
    """The Pool's processes inherit os.environ: drop any thread caps the user's shell set, for now."""
    saved = {var: os.environ.pop(var) for var in THREAD_VARS if var in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def _own_cpu_s() -> float:
    """CPU seconds of this process alone (the launcher), not of its children."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_cpu_s() -> float:
    """CPU seconds of this process's children that have ended and been reaped."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _result(run_dir: RunDir) -> RunResult | None:
    return read_or_none(run_dir.read_result)


def _peak_uss_mb(run_dir: RunDir) -> float | None:
    """The launcher's measure of the run's own memory, from its status.json."""
    status = read_or_none(run_dir.read_status)
    return status.peak_uss_mb if status else None


def _mean(results: list[RunResult], key: str) -> float | None:
    values = _values(results, key)
    return round(mean(values), 3) if values else None


def _max(results: list[RunResult], key: str) -> float | None:
    values = _values(results, key)
    return round(max(values), 3) if values else None


def _spread(results: list[RunResult], key: str) -> float | None:
    values = _values(results, key)
    return round(max(values) - min(values), 3) if values else None


def _values(results: list[RunResult], key: str) -> list[float]:
    """The field's value in each run's result.json that has one."""
    return [float(value) for r in results if (value := getattr(r, key)) is not None]
