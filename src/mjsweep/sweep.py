"""A sweep from spec file to finished runs: validate everything, plan, decide what to (re)run, execute.

Nothing is written until every check has passed; then the sweep lock is taken, sweep.yaml and each
run's spec.json are written, and the scheduler runs what is left to do.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Callable, Iterator

import psutil
import yaml

from . import plan as planlib
from . import spec as speclib
from . import variants as variantlib
from .envs import EnvBuildError, EnvProbe, probe_env
from .launchers.base import Launcher
from .plan import RunSpec
from .rundir import CorruptFileError, RunDir, RunState, SweepDir, write_json_atomic, write_text_atomic
from .scheduler import Event, EventKind, Scheduler, SchedulerOptions, SweepOutcome


class SweepLockedError(Exception):
    """Another launcher holds this sweep's lock."""


class Action(str, Enum):
    SKIP = "skip"        # succeeded before with the same content
    RESUME = "resume"    # has a checkpoint to continue from
    START = "start"      # never ran, or failed before saving a checkpoint


@dataclass(frozen=True)
class VariantCheck:
    variant: variantlib.Variant
    stats: variantlib.ModelStats
    probe: EnvProbe


@dataclass(frozen=True)
class SweepPlan:
    spec: speclib.SweepSpec
    checks: list[VariantCheck]
    runs: list[RunSpec]
    sweep_dir: SweepDir


@dataclass(frozen=True)
class PlannedRun:
    run: RunSpec
    action: Action
    note: str = ""


def prepare(spec_path: str | Path, runs_dir: Path | None = None, check_envs: bool = True) -> SweepPlan:
    """Load and check the spec, its XMLs and its env; expand the runs. Raises SpecError; writes nothing."""
    spec = speclib.load(spec_path)
    variants = variantlib.resolve(spec)
    stats = variantlib.check_compiles(spec, variants)
    runs = planlib.expand(spec, variants)
    probes = _probe_envs(spec, variants, runs) if check_envs else {}
    checks = [VariantCheck(v, stats[v.name], probes.get(v.name, EnvProbe((), ()))) for v in variants]
    root = runs_dir.resolve() if runs_dir else spec.runs_dir
    return SweepPlan(spec, checks, runs, SweepDir(root / spec.name))


def _probe_envs(spec: speclib.SweepSpec, variants: list[variantlib.Variant],
                runs: list[RunSpec]) -> dict[str, EnvProbe]:
    """Build the env once per distinct (variant, env_kwargs) of the plan."""
    by_name = {v.name: v for v in variants}
    probes: dict[str, EnvProbe] = {}
    seen: set[tuple[str, str]] = set()
    for run in runs:
        key = (run.variant, repr(sorted(run.env_kwargs.items())))
        if key in seen:
            continue
        seen.add(key)
        variant = by_name[run.variant]
        try:
            probe = probe_env(spec.env, variant.xml, run.env_kwargs, spec.max_episode_steps)
        except EnvBuildError as exc:
            raise spec.locator.error(
                variant.loc, f"env {spec.env!r} cannot be built for variant {variant.name!r}"
                f"{_kwargs_note(run.env_kwargs)}: {exc}") from None
        probes.setdefault(run.variant, probe)
    return probes


def _kwargs_note(env_kwargs: dict) -> str:
    return f" with env_kwargs {env_kwargs}" if env_kwargs else ""


def decide(plan: SweepPlan) -> list[PlannedRun]:
    """What `sweep run` would do with each run, given what the sweep dir already holds."""
    return [_decide_one(run, plan.sweep_dir.run(run.run_id)) for run in plan.runs]


def _decide_one(run: RunSpec, run_dir: RunDir) -> PlannedRun:
    try:
        status = run_dir.read_status()
        result = run_dir.read_result()
    except CorruptFileError as exc:
        return PlannedRun(run, _restart_action(run_dir), f"corrupt: {exc}")
    if status and status.state is RunState.SUCCEEDED and result and "eval_mean_return" in result:
        return PlannedRun(run, Action.SKIP, "succeeded")
    note = status.state.value if status else ""
    if status and status.state is RunState.RUNNING:
        note = "left running by a launcher that is gone"
    return PlannedRun(run, _restart_action(run_dir), note)


def _restart_action(run_dir: RunDir) -> Action:
    return Action.RESUME if run_dir.checkpoint_json.exists() else Action.START


def execute(plan: SweepPlan, launcher: Launcher, options: SchedulerOptions,
            on_event: Callable[[Event], None] = lambda e: None,
            on_planned: Callable[[list[PlannedRun]], None] = lambda p: None) -> SweepOutcome:
    """Run what is left of the sweep under its lock. Raises SweepLockedError if another launcher runs it."""
    plan.sweep_dir.path.mkdir(parents=True, exist_ok=True)
    with sweep_lock(plan.sweep_dir):
        planned = decide(plan)
        on_planned(planned)
        for item in planned:
            if item.note.startswith("corrupt"):
                on_event(Event(EventKind.WARNING, item.run.run_id, f"{item.note}; running it again"))
        _write_sweep_files(plan, planned)
        for item in planned:
            if item.note.startswith("left running"):
                _kill_orphan(plan.sweep_dir.run(item.run.run_id))
        todo = [p.run for p in planned if p.action is not Action.SKIP]
        outcome = Scheduler(launcher, plan.sweep_dir, options, on_event).run(todo)
        outcome.succeeded[:0] = [p.run.run_id for p in planned if p.action is Action.SKIP]
        return outcome


def _write_sweep_files(plan: SweepPlan, planned: list[PlannedRun]) -> None:
    resolved = plan.spec.model_dump(mode="json")
    write_text_atomic(plan.sweep_dir.sweep_yaml, yaml.safe_dump(resolved, sort_keys=False))
    for item in planned:
        if item.action is Action.SKIP:
            continue  # a finished run's files are never touched again
        run_dir = plan.sweep_dir.run(item.run.run_id)
        run_dir.path.mkdir(exist_ok=True)
        write_json_atomic(run_dir.spec_json, item.run.model_dump(mode="json"))


def _kill_orphan(run_dir: RunDir) -> None:
    """A run marked running under a lock we now hold: if its worker still lives here, end its group."""
    try:
        status = run_dir.read_status()
    except CorruptFileError:
        return
    if not status or not status.pid:
        return
    try:
        proc = psutil.Process(status.pid)
        if str(run_dir.path) in " ".join(proc.cmdline()):
            os.killpg(status.pid, 9)
    except (psutil.Error, ProcessLookupError, PermissionError):
        pass


@contextmanager
def sweep_lock(sweep_dir: SweepDir) -> Iterator[None]:
    """flock on sweep.lock: the OS releases it when the holder dies, however it dies."""
    fd = os.open(sweep_dir.lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            raise SweepLockedError(
                f"sweep {sweep_dir.path} is already running (launcher pid {holder}); "
                "wait for it, or stop it first") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)
