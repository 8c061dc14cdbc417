"""A search as sweep.execute runs it: its trials as a source of runs, once what a dead launcher left is
settled; and what a dry run shows (the space, the first trials each study's sampler proposes, the budget
left at most)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..engine.scheduler import Event, EventKind
from ..engine.status_recorder import StatusRecorder
from ..engine.sweep import Runs, RunsOpener, SweepPlan, kill_orphan
from ..plan.planned import Action, PlannedRun, Reason
from ..plan.runs import make_run
from ..sweepdir.files import SweepDir, now_iso, read_model, read_or_none
from ..sweepdir.models import RunSpec, RunState, TrialRecord, TrialState
from .confirm import replay as confirm_replay
from .journal import replay
from .samplers import make_sampler
from .source import SearchSource
from .studies import Study, studies

PREVIEW_TRIALS = 5


def search_runs(plan: SweepPlan) -> RunsOpener:
    """The search's trials, run until each study has asked its budget and every trial has ended: the runs of
    trials on record as running resume first."""
    def open_runs(recorder: StatusRecorder, on_event: Callable[[Event], None]) -> Runs:
        source = SearchSource(plan.spec, studies(plan.spec, [c.variant for c in plan.checks]), plan.sweep_dir,
                              on_event=on_event)
        settle_pruned(plan.sweep_dir, source.records(), recorder)
        resumed = source.queued_runs()
        return Runs([PlannedRun(run, Action.RESUME, "a trial's run", Reason.ENDED) for run in resumed],
                    source=source, skipped=source.skipped,
                    orphans=[run.run_id for run in resumed],  # left running by a launcher that is gone
                    notes=[Event(EventKind.TRIAL, None, source.summary())], plan_record=False)
    return open_runs


def settle_pruned(sweep_dir: SweepDir, records: list[TrialRecord], recorder: StatusRecorder) -> None:
    """A pruned trial's run that a launcher which died while stopping it left marked running: its worker is
    ended and the run recorded pruned through the sweep's one writer of status.json (the scheduler's
    recorder), as the launcher would have."""
    for record in records:
        if record.state is not TrialState.PRUNED:
            continue
        for run_id in record.runs:
            run_dir = sweep_dir.run(run_id)
            status = recorder.previous(run_dir)
            if status is not None and status.state is RunState.RUNNING:
                kill_orphan(run_dir)
                recorder.record(run_dir, status.model_copy(update={"state": RunState.PRUNED, "ended_at": now_iso()}))


@dataclass(frozen=True)
class Preview:
    study: Study
    proposals: list[dict[str, Any]]


def check_method(plan: SweepPlan) -> None:
    """A spec error at search.method naming the extra to install when the method's package is missing, before
    anything starts."""
    search = plan.spec.search
    assert search is not None
    try:
        make_sampler(search.method, {}, search.seed, 0, search.objective, [])
    except ImportError as exc:
        raise plan.spec.locator.error(("search", "method"), str(exc)) from None


def preview(plan: SweepPlan, count: int = PREVIEW_TRIALS) -> list[Preview]:
    """The first trials each study's sampler proposes from a fresh start: what `sweep run` asks first."""
    search = plan.spec.search
    assert search is not None
    out = []
    for study in studies(plan.spec, [c.variant for c in plan.checks]):
        sampler = make_sampler(search.method, study.dims, search.seed, study.index, search.objective, [])
        out.append(Preview(study, [sampler.propose(n) for n in range(min(count, search.trials))]))
    return out


@dataclass(frozen=True)
class Budget:
    """What a search may still run, at most: every trial not yet ended runs all its seeds to the largest
    total_timesteps its space allows (pruning and failures can only stop trials earlier)."""

    runs: list[RunSpec]
    """One run per seed of each trial still to ask or still running, its study's variant and grid point."""
    studies: int
    trials_left: int
    trials_ended: int
    ended_runs: list[RunSpec]
    """The runs of trials on record (trials.jsonl) whose folders hold a spec.json: what measured a speed."""
    confirming: int = 0
    """Of `runs`, those that confirm the best trials on fresh seeds (search.confirm)."""


def budget(plan: SweepPlan) -> Budget:
    search = plan.spec.search
    assert search is not None
    records = replay(plan.sweep_dir.trials_jsonl)
    ended: dict[str, int] = {}
    for rec in records:
        if rec.state is not TrialState.RUNNING:
            ended[rec.study] = ended.get(rec.study, 0) + 1
    longest = search.space.get("total_timesteps")
    point_steps = {"total_timesteps": int(max(longest.numbers()))} if longest is not None else {}
    runs: list[RunSpec] = []
    trials_left = 0
    all_studies = studies(plan.spec, [c.variant for c in plan.checks])
    for study in all_studies:
        left = max(0, search.trials - ended.get(study.key, 0))
        trials_left += left
        point = {**study.grid, **point_steps}
        runs += [make_run(plan.spec, study.variant, point, seed)
                 for _ in range(left) for seed in range(search.seeds_per_trial)]
    confirming = 0
    if search.confirm is not None:
        started = {r.study for r in confirm_replay(plan.sweep_dir)}
        for study in all_studies:
            if study.key not in started:  # a study's confirmation prices its top trials' fresh seeds
                point = {**study.grid, **point_steps}
                fresh = range(search.seeds_per_trial, search.seeds_per_trial + search.confirm.seeds)
                confirming += search.confirm.top * search.confirm.seeds
                runs += [make_run(plan.spec, study.variant, point, seed)
                         for _ in range(search.confirm.top) for seed in fresh]
    return Budget(runs, len(all_studies), trials_left, sum(ended.values()), _specs(plan.sweep_dir, records),
                  confirming)


def _specs(sweep_dir: SweepDir, records: list[TrialRecord]) -> list[RunSpec]:
    out = []
    for rec in records:
        for run_id in rec.runs:
            spec = read_or_none(partial(read_model, sweep_dir.run(run_id).spec_json, RunSpec))
            if spec is not None:
                out.append(spec)
    return out
