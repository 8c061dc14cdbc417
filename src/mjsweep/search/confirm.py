"""Tune, then confirm: a study's best trials trained again on fresh seeds, once its search has ended.

A search picks its best trial by the seeds it tried, so the winner's value is optimistic (the maximum of
noisy estimates). With `search: {confirm: {top: K, seeds: N}}`, once every trial of a study has ended, its K
best complete trials each train N seeds that no trial of the study trained (the seeds after the largest any
trial used: recorded in confirm.jsonl, and checked again when the report reads them). Each confirmation is a
line of confirm.jsonl before any of its runs starts and again when its runs have ended, so a launcher that
dies at any point resumes it: its runs that have not succeeded run again, from their checkpoints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..engine import warmstart
from ..engine.scheduler import Event, EventKind
from ..engine.sweep import write_run_dir
from ..results import stats
from ..results.sections import Items, Section, Table, Text
from ..robots.variants import Variant
from ..spec.sweepspec import SweepSpec
from ..sweepdir.files import SweepDir
from ..sweepdir.journal import confirmations
from ..sweepdir.models import ConfirmRecord, RunSpec, RunState, TrialRecord, TrialState
from .objective import run_value, run_values, trial_values
from .studies import Study, TrialBuildError, run_succeeded, trial_runs

if TYPE_CHECKING:
    from ..spec.searchspace import SearchSpec
    from .ranking import TrialRow

PREFIX = "c"
"""Confirmation runs' ids start c<number>_, beside the trial's t<number>_."""


def replay(sweep_dir: SweepDir) -> list[ConfirmRecord]:
    """Every confirmation's latest state, in the order they were started."""
    return confirmations(sweep_dir).replay()


def fresh_seeds(trials: list[TrialRecord], count: int) -> list[int]:
    """`count` seeds after every seed a trial of the study trained (trial k's seeds are 0 .. runs - 1)."""
    start = max((len(t.runs) for t in trials), default=0)
    return list(range(start, start + count))


def top_trials(trials: list[TrialRecord], top: int, maximize: bool) -> list[TrialRecord]:
    """The `top` best complete trials of a study, best first (ties: the earlier trial)."""
    done = [t for t in trials if t.state is TrialState.COMPLETE and t.value is not None]
    sign = -1.0 if maximize else 1.0
    return sorted(done, key=lambda t: (sign * (t.value or 0.0), t.number))[:top]


@dataclass
class _Confirmation:
    record: ConfirmRecord
    runs: dict[str, RunSpec]
    variant: Variant
    queue: list[str] = field(default_factory=list)
    ended: dict[str, RunState] = field(default_factory=dict)


class ConfirmStage:
    """The confirmations of a search as a source of runs, rebuilt from confirm.jsonl."""

    def __init__(self, spec: SweepSpec, studies: list[Study], sweep_dir: SweepDir,
                 on_event: Callable[[Event], None]):
        assert spec.search is not None and spec.search.confirm is not None
        self.spec, self.search, self.confirm = spec, spec.search, spec.search.confirm
        self.studies = {s.key: s for s in studies}
        self.sweep_dir, self.on_event = sweep_dir, on_event
        self.warm = warmstart.resolve(spec)
        """warm_start: {from: ...}: the trials' source, which their confirmations start from too."""
        self.items: dict[tuple[str, int], _Confirmation] = {}
        self.by_run: dict[str, _Confirmation] = {}
        self.started: set[str] = set()
        """Studies whose confirmations are on record."""
        self.skipped: list[str] = []
        for record in replay(sweep_dir):
            self.started.add(record.study)
            study = self.studies.get(record.study)
            if study is None:
                continue
            item = self._build(study, record)
            if item is None:
                continue
            if record.state is TrialState.RUNNING:
                for run_id in item.runs:
                    if run_succeeded(self.sweep_dir, run_id):
                        item.ended[run_id] = RunState.SUCCEEDED
                        self.skipped.append(run_id)
                    else:
                        item.queue.append(run_id)
                if len(item.ended) == len(item.runs):
                    self._finish(item)
            else:
                self.skipped += [r for r in record.runs if run_succeeded(self.sweep_dir, r)]

    def begin(self, study: Study, trials: list[TrialRecord]) -> None:
        """The study's search has ended: its best trials go on record with their fresh seeds, and queue."""
        if study.key in self.started:
            return
        self.started.add(study.key)
        seeds = fresh_seeds(trials, self.confirm.seeds)
        for trial in top_trials(trials, self.confirm.top, self.search.maximize):
            record = ConfirmRecord(study=study.key, number=trial.number, params=trial.params, tuned=trial.value,
                                   seeds=seeds, runs=[], state=TrialState.RUNNING)
            item = self._build(study, record)
            if item is None:
                continue
            record = item.record = record.model_copy(update={"runs": list(item.runs)})
            confirmations(self.sweep_dir).append(record)  # on record before any of its runs starts
            item.queue = list(item.runs)
            self.on_event(Event(EventKind.TRIAL, None, f"confirming trial {trial.number} of {study.key} on "
                                                       f"seeds {seeds[0]}-{seeds[-1]}"))

    def next_run(self) -> RunSpec | None:
        for item in self.items.values():
            if item.queue:
                run = item.runs[item.queue.pop(0)]
                return write_run_dir(self.sweep_dir.run(run.run_id), run, item.variant)
        return None

    def owns(self, run_id: str) -> bool:
        return run_id in self.by_run

    def ended(self, run_id: str, state: RunState) -> None:
        item = self.by_run[run_id]
        if state is RunState.INTERRUPTED:
            return  # the next `sweep run` resumes it
        item.ended[run_id] = state
        if item.record.state is TrialState.RUNNING and len(item.ended) == len(item.runs):
            self._finish(item)

    def pending(self) -> bool:
        return any(i.queue or i.record.state is TrialState.RUNNING for i in self.items.values())

    def queued_runs(self) -> list[RunSpec]:
        return [i.runs[r] for i in self.items.values() for r in i.queue]

    def _build(self, study: Study, record: ConfirmRecord) -> _Confirmation | None:
        params = {key: record.params[key] for key in study.dims if key in record.params}
        try:
            warm = dict.fromkeys(record.seeds, self.warm) if self.warm is not None else None
            variant, runs = trial_runs(self.spec, study, record.number, params, seeds=record.seeds,
                                       prefix=PREFIX, warm=warm)
        except TrialBuildError as exc:  # the robot built for the search; the spec changed since
            failed = record.model_copy(update={"state": TrialState.FAILED, "note": str(exc)})
            confirmations(self.sweep_dir).append(failed)
            return None
        item = _Confirmation(record, {r.run_id: r for r in runs}, variant)
        self.items[record.key] = item
        for run_id in item.runs:
            self.by_run[run_id] = item
        return item

    def _finish(self, item: _Confirmation) -> None:
        metric = [self.search.metric]
        seeds = [v for run_id, state in item.ended.items() if state is RunState.SUCCEEDED
                 and (v := run_values(self.sweep_dir.run(run_id), metric)) is not None]
        values = trial_values(seeds, metric)
        state = TrialState.COMPLETE if values is not None else TrialState.FAILED
        item.record = item.record.model_copy(update={
            "state": state, "value": values[0] if values else None, "seeds_ok": len(seeds),
            "note": "" if values else "no fresh seed gave a value"})
        confirmations(self.sweep_dir).append(item.record)
        shown = f" = {item.record.value:.4g} (tuned {item.record.tuned:.4g})" if values and item.record.tuned \
            is not None else ""
        self.on_event(Event(EventKind.TRIAL, None, f"trial {item.record.number} of {item.record.study} "
                                                   f"confirmed{shown}"))


# -- read back --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Confirmed:
    record: ConfirmRecord
    tuned_seeds: list[float]
    """The objective of each search seed that gave one."""
    confirmed_seeds: list[float]
    gap: float | None
    """How much better the search said the trial was than its fresh seeds show (positive: optimistic)."""
    gap_low: float | None
    gap_high: float | None
    fresh: bool
    """No confirmation seed trained a trial of the study."""


@dataclass(frozen=True)
class StudyConfirmation:
    study: str
    trials: list[Confirmed]
    """In the search's order, best tuned first."""
    tau: float | None
    """Kendall's tau between the tuned and the confirmed order of the trials (1: the ranking held)."""
    best_held: bool | None
    """The best tuned trial is the best confirmed one."""


def of_search(sweep_dir: SweepDir, trials: tuple[list[TrialRow], SearchSpec] | None
              ) -> list[StudyConfirmation] | None:
    """A search's trials confirmed on fresh seeds (search.confirm), tuned against confirmed; None for another
    kind or a search that confirms none."""
    if trials is None or trials[1].confirm is None:
        return None
    rows, search = trials
    return read(sweep_dir, search.metric, search.maximize, [r.record for r in rows]) or None


def read(sweep_dir: SweepDir, metric: str, maximize: bool, trials: list[TrialRecord]) -> list[StudyConfirmation]:
    """Every study's confirmations with their gaps and whether the ranking held; `trials`: the search's."""
    records = replay(sweep_dir)
    used = {t.study: max((len(t2.runs) for t2 in trials if t2.study == t.study), default=0) for t in trials}
    runs_of = {t.key: t.runs for t in trials}
    out = []
    for study in dict.fromkeys(r.study for r in records):
        mine = [r for r in records if r.study == study]
        sign = 1.0 if maximize else -1.0
        confirmed = []
        for rec in sorted(mine, key=lambda r: (-sign * (r.tuned or 0.0), r.number)):
            tuned_seeds = _values(sweep_dir, runs_of.get(rec.key, []), metric)
            fresh_values = _values(sweep_dir, rec.runs, metric)
            gap, low, high = optimism_gap(tuned_seeds, fresh_values, rec.tuned, rec.value, maximize)
            confirmed.append(Confirmed(rec, tuned_seeds, fresh_values, gap, low, high,
                                       min(rec.seeds, default=0) >= used.get(study, 0)))
        done = [c for c in confirmed if c.record.value is not None and c.record.tuned is not None]
        tau = kendall_tau([c.record.tuned or 0.0 for c in done], [c.record.value or 0.0 for c in done]) \
            if len(done) >= 2 else None
        best_held = None
        if len(done) >= 2:
            best_confirmed = max(done, key=lambda c: sign * (c.record.value or 0.0))
            best_held = best_confirmed is done[0]
        out.append(StudyConfirmation(study, confirmed, tau, best_held))
    return out


def _values(sweep_dir: SweepDir, run_ids: list[str], metric: str) -> list[float]:
    """The objective of each run that has one."""
    return [v for r in run_ids if (v := run_value(sweep_dir.run(r), metric)) is not None]


def optimism_gap(tuned: list[float], fresh: list[float], tuned_value: float | None, fresh_value: float | None,
                 maximize: bool) -> tuple[float | None, float | None, float | None]:
    """tuned - confirmed (confirmed - tuned when minimizing), each the IQM over its seeds, with Yuen's 95%
    interval of that difference over both sides' seeds (stats.iqm_difference_interval: a percentile bootstrap
    of one tuned seed and five fresh ones held the true gap in about half of simulated searches)."""
    if tuned_value is None or fresh_value is None:
        return None, None, None
    sign = 1.0 if maximize else -1.0
    gap = sign * (tuned_value - fresh_value)
    interval = stats.iqm_difference_interval(tuned, fresh)
    if interval is None:
        return gap, None, None
    low, high = sorted(sign * bound for bound in interval)
    return gap, low, high


def kendall_tau(x: list[float], y: list[float]) -> float:
    """Kendall's tau-a between two orderings of the same items: (concordant - discordant) / pairs."""
    n = len(x)
    score = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            score += float(np.sign(x[i] - x[j]) * np.sign(y[i] - y[j]))
    return score / (n * (n - 1) / 2)


def section(confirmations: list[StudyConfirmation], metric: str) -> Section:
    """The report's section: tuned against confirmed for every confirmed trial, the optimism gap with its
    interval (none where a side has too few seeds), and whether each study's ranking held."""
    rows = []
    for study in confirmations:
        for c in study.trials:
            rec = c.record
            seeds = f"{rec.seeds[0]}-{rec.seeds[-1]}" + ("" if c.fresh else " (NOT fresh)")
            ci = f"[{c.gap_low:.2f}, {c.gap_high:.2f}]" if c.gap_low is not None and c.gap_high is not None else "-"
            rows.append((rec.study, str(rec.number), _num(rec.tuned),
                         _num(rec.value) if rec.state is TrialState.COMPLETE else rec.state.value, _num(c.gap), ci,
                         f"{seeds} ({rec.seeds_ok}/{len(rec.seeds)} ok)",
                         " ".join(f"{k}={v}" for k, v in rec.params.items())))
    return Section("confirmed on fresh seeds", (
        Text(f"Each study's best trials trained again on seeds no trial used; {metric} as the IQM over seeds. The "
             "optimism gap is tuned minus confirmed (in the direction of the objective), with Yuen's 95% "
             "interval of a difference of IQMs over both sides' seeds."),
        Table(("study", "trial", "tuned", "confirmed", "gap", "95% CI", "fresh seeds", "parameters"), tuple(rows),
              "confirmed"),
        Items(tuple(summary_lines(confirmations)))))


def summary_lines(confirmations: list[StudyConfirmation]) -> list[str]:
    out = []
    for study in confirmations:
        if study.tau is None:
            out.append(f"{study.study}: {len(study.trials)} trial(s) confirmed so far; no ranking to compare yet")
            continue
        held = "held" if study.best_held else "did not hold"
        out.append(f"{study.study}: the best tuned trial {held} on fresh seeds; Kendall's tau between the tuned "
                   f"and the confirmed order of its {len(study.trials)} trials = {study.tau:.2f}")
    return out


def to_dicts(confirmations: list[StudyConfirmation]) -> list[dict[str, Any]]:
    return [{"study": s.study, "kendall_tau": s.tau, "best_held": s.best_held,
             "trials": [{**c.record.model_dump(mode="json"), "gap": c.gap, "gap_low": c.gap_low,
                         "gap_high": c.gap_high, "fresh": c.fresh, "tuned_seeds": c.tuned_seeds,
                         "confirmed_seeds": c.confirmed_seeds} for c in s.trials]} for s in confirmations]


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"

