"""The step-saving benchmark's figures, computed from its sweep folders alone (result.json, evaluations.csv,
trials.jsonl, pbt.jsonl): nothing the harness measured while it ran.

CPU seconds to a return: a method's runs are laid one after another on a CPU-seconds axis (a search's and a
grid's in the order they started, PBT's a generation at a time, its members side by side), and a run's
evaluation at step t of its T is charged t / T of the run's CPU seconds. The first evaluation (periodic or
final) at or above the return is where the method got there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from mjsweep import load
from mjsweep.search.confirm import kendall_tau
from mjsweep.search.journal import replay
from mjsweep.sweepdir.csvfiles import read_evaluations
from mjsweep.sweepdir.files import RunDir, SweepDir, read_lines, read_or_none
from mjsweep.sweepdir.lineage import SegmentRecord
from mjsweep.sweepdir.models import RunResult

from .savingspecs import DESIGN_COLD, DESIGN_WARM, EDIT_LABEL, GRID, PBT, RANDOM, cold_variant

REACH_SHARE = 0.9
"""Part (b): the share of the cold run's final return a trial must reach."""


@dataclass(frozen=True)
class Trained:
    """One run as the figures see it: its cost and its returns along the way."""

    run_id: str
    cpu_s: float
    """Its own CPU seconds (a PBT segment's without the ones its copied checkpoint carried)."""
    start: int
    """The env steps it started at (a PBT segment: its generation's first)."""
    end: int
    curve: tuple[tuple[int, float], ...]
    """(env steps, mean return) of its periodic evaluations after `start`, then its final evaluation."""

    @property
    def final(self) -> float:
        return self.curve[-1][1]

    def first_reach(self, target: float) -> int | None:
        """The env steps of its first evaluation at or above target; None: none."""
        return next((steps for steps, value in self.curve if value >= target), None)

    def share_to(self, target: float) -> float | None:
        """The share of its own steps it took to first reach target."""
        steps = self.first_reach(target)
        return None if steps is None else (steps - self.start) / max(self.end - self.start, 1)


@dataclass(frozen=True)
class Method:
    """Part (a): one way of spending the budget."""

    name: str
    stages: tuple[tuple[Trained, ...], ...]
    """Runs that train one after another; the runs of a stage train side by side (PBT's generations)."""

    @property
    def runs(self) -> list[Trained]:
        return [run for stage in self.stages for run in stage]

    @property
    def cpu_s(self) -> float:
        return math.fsum(run.cpu_s for run in self.runs)

    @property
    def env_steps(self) -> int:
        return sum(run.end - run.start for run in self.runs)

    @property
    def best_final(self) -> float | None:
        """The best final evaluation among the runs that trained all the way (PBT: its last generation)."""
        furthest = max((run.end for run in self.runs), default=0)
        return max((run.final for run in self.runs if run.end == furthest), default=None)

    def cpu_to_reach(self, target: float) -> float | None:
        """CPU seconds until the first evaluation at or above target; None: never."""
        spent = 0.0
        for stage in self.stages:
            shares = [share for run in stage if (share := run.share_to(target)) is not None]
            stage_cpu = math.fsum(run.cpu_s for run in stage)
            if shares:
                return spent + min(shares) * stage_cpu
            spent += stage_cpu
        return None


@dataclass(frozen=True)
class Design:
    """Part (b): one design of the search, trained warm there and cold in the cold sweep."""

    trial: int
    value: float
    warm_from: int | None
    warm: Trained
    cold: Trained

    @property
    def target(self) -> float:
        """REACH_SHARE of the cold final return, on the side of worse (a negative return too)."""
        final = self.cold.final
        return final - (1 - REACH_SHARE) * abs(final)

    @property
    def warm_steps(self) -> int | None:
        """Its warm run's own env steps to the target (0: it started there); None: never reached."""
        steps = self.warm.first_reach(self.target)
        return None if steps is None else steps - self.warm.start

    @property
    def cold_steps(self) -> int:
        steps = self.cold.first_reach(self.target)
        return self.cold.end if steps is None else steps  # its final evaluation is the target's 1/0.9


@dataclass(frozen=True)
class StepSavingFigures:
    methods: tuple[Method, ...]
    """PBT, random search, grid: in that order."""
    designs: tuple[Design, ...]
    """The warm trials of the design search, with their cold counterparts."""
    cold_trials: int
    """Trials the design search kept cold (its cold share, and a first trial with nothing to start from)."""

    def method(self, name: str) -> Method:
        return next(m for m in self.methods if m.name == name)

    @property
    def target(self) -> float | None:
        """Part (a)'s return: the random search's best final evaluation."""
        return self.method(RANDOM).best_final

    @property
    def tau(self) -> float | None:
        """Kendall's tau between the designs' warm and cold final returns; None under two designs."""
        if len(self.designs) < 2:
            return None
        return kendall_tau([d.warm.final for d in self.designs], [d.cold.final for d in self.designs])


def read_figures(out: Path) -> StepSavingFigures:
    """Every figure, from the bench's sweep folders under out."""
    methods = (Method(PBT, _pbt_stages(SweepDir(out / PBT))),
               Method(RANDOM, _one_after_another(SweepDir(out / RANDOM))),
               Method(GRID, _one_after_another(SweepDir(out / GRID))))
    designs, cold = _designs(SweepDir(out / DESIGN_WARM), SweepDir(out / DESIGN_COLD))
    return StepSavingFigures(methods, designs, cold)


def design_values(folder: SweepDir) -> dict[int, float]:
    """Every trial of the design search and its edit value: the designs the cold sweep trains."""
    return {t.number: float(t.params[f"edits.{EDIT_LABEL}"]) for t in replay(folder.trials_jsonl)}


def _result(run: RunDir) -> RunResult | None:
    """Its result.json, if it finished (its final evaluation, env steps and CPU seconds are there)."""
    result = read_or_none(run.read_result)
    if result is None or not result.complete or result.cpu_s is None or result.timesteps is None:
        return None
    return result


def _trained(run: RunDir, start: int = 0, carried: float = 0.0) -> Trained | None:
    """The run as the figures see it, if it finished; carried: CPU seconds its copied checkpoint brought along."""
    result = _result(run)
    if result is None:
        return None
    assert result.cpu_s is not None and result.timesteps is not None and result.eval_mean_return is not None
    # a PBT segment's copied rows end at its start; a warm run's own first evaluation is at 0
    periodic = [(e.timesteps, e.mean_return) for e in read_evaluations(run.evaluations_csv)
                if e.timesteps > start or e.timesteps == start == 0]
    curve = (*periodic, (result.timesteps, result.eval_mean_return))
    return Trained(run.run_id, result.cpu_s - carried, start, result.timesteps, curve)


def _one_after_another(folder: SweepDir) -> tuple[tuple[Trained, ...], ...]:
    """The last plan's runs (as mjsweep.load reads them), each a stage of its own, in the order they started."""
    started = [(run.started_at or "", run.run_id, trained) for run in load(folder.path).runs
               if (trained := _trained(RunDir(run.path))) is not None]
    return tuple((trained,) for _, _, trained in sorted(started, key=lambda s: (s[0], s[1])))


def _pbt_stages(folder: SweepDir) -> tuple[tuple[Trained, ...], ...]:
    """PBT's generations. A segment resumes from its parent's last checkpoint, whose timing (CPU seconds
    included) it carries on from: its own are its total less the parent's, with the parent's final evaluation
    (after that checkpoint; on one thread its wall seconds are at least its CPU seconds) given back."""
    latest: dict[tuple[str, int, int], SegmentRecord] = {}
    for record in read_lines(folder.pbt_jsonl, SegmentRecord):
        latest[(record.population, record.generation, record.member)] = record
    generations: dict[int, list[Trained]] = {}
    for (_, generation, _), record in sorted(latest.items()):
        carried, start = 0.0, 0
        parent = _result(folder.run(record.parent)) if record.parent else None
        if parent is not None:  # else it started from 0: its parent failed before any checkpoint
            carried, start = (parent.cpu_s or 0.0) - (parent.eval_s or 0.0), parent.timesteps or 0
        if (trained := _trained(folder.run(record.run), start, carried)) is not None:
            generations.setdefault(generation, []).append(trained)
    return tuple(tuple(generations[g]) for g in sorted(generations))


def _designs(warm: SweepDir, cold: SweepDir) -> tuple[tuple[Design, ...], int]:
    """The warm trials beside the cold sweep's runs of their designs, and how many trials started cold."""
    cold_runs = {run.variant: trained for run in load(cold.path).runs
                 if (trained := _trained(RunDir(run.path))) is not None}
    designs, cold_trials = [], 0
    for trial in replay(warm.trials_jsonl):
        if trial.start != "warm":
            cold_trials += 1
            continue
        own = _trained(warm.run(trial.runs[0])) if trial.runs else None
        partner = cold_runs.get(cold_variant(trial.number))
        if own is not None and partner is not None:
            designs.append(Design(trial.number, float(trial.params[f"edits.{EDIT_LABEL}"]), trial.warm_from,
                                  own, partner))
    return tuple(designs), cold_trials
