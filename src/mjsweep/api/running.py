"""A sweep run or checked from Python on the path `sweep run` and `sweep validate` take: prepare (every check),
then execute under the sweep's lock with the local launcher. Exit codes become exceptions: InputError for bad
input (nothing started), SweepFailed when a run failed, KeyboardInterrupt when the sweep was stopped."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..naming import counted
from .sweep_records import Sweep

if TYPE_CHECKING:
    from ..engine.scheduler import Event, SweepOutcome
    from ..engine.sweep import SweepPlan


class SweepFailed(Exception):
    """Some runs failed (`sweep run` exits 1). `outcome` lists the runs by how they ended; `sweep` is the folder
    read back; str() names each failed run and why it ended."""

    def __init__(self, sweep: Sweep, outcome: SweepOutcome):
        self.sweep, self.outcome = sweep, outcome
        causes = {r.run_id: r.cause for r in sweep.runs}
        said = "; ".join(f"{run_id}: {causes.get(run_id) or 'failed'}" for run_id in outcome.failed)
        super().__init__(f"sweep {sweep.name}: {len(outcome.failed)} of "
                         f"{len(outcome.failed) + len(outcome.succeeded) + len(outcome.pruned)} runs failed ({said})")


@dataclass(frozen=True)
class PlanSummary:
    """What `validate` found: the sweep's folder, its variants (all passed deep validation) and its runs."""

    name: str
    sweep_dir: Path
    variants: list[str]
    runs: int
    """Runs the spec plans (a search's or a population's: none until it runs)."""
    to_run: int
    """Of those, the runs a `run` would start or resume now; the others have succeeded (a search's: none)."""
    warnings: list[str]


SpecSource = str | Path | Mapping[str, Any]


def validate(spec: SpecSource, runs_dir: str | Path | None = None) -> PlanSummary:
    """Check the spec, compile every variant, build its env and take random steps: InputError (SpecError)
    naming file, line and key when something is wrong, else the plan. Writes nothing."""
    from ..engine.sweep import decide
    from ..plan.planned import Action

    plan = _prepare(spec, runs_dir)
    searched = plan.spec.search is not None or plan.spec.pbt is not None  # these make their runs as they go
    to_run = 0 if searched else sum(1 for p in decide(plan) if p.action is not Action.SKIP)
    return PlanSummary(plan.spec.name, plan.sweep_dir.path, [c.variant.name for c in plan.checks],
                       0 if searched else len(plan.runs), to_run, [str(w) for w in plan.spec.warnings])


def run(spec: SpecSource, *, runs_dir: str | Path | None = None, workers: int | None = None, retries: int = 1,
        timeout_s: float | None = None, grace_s: float = 10.0, order: str = "breadth", start: str = "auto",
        on_event: Callable[[Event], None] | None = None, trust: Iterable[str | Path] = ()) -> Sweep:
    """Run the sweep of `spec` (a YAML file, or the spec as a mapping: its relative paths are read from the
    current folder) as `sweep run` does with the local launcher, and return its folder read back. Runs that
    succeeded before are skipped, interrupted ones resumed. workers: runs at once (default: the usable cores);
    on_event: called with each scheduler event (a run started, ended, retried; warnings). trust: folders
    whose pickles the runs may load (resumed runs, a warm start's source) though another user owns or can
    write them; UntrustedFolderError (an InputError, nothing started) for one not trusted (docs/trust.md)."""
    from ..engine.scheduler import SchedulerOptions
    from ..engine.sweep import execute
    from ..engine.trusted_sources import require_trusted_sources
    from ..launchers import build_launcher
    from ..plan.order import Order
    from ..sweepdir.trust import granted

    try:
        start_order = Order(order)
    except ValueError:
        raise InputError(f"order {order!r}: expected breadth or variant") from None
    plan = _prepare(spec, runs_dir)
    trust = list(trust)
    require_trusted_sources(plan, trust)
    opener = _opener(plan, start_order, workers)
    with granted(trust), build_launcher("local", plan.spec, workers=workers, start=start) as launcher:
        options = SchedulerOptions(max_workers=launcher.slots(workers, _cores()), retries=retries, timeout_s=timeout_s,
                                   grace_s=grace_s)
        outcome = execute(plan, opener, launcher, options, on_event=on_event or (lambda e: None))
    if outcome.stopped:
        raise KeyboardInterrupt(f"sweep {plan.spec.name} stopped: {counted(len(outcome.interrupted), 'run')} "
                                f"interrupted, {len(outcome.pending)} pending"
                                + (", runs still to make" if outcome.cut_short else ""))
    sweep = Sweep(plan.sweep_dir.path)
    if outcome.failed:
        raise SweepFailed(sweep, outcome)
    return sweep


def _prepare(spec: SpecSource, runs_dir: str | Path | None) -> SweepPlan:
    from ..engine.sweep import prepare

    where = Path(runs_dir) if runs_dir is not None else None
    if not isinstance(spec, Mapping):
        return prepare(spec, where)
    import yaml

    # The spec's relative paths are resolved against its file's folder: here, the current one.
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix=".mjsweep-spec-", dir=Path.cwd(),
                                     encoding="utf-8") as fh:
        yaml.safe_dump(dict(spec), fh, sort_keys=False)
        fh.flush()
        return prepare(fh.name, where)


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _opener(plan: SweepPlan, order: Any, workers: int | None) -> Any:
    """What execute runs (planning.open_runs); refused (InputError) when the disk cannot hold a grid's runs."""
    from ..engine.sweep import decide
    from ..plan.disk import Verdict, human_bytes
    from .planning import check_disk, open_runs, to_run

    if plan.spec.search is None:  # a search makes its runs as it goes; a population's segments are known
        check = check_disk(plan, to_run(decide(plan)), workers or _cores())
        if check.verdict is Verdict.SHORT:
            raise InputError(f"{plan.sweep_dir.path}: needs about {human_bytes(check.needed.bytes)} at peak, "
                             f"{human_bytes(check.free.free)} free on {check.free.device}")
    return open_runs(plan, order)
