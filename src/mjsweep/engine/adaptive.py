"""Adaptive seeds as a source of runs: every group's `min` seeds first, then, one round at a time, the seeds
results/seeding.py grants to the groups not yet separated from the best one.

Each decision is a line of seeds.jsonl before any seed it adds starts, so a launcher that dies at any point
resumes with the seeds it granted: their runs that have not succeeded run again (from their checkpoints),
and the next decision is taken once they have ended. A decision taken again on the same seeds and the same
results is the same, and is not written twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..plan.planned import Action, PlannedRun, Reason
from ..results.rows import read_row
from ..results.seeding import explain, history, next_round
from ..spec.sweepspec import AdaptiveSeeds
from ..sweepdir.journal import seed_rounds
from ..sweepdir.models import RunSpec, RunState
from .scheduler import Event, EventKind
from .status_recorder import StatusRecorder
from .sweep import Runs, RunsOpener, SweepPlan, decide, earlier_spec_notes, reindex, write_run_dir


class AdaptiveSource:
    """The scheduler's RunSource for `seeds: {min, max, until: separated}`; built from seeds.jsonl, so a new one
    continues where the last stopped."""

    def __init__(self, plan: SweepPlan, policy: AdaptiveSeeds, on_event: Callable[[Event], None] = lambda e: None):
        self.plan, self.policy, self.on_event = plan, policy, on_event
        self.sweep_dir = plan.sweep_dir
        self.by_group: dict[str, list[RunSpec]] = {}
        """Each group's runs in seed order: the first n are its n seeds."""
        for run in plan.runs:
            self.by_group.setdefault(run.group, []).append(run)
        self.variants = {c.variant.name: c.variant for c in plan.checks}
        self.journal = seed_rounds(self.sweep_dir)
        self.rounds = self.journal.lines()
        granted = self.rounds[-1].granted() if self.rounds else {}
        self.seeds = {g: min(max(granted.get(g, policy.min), policy.min), len(runs))
                      for g, runs in self.by_group.items()}
        self.queue: list[RunSpec] = []
        self.outstanding: set[str] = set()
        """Runs of granted seeds handed out (or to be) that have not ended in this invocation."""
        self.done = False

    # -- what this invocation starts with ------------------------------------------------------------

    def open(self, planned: list[PlannedRun]) -> list[str]:
        """Queues the granted seeds' runs that have not succeeded, seed by seed across the groups.
        `planned`: sweep.decide's verdict on the granted runs. Returns the runs skipped (succeeded)."""
        self._queue({p.run.run_id for p in planned if p.action is not Action.SKIP})
        return [p.run.run_id for p in planned if p.action is Action.SKIP]

    def granted_runs(self) -> list[RunSpec]:
        return [run for group, runs in self.by_group.items() for run in runs[:self.seeds[group]]]

    # -- RunSource ----------------------------------------------------------------------------------

    def next_run(self) -> RunSpec | None:
        """The next granted seed's run; once every run of the round has ended, the next round's decision."""
        if not self.queue and not self.outstanding and not self.done:
            self._decide()
        if not self.queue:
            return None
        run = self.queue.pop(0)
        return write_run_dir(self.sweep_dir.run(run.run_id), run, self.variants.get(run.variant))

    def exhausted(self) -> bool:
        return self.done and not self.queue

    def ended(self, run_id: str, state: RunState) -> None:
        """A run ended for good (after retries): failed or succeeded, its round counts it. An interrupted one
        stays outstanding: the sweep is stopping, and the next `sweep run` runs it and decides."""
        if state is not RunState.INTERRUPTED:
            self.outstanding.discard(run_id)

    def to_prune(self) -> Iterable[str]:
        return ()

    # -- decisions ----------------------------------------------------------------------------------

    def _queue(self, run_ids: set[str]) -> None:
        """The given runs, seed by seed across the groups (breadth-first)."""
        chosen = [(i, run) for runs in self.by_group.values() for i, run in enumerate(runs) if run.run_id in run_ids]
        self.queue += [run for _, run in sorted(chosen, key=lambda item: item[0])]
        self.outstanding |= run_ids

    def _decide(self) -> None:
        returns = {g: [read_row(self.sweep_dir.run(run.run_id)).final_return for run in runs[:self.seeds[g]]]
                   for g, runs in self.by_group.items()}
        last = self.rounds[-1] if self.rounds else None
        same_seeds = last is not None and last.seeds() == self.seeds
        number = (last.round if same_seeds else last.round + 1) if last is not None else 1
        decision = next_round(number, returns, history(self.rounds, number), self.policy)
        if decision != last:
            self.journal.append(decision)  # on record before any seed it adds starts
            self.rounds.append(decision)
        self.on_event(Event(EventKind.SEEDS, None, explain(decision)))
        if decision.done:
            self.done = True
            return
        added = set()
        for group in decision.groups:
            if group.add:
                added.add(self.by_group[group.group][self.seeds[group.group]].run_id)
                self.seeds[group.group] += 1
        self._queue(added)

    def summary(self) -> str:
        granted = sum(self.seeds.values())
        return (f"adaptive seeds: {len(self.by_group)} groups, {granted} seeds granted "
                f"(min {self.policy.min}, max {self.policy.max} each), {len(self.rounds)} decisions on record")


def adaptive_runs(plan: SweepPlan, policy: AdaptiveSeeds) -> RunsOpener:
    """`seeds: {min, max, until: separated}`: the seeds granted so far that have not succeeded run first, then
    the seeds each decision adds, until the best group is separated from every other or the open ones are at
    max."""
    def open_runs(_recorder: StatusRecorder, on_event: Callable[[Event], None]) -> Runs:
        source = AdaptiveSource(plan, policy, on_event)
        planned = granted_plan(plan, source)
        reindex(plan.sweep_dir, planned)
        skipped = source.open(planned)
        return Runs([p for p in planned if p.action is not Action.SKIP], source=source, skipped=skipped,
                    orphans=[p.run.run_id for p in planned if p.reason is Reason.LEFT_RUNNING],
                    notes=[Event(EventKind.SEEDS, None, source.summary()), *earlier_spec_notes(plan),
                           *(Event(EventKind.WARNING, p.run.run_id, f"{p.note}; running it again")
                             for p in planned if p.reason is Reason.CORRUPT)])
    return open_runs


def granted_plan(plan: SweepPlan, source: AdaptiveSource) -> list[PlannedRun]:
    """What `sweep run` does now with each seed granted so far (every group's `min` in a new sweep)."""
    granted = {run.run_id for run in source.granted_runs()}
    return [p for p in decide(plan, extend=False) if p.run.run_id in granted]
