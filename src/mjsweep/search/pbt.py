"""Population-based training as the scheduler's RunSource, synchronous by generation: every member's segment
of a generation ends before the next generation is decided (search/pbtpolicy.py) and started.

A member's segment is a run of its own folder that resumes from the final checkpoint of its parent segment (its
own previous one, or the one it copies), copied into the folder before it starts: the model with its optimizer
state, the normalization statistics, the replay buffer, the exact state, and the logs up to it. A generation's
lines of pbt.jsonl are written before any of its segments starts, so a launcher that stops or dies at any
point resumes with the same decisions: recorded segments that have not succeeded run again (from their
checkpoints), and a generation is decided again only from the same recorded scores.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..engine.scheduler import Event, EventKind
from ..engine.status_recorder import StatusRecorder
from ..engine.sweep import Runs, RunsOpener, SweepPlan, write_run_dir
from ..plan.planned import Action, PlannedRun, Reason
from ..plan.runs import make_run
from ..robots.variants import Variant
from ..spec.sweepspec import SweepSpec
from ..sweepdir.files import RunDir
from ..sweepdir.lineage import SegmentRecord, segments, start_from
from ..sweepdir.models import RunSpec, RunState
from . import pbtpolicy
from .studies import run_succeeded


@dataclass
class Population:
    key: str
    index: int
    variant: Variant
    grid: dict
    lines: dict[tuple[int, int], SegmentRecord] = field(default_factory=dict)
    """(generation, member) -> its record."""
    done: bool = False

    @property
    def generation(self) -> int:
        return max((g for g, _ in self.lines), default=-1)

    def members(self, generation: int) -> list[SegmentRecord]:
        return [self.lines[generation, m] for m in sorted(m for g, m in self.lines if g == generation)]


def populations_of(plan: SweepPlan) -> dict[str, Population]:
    """A population per variant and grid point (the plan's run groups), none of its segments on record yet."""
    populations: dict[str, Population] = {}
    for run in plan.runs:
        if run.group not in populations:
            variant = next(c.variant for c in plan.checks if c.variant.name == run.variant)
            populations[run.group] = Population(run.group, len(populations), variant, run.grid)
    return populations


class PbtSource:
    """The scheduler's RunSource for `pbt:`; built from pbt.jsonl, so a new one resumes the populations."""

    def __init__(self, plan: SweepPlan, on_event: Callable[[Event], None] = lambda e: None):
        assert plan.spec.pbt is not None
        self.spec, self.pbt, self.sweep_dir, self.on_event = plan.spec, plan.spec.pbt, plan.sweep_dir, on_event
        self.generations = self.pbt.generations(plan.spec.total_timesteps_of(plan.spec.algos[0]))
        self.populations = populations_of(plan)
        for line in segments(self.sweep_dir).lines():
            population = self.populations.get(line.population)
            if population is not None:  # else a population the spec no longer has
                population.lines[line.generation, line.member] = line
        self.runs: dict[str, RunSpec] = {}
        self.parents: dict[str, str | None] = {}
        self.queue: list[str] = []
        self.outstanding: set[str] = set()
        self.skipped: list[str] = []
        for population in self.populations.values():
            generation = max(population.generation, 0)
            self.skipped += [line.run for (g, _), line in population.lines.items()
                             if g < generation and run_succeeded(self.sweep_dir, line.run)]
            if len(population.members(generation)) == self.pbt.population:
                self._queue(population, generation)
            elif generation == 0:
                self._record(population, 0, [pbtpolicy.Decision(m, values) for m, values in
                                             enumerate(pbtpolicy.initial(self.pbt, population.index))], [])
            else:  # a launcher died while it wrote the generation's lines: the same decisions, the rest of them
                self._decide(population, generation - 1)

    # -- RunSource ----------------------------------------------------------------------------------

    def next_run(self) -> RunSpec | None:
        if not self.queue:
            for population in self.populations.values():
                if not population.done and not any(line.run in self.outstanding for line in population.lines.values()):
                    self._advance(population)
        if not self.queue:
            return None
        run_id = self.queue.pop(0)
        run, parent = self.runs[run_id], self.parents[run_id]
        run_dir = self.sweep_dir.run(run_id)
        run = write_run_dir(run_dir, run, self._variant(run))
        if parent is not None:
            start_from(self.sweep_dir.run(parent), run_dir)
        return run

    def exhausted(self) -> bool:
        return not self.queue and all(p.done for p in self.populations.values())

    def ended(self, run_id: str, state: RunState) -> None:
        """A segment that ended for good counts; an interrupted one stays outstanding (the sweep is stopping)."""
        if state is not RunState.INTERRUPTED:
            self.outstanding.discard(run_id)

    def to_prune(self) -> Iterable[str]:
        return ()

    def queued_runs(self) -> list[RunSpec]:
        return [self.runs[r] for r in self.queue]

    def summary(self) -> str:
        gens = ", ".join(f"{p.key}: generation {p.generation + 1} of {self.generations}"
                         for p in self.populations.values())
        return f"pbt: {len(self.populations)} population(s) of {self.pbt.population} members ({gens})"

    # -- generations --------------------------------------------------------------------------------

    def _advance(self, population: Population) -> None:
        """Every segment of the population's generation has ended: decide and queue the next, or end it."""
        generation = population.generation
        members = population.members(generation)
        scores = [self._score(line.run) for line in members]
        for line in population.members(generation - 1):
            release(self.sweep_dir.run(line.run))
        if generation + 1 >= self.generations or all(s is None for s in scores):
            population.done = True
            best = pbtpolicy.ranked(scores)[0]
            self.on_event(Event(EventKind.TRIAL, None, f"pbt {population.key}: done after {generation + 1} "
                                f"generations; best member {best} ({_shown(scores[best])})"))
            return
        decisions = self._decide(population, generation)
        copies = [f"{d.member}<-{d.copied_from}" for d in decisions if d.copied_from is not None]
        self.on_event(Event(EventKind.TRIAL, None, f"pbt {population.key}: generation {generation + 1}; scores "
                            f"{', '.join(_shown(s) for s in scores)}; copies {', '.join(copies) or 'none'}"))

    def _decide(self, population: Population, generation: int) -> list[pbtpolicy.Decision]:
        """The generation after `generation`, decided from its scores, recorded and queued."""
        members = population.members(generation)
        scores = [self._score(line.run) for line in members]
        decisions = pbtpolicy.next_generation(self.pbt, population.index, generation + 1,
                                              [line.hyperparams for line in members], scores)
        self._record(population, generation + 1, decisions, scores)
        return decisions

    def _record(self, population: Population, generation: int, decisions: list[pbtpolicy.Decision],
                scores: list[float | None]) -> None:
        """The generation's lines (those not on record yet: a launcher may have died while writing them), then
        its segments queued."""
        before = population.members(generation - 1) if generation else []
        for decision in decisions:
            if (generation, decision.member) in population.lines:
                continue
            run = self._segment(population, generation, decision.member, decision.hyperparams)
            source = decision.member if decision.copied_from is None else decision.copied_from
            line = SegmentRecord(
                population=population.key, generation=generation, member=decision.member, run=run.run_id,
                hyperparams=decision.hyperparams, parent=before[source].run if before else None,
                copied_from=decision.copied_from, previous=before[decision.member].hyperparams if before else {},
                explored=decision.explored, score=scores[decision.member] if scores else None,
                donor_score=scores[decision.copied_from] if decision.copied_from is not None else None)
            segments(self.sweep_dir).append(line)  # on record before any segment of it starts
            population.lines[generation, decision.member] = line
        self._queue(population, generation)

    def _queue(self, population: Population, generation: int) -> None:
        for line in population.members(generation):
            self.runs[line.run] = self._segment(population, generation, line.member, line.hyperparams)
            self.parents[line.run] = line.parent
            if run_succeeded(self.sweep_dir, line.run):
                self.skipped.append(line.run)
            else:
                self.queue.append(line.run)
                self.outstanding.add(line.run)

    def _segment(self, population: Population, generation: int, member: int, values: dict[str, float]) -> RunSpec:
        return segment_run(self.spec, population, generation, member, values)

    def _variant(self, run: RunSpec) -> Variant | None:
        return next((p.variant for p in self.populations.values() if p.variant.name == run.variant), None)

    def _score(self, run_id: str) -> float | None:
        """The segment's final evaluation; None when it did not succeed."""
        if not run_succeeded(self.sweep_dir, run_id):
            return None
        result = self.sweep_dir.run(run_id).read_result()
        return result.eval_mean_return if result is not None else None


def segment_run(spec: SweepSpec, population: Population, generation: int, member: int,
                values: dict[str, float]) -> RunSpec:
    """The run of a member's segment: its values, trained to the end of `generation`, a checkpoint at its end."""
    assert spec.pbt is not None
    point = {**population.grid, **values, "total_timesteps": (generation + 1) * spec.pbt.interval}
    run = make_run(spec, population.variant, point, member)
    run_id = f"m{member:02d}g{generation:02d}_{run.run_id}"
    return run.model_copy(update={"run_id": run_id, "checkpoint_at_end": True})


@dataclass(frozen=True)
class SegmentsLeft:
    """What a `pbt:` sweep has still to train, read from pbt.jsonl without writing anything: for a dry run's
    cost and for the disk check."""

    generations: list[list[RunSpec]]
    """Each generation's segments not yet succeeded, in order. Generations not decided yet take the first
    generation's values (they change a segment's speed and size little)."""
    succeeded: list[RunSpec]
    """The recorded segments that succeeded: what they measured prices the rest."""
    interval: int
    """The env steps of a segment."""

    def trained(self) -> dict[str, int]:
        """Run id -> the env steps the checkpoint each segment resumes from holds (its generation's start)."""
        return {run.run_id: run.total_timesteps - self.interval for generation in self.generations
                for run in generation}


def segments_left(plan: SweepPlan) -> SegmentsLeft:
    pbt = plan.spec.pbt
    assert pbt is not None
    generations = pbt.generations(plan.spec.total_timesteps_of(plan.spec.algos[0]))
    recorded = {(line.population, line.generation, line.member): line
                for line in segments(plan.sweep_dir).lines()}
    left: list[list[RunSpec]] = [[] for _ in range(generations)]
    succeeded: list[RunSpec] = []
    for population in populations_of(plan).values():
        first = pbtpolicy.initial(pbt, population.index)
        for generation in range(generations):
            for member in range(pbt.population):
                line = recorded.get((population.key, generation, member))
                values = line.hyperparams if line is not None else first[member]
                run = segment_run(plan.spec, population, generation, member, values)
                if line is not None and run_succeeded(plan.sweep_dir, line.run):
                    succeeded.append(run)
                else:
                    left[generation].append(run)
    return SegmentsLeft([g for g in left if g], succeeded, pbt.interval)


def release(run_dir: RunDir) -> None:
    """A segment's checkpoints, once every segment that copied them has ended: a population keeps the checkpoints
    (replay buffers included) of two generations at most, not of every segment. checkpoint.json goes first, so no
    file it names is ever missing; model.zip stays."""
    run_dir.checkpoint_json.unlink(missing_ok=True)
    shutil.rmtree(run_dir.checkpoints, ignore_errors=True)


def _shown(score: float | None) -> str:
    return "failed" if score is None else f"{score:.4g}"


def dry_run_line(plan: SweepPlan) -> str:
    """What `sweep run` trains for a `pbt:` spec, for its dry run: nothing is written or drawn."""
    pbt = plan.spec.pbt
    assert pbt is not None
    total = plan.spec.total_timesteps_of(plan.spec.algos[0])
    populations = len({run.group for run in plan.runs})
    segments = populations * pbt.population * pbt.generations(total)
    return (f"pbt: {populations} population(s) x {pbt.population} members x {pbt.generations(total)} generations "
            f"of {pbt.interval:,} env steps = {segments} segments, {segments * pbt.interval:,} env steps; "
            f"{'a replayed schedule' if pbt.schedule else ', '.join(pbt.keys) + ' explored'}; nothing started")


def pbt_runs(plan: SweepPlan) -> RunsOpener:
    """`pbt:`: the recorded generation's segments that have not succeeded first, then each generation as the
    one before ends."""
    def open_runs(_recorder: StatusRecorder, on_event: Callable[[Event], None]) -> Runs:
        source = PbtSource(plan, on_event)
        resumed = source.queued_runs()
        return Runs([PlannedRun(run, Action.RESUME, "a PBT segment", Reason.ENDED) for run in resumed],
                    source=source, skipped=source.skipped, orphans=[run.run_id for run in resumed],
                    notes=[Event(EventKind.TRIAL, None, source.summary())], plan_record=False)
    return open_runs
