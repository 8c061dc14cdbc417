"""A search from checked plan to ended trials: under the sweep's lock, the scheduler fed by the search; and
what a dry run shows (the space, the first trials each study's sampler proposes)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from ..engine.scheduler import Event, EventKind, Scheduler, SchedulerOptions, SweepOutcome
from ..engine.sweep import SweepPlan, kill_orphan, sweep_lock, variants_record
from ..launchers.base import Launcher
from ..plan.planned import Action, PlannedRun, Reason
from ..sweepdir.files import CorruptFileError, RunState, SweepDir, now_iso, write_model, write_text_atomic
from .record import TrialRecord, TrialState
from .samplers import make_sampler
from .source import SearchSource
from .trials import Study, studies

PREVIEW_TRIALS = 5


def run_search(plan: SweepPlan, launcher: Launcher, options: SchedulerOptions,
               on_event: Callable[[Event], None] = lambda e: None,
               on_planned: Callable[[list[PlannedRun]], None] = lambda p: None) -> SweepOutcome:
    """Run the search's trials until each study has asked its budget and every trial has ended. Raises
    SweepLockedError (an InputError) before anything starts if another launcher holds the sweep."""
    spec = plan.spec
    plan.sweep_dir.path.mkdir(parents=True, exist_ok=True)
    with sweep_lock(plan.sweep_dir):
        write_text_atomic(plan.sweep_dir.sweep_yaml, yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False))
        write_model(plan.sweep_dir.variants_json, variants_record(plan))
        source = SearchSource(spec, studies(spec, [c.variant for c in plan.checks]), plan.sweep_dir,
                              on_event=on_event)
        settle_pruned(plan.sweep_dir, source.records())
        resumed = source.queued_runs()
        for run in resumed:
            kill_orphan(plan.sweep_dir.run(run.run_id))  # left running by a launcher that is gone
        on_planned([PlannedRun(run, Action.RESUME, "a trial's run", Reason.ENDED) for run in resumed])
        on_event(Event(EventKind.TRIAL, None, source.summary()))
        outcome = Scheduler(launcher, plan.sweep_dir, options, on_event=on_event).run([], source=source)
        outcome.succeeded[:0] = source.skipped
        return outcome


def settle_pruned(sweep_dir: SweepDir, records: list[TrialRecord]) -> None:
    """A pruned trial's run that a launcher which died while stopping it left marked running: its worker is
    ended and the run recorded pruned, as the launcher would have."""
    for record in records:
        if record.state is not TrialState.PRUNED:
            continue
        for run_id in record.runs:
            run_dir = sweep_dir.run(run_id)
            try:
                status = run_dir.read_status()
            except CorruptFileError:
                continue
            if status is not None and status.state is RunState.RUNNING:
                kill_orphan(run_dir)
                run_dir.write_status(status.model_copy(update={"state": RunState.PRUNED, "ended_at": now_iso()}))


@dataclass(frozen=True)
class Preview:
    study: Study
    proposals: list[dict[str, Any]]


def check_method(plan: SweepPlan) -> None:
    """ImportError naming the extra to install when the method's package is missing, before anything starts."""
    search = plan.spec.search
    assert search is not None
    make_sampler(search.method, {}, search.seed, 0, search.maximize, [])


def preview(plan: SweepPlan, count: int = PREVIEW_TRIALS) -> list[Preview]:
    """The first trials each study's sampler proposes from a fresh start: what `sweep run` asks first."""
    search = plan.spec.search
    assert search is not None
    out = []
    for study in studies(plan.spec, [c.variant for c in plan.checks]):
        sampler = make_sampler(search.method, study.dims, search.seed, study.index, search.maximize, [])
        out.append(Preview(study, [sampler.propose(n) for n in range(min(count, search.trials))]))
    return out
