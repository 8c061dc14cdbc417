"""The search as a run source: the next seed of an unfinished trial, else a new trial, whenever a slot is free.

The launcher process alone asks the sampler and tells it each trial's objective; every change of a trial is a
line of trials.jsonl before anything acts on it, so a launcher that dies at any point resumes with no trial
lost or counted twice: a trial on record as running gets its unfinished runs again (from their checkpoints),
a trial that ended is never run again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..engine import warmstart
from ..engine.scheduler import Event, EventKind
from ..engine.sweep import write_run_dir
from ..robots.variants import Variant
from ..spec.sweepspec import SweepSpec
from ..sweepdir.files import SweepDir
from ..sweepdir.journal import trials as trials_journal
from ..sweepdir.models import RunSpec, RunState, TrialRecord, TrialState, WarmSource
from . import nearest as nearestlib
from . import prune as prunelib
from .confirm import ConfirmStage
from .objective import evaluations, run_values, trial_values
from .samplers import Sampler, make_sampler
from .studies import Study, TrialBuildError, run_succeeded, trial_runs, trial_variant

PRUNE_CHECK_S = 2.0
"""Seconds between readings of the running trials' evaluations.csv files."""


@dataclass
class _Trial:
    record: TrialRecord
    study: Study
    runs: dict[str, RunSpec]
    variant: Variant | None
    queue: list[str] = field(default_factory=list)
    """Runs not handed out yet, in seed order."""
    ended: dict[str, RunState] = field(default_factory=dict)


class SearchSource:
    """The scheduler's RunSource for a search; built from trials.jsonl, so a new one resumes the search."""

    def __init__(self, spec: SweepSpec, studies: list[Study], sweep_dir: SweepDir,
                 on_event: Callable[[Event], None] = lambda e: None, clock: Callable[[], float] = time.monotonic):
        assert spec.search is not None
        self.spec, self.search, self.studies, self.sweep_dir = spec, spec.search, studies, sweep_dir
        self.on_event, self.clock = on_event, clock
        self.trials: dict[tuple[str, int], _Trial] = {}
        self.asked = {s.key: 0 for s in studies}
        self.by_run: dict[str, _Trial] = {}
        self.skipped: list[str] = []
        """Runs that had succeeded before this invocation."""
        self._to_stop: list[str] = []
        self._last_prune_check = -PRUNE_CHECK_S
        self.journal = trials_journal(sweep_dir)
        written, history = self.journal.lines(), self.journal.replay()
        self._history = {rec.key: rec for rec in history}
        """Every trial on record when this source was built: a resumed warm trial's source among them."""
        self._fixed = warmstart.resolve(spec)
        """warm_start: {from: ...}: the run every trial's runs start from (None: cold, or nearest)."""
        self.samplers: dict[str, Sampler] = {
            s.key: make_sampler(self.search.method, s.dims, self.search.seed, s.index, self.search.objective,
                                [r for r in written if r.study == s.key]) for s in studies}
        by_key = {s.key: s for s in studies}
        for rec in history:
            study = by_key.get(rec.study)
            if study is None:
                continue  # a study the spec no longer has
            self.asked[study.key] = max(self.asked[study.key], rec.number + 1)
            if rec.state is TrialState.RUNNING:
                self._resume(study, rec)
            else:
                self.trials[rec.key] = _Trial(rec, study, {}, None)
                self.skipped += [run_id for run_id in rec.runs if run_succeeded(self.sweep_dir, run_id)]
        self.confirm = ConfirmStage(spec, studies, sweep_dir, on_event) \
            if self.search.confirm is not None else None
        if self.confirm is not None:
            self.skipped += self.confirm.skipped

    # -- RunSource ----------------------------------------------------------------------------------

    def next_run(self) -> RunSpec | None:
        for trial in self._running():
            if trial.queue:
                return self._hand_out(trial, trial.queue.pop(0))
        while (study := self._next_study()) is not None:
            asked = self._ask(study)
            if asked is not None:
                return self._hand_out(asked, asked.queue.pop(0))
        if self.confirm is None:
            return None
        for study in self._searched():
            self.confirm.begin(study, [t.record for t in self.trials.values() if t.study is study])
        return self.confirm.next_run()

    def exhausted(self) -> bool:
        searched = self._next_study() is None and not any(t.queue or t.record.state is TrialState.RUNNING
                                                          for t in self.trials.values())
        if self.confirm is None or not searched:
            return searched
        return all(s.key in self.confirm.started for s in self.studies) and not self.confirm.pending()

    def _searched(self) -> list[Study]:
        """Studies that have asked every trial and whose trials have all ended: ready to confirm."""
        running = {t.study.key for t in self._running()}
        return [s for s in self.studies if self.asked[s.key] >= self.search.trials and s.key not in running]

    def ended(self, run_id: str, state: RunState) -> None:
        if self.confirm is not None and self.confirm.owns(run_id):
            self.confirm.ended(run_id, state)
            return
        trial = self.by_run.get(run_id)
        if trial is None or state is RunState.INTERRUPTED:
            return  # interrupted by a stop of the whole sweep: it resumes with the next `sweep run`
        trial.ended[run_id] = state
        if trial.record.state is TrialState.RUNNING and len(trial.ended) == len(trial.runs):
            self._tell(trial)

    def to_prune(self) -> Iterable[str]:
        if self.search.prune is not None and self.clock() - self._last_prune_check >= PRUNE_CHECK_S:
            self._last_prune_check = self.clock()
            for trial in list(self._running()):
                self._judge(trial)
        stop, self._to_stop = self._to_stop, []
        return stop

    # -- what the search holds ----------------------------------------------------------------------

    def records(self) -> list[TrialRecord]:
        return [t.record for t in self.trials.values()]

    def queued_runs(self) -> list[RunSpec]:
        confirming = self.confirm.queued_runs() if self.confirm is not None else []
        return [t.runs[r] for t in self._running() for r in t.queue] + confirming

    def _running(self) -> list[_Trial]:
        return [t for t in self.trials.values() if t.record.state is TrialState.RUNNING]

    def _next_study(self) -> Study | None:
        """The study with the fewest trials asked that still has trials to ask: studies advance together."""
        open_ = [s for s in self.studies if self.asked[s.key] < self.search.trials]
        return min(open_, key=lambda s: (self.asked[s.key], s.index)) if open_ else None

    # -- trials -------------------------------------------------------------------------------------

    def _ask(self, study: Study) -> _Trial | None:
        number = self.asked[study.key]
        self.asked[study.key] = number + 1
        params = self.samplers[study.key].propose(number)
        try:
            variant = trial_variant(self.spec, study, params)
            start, warm_from, warm = self._warm_start(study, number, params, variant)
            variant, runs = trial_runs(self.spec, study, number, params, variant=variant,
                                       warm=warm)
        except TrialBuildError as exc:
            rec = TrialRecord(study=study.key, number=number, params=params, runs=[], state=TrialState.FAILED,
                              note=str(exc))
            self.journal.append(rec)
            self.trials[rec.key] = _Trial(rec, study, {}, None)
            self.samplers[study.key].tell(rec)
            self.on_event(Event(EventKind.TRIAL, None, f"trial {number} of {study.key} failed: {exc}"))
            return None
        rec = TrialRecord(study=study.key, number=number, params=params, runs=[r.run_id for r in runs],
                          state=TrialState.RUNNING, start=start, warm_from=warm_from)
        self.journal.append(rec)  # on record before any of its runs starts
        trial = _Trial(rec, study, {r.run_id: r for r in runs}, variant, queue=[r.run_id for r in runs])
        self._register(trial)
        return trial

    def _resume(self, study: Study, rec: TrialRecord) -> None:
        """A trial on record as running: its succeeded runs count, the others run again (from checkpoints)."""
        params = {key: rec.params[key] for key in study.dims if key in rec.params}  # in the space's order
        source = self._history.get((study.key, rec.warm_from)) if rec.warm_from is not None else None
        warm = nearestlib.sources(self.sweep_dir, source, self.search.seeds_per_trial) if source else \
            self._fixed_sources()
        try:
            variant, runs = trial_runs(self.spec, study, rec.number, params, warm=warm)
        except TrialBuildError as exc:
            trial = _Trial(rec, study, {}, None)
            self.trials[rec.key] = trial
            self._finish(trial, TrialState.FAILED, None, 0, str(exc))
            return
        if [r.run_id for r in runs] != rec.runs:  # the spec changed what these parameters run: the new runs
            rec = rec.model_copy(update={"runs": [r.run_id for r in runs]})
            self.journal.append(rec)
        trial = _Trial(rec, study, {r.run_id: r for r in runs}, variant)
        self._register(trial)
        for run in runs:
            if run_succeeded(self.sweep_dir, run.run_id):
                trial.ended[run.run_id] = RunState.SUCCEEDED
                self.skipped.append(run.run_id)
            else:
                trial.queue.append(run.run_id)
        if len(trial.ended) == len(trial.runs):
            self._tell(trial)

    def _warm_start(self, study: Study, number: int, params: dict[str, Any], variant: Any
                    ) -> tuple[str | None, int | None, dict[int, WarmSource] | None]:
        """warm_start: nearest: whether the trial starts "warm" or "cold", the trial it starts from, and each
        seed's source run; (None, None, None) in other searches."""
        warm = self.spec.warm_start
        if warm is None:
            return None, None, None
        if not warm.nearest:
            fixed = self._fixed_sources()
            assert fixed is not None, "engine.warmstart.resolve() found the source before launch"
            _, runs = trial_runs(self.spec, study, number, params, variant=variant)
            if (problem := nearestlib.misfit(self.spec, variant, runs[0], fixed[0])) is not None:
                raise TrialBuildError(f"warm_start: the source run {fixed[0].run_id} does not fit: {problem}")
            return None, None, fixed
        if nearestlib.starts_cold(number, warm.cold_share):
            return "cold", None, None
        source = nearestlib.nearest(params, [t.record for t in self.trials.values() if t.study is study],
                                    study.dims)
        found = nearestlib.sources(self.sweep_dir, source, self.search.seeds_per_trial) if source else None
        if source is None or found is None:
            return "cold", None, None  # nothing finished yet to start from
        _, cold = trial_runs(self.spec, study, number, params, variant=variant)
        if nearestlib.misfit(self.spec, variant, cold[0], found[0]) is not None:
            return "cold", None, None  # another network, or an edit changed the spaces
        return "warm", source.number, found

    def _fixed_sources(self) -> dict[int, WarmSource] | None:
        """The fixed source for every seed of a trial; None without one."""
        fixed = self._fixed
        return dict.fromkeys(range(self.search.seeds_per_trial), fixed) if fixed is not None else None

    def summary(self) -> str:
        counts = {s: sum(t.record.state is s for t in self.trials.values()) for s in TrialState}
        total = len(self.studies) * self.search.trials
        return (f"search: {len(self.trials)} of {total} trials on record ("
                + ", ".join(f"{n} {s.value}" for s, n in counts.items()) + f"), {len(self.queued_runs())} runs "
                f"to resume, {len(self.skipped)} already succeeded")

    def _register(self, trial: _Trial) -> None:
        self.trials[trial.record.key] = trial
        for run_id in trial.runs:
            self.by_run[run_id] = trial

    def _hand_out(self, trial: _Trial, run_id: str) -> RunSpec:
        """Writes the run's folder (spec.json, naming its robot's snapshot) just before it starts."""
        return write_run_dir(self.sweep_dir.run(run_id), trial.runs[run_id], trial.variant)

    def _tell(self, trial: _Trial) -> None:
        """Every seed ended: each objective's IQM over those that succeeded, or a failed trial when none did."""
        metrics = [o.metric for o in self.search.objective]
        succeeded_ = [run_id for run_id, state in trial.ended.items() if state is RunState.SUCCEEDED]
        seeds = [v for run_id in succeeded_ if (v := run_values(self.sweep_dir.run(run_id), metrics)) is not None]
        values = trial_values(seeds, metrics)
        if values is None:
            note = f"no seed has a value of {', '.join(metrics)}" if succeeded_ else "no seed succeeded"
            self._finish(trial, TrialState.FAILED, None, 0, note)
        else:
            multi = values if self.search.multi else None
            self._finish(trial, TrialState.COMPLETE, values[0], len(seeds), values=multi)

    def _finish(self, trial: _Trial, state: TrialState, value: float | None, seeds_ok: int, note: str = "",
                values: list[float] | None = None) -> None:
        trial.record = trial.record.model_copy(update={"state": state, "value": value, "values": values,
                                                       "seeds_ok": seeds_ok, "note": note})
        self.journal.append(trial.record)
        self.samplers[trial.study.key].tell(trial.record)
        shown = f" = {', '.join(f'{v:.4g}' for v in values or [value])}" if value is not None else \
            (f" ({note})" if note else "")
        number, key = trial.record.number, trial.study.key
        self.on_event(Event(EventKind.TRIAL, None, f"trial {number} of {key} {state.value}{shown}"))

    # -- pruning ------------------------------------------------------------------------------------

    def _curves(self, trial: _Trial) -> list[prunelib.Curve]:
        return [evaluations(self.sweep_dir.run(run_id).evaluations_csv) for run_id in trial.record.runs]

    def _judge(self, trial: _Trial) -> None:
        prune = self.search.prune
        assert prune is not None
        if trial.queue:
            return  # judged once every seed runs
        peers = [t for t in self.trials.values() if t.study is trial.study and t is not trial and t.record.runs]
        maximize, mine = self.search.maximize, self._curves(trial)
        if prune.method == "median":
            ended = [self._curves(t) for t in peers if t.record.state in (TrialState.COMPLETE, TrialState.PRUNED)]
            value = prunelib.median_prunes(mine, ended, prune.after, maximize, prune.min_trials)
        else:
            others = [self._curves(t) for t in peers if t.record.state is not TrialState.FAILED]
            value = prunelib.asha_prunes(mine, others, prune.after, maximize, prune.min_trials)
        if value is None:
            return
        live = [r for r in trial.record.runs if r not in trial.ended]
        step = prunelib.reached(mine)
        self._finish(trial, TrialState.PRUNED, value, 0, f"stopped at {step} timesteps")
        self._to_stop.extend(live)
