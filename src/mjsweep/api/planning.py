"""What `sweep run` decides before anything starts, as data the command line prints: what the runs to start
will cost (a dry run's pricing, from this folder's measured speeds or
`sweep bench`'s), the disk they need at their peak against the free space (each kind's own in kinds/)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..plan.planned import Action, PlannedRun

if TYPE_CHECKING:
    from ..engine.diskspace import Room
    from ..engine.sweep import SweepPlan
    from ..plan.cost import BenchSpeed, Cost
    from ..plan.disk import DiskEstimate, Verdict
    from ..sweepdir.models import RunSpec


def to_run(planned: Sequence[PlannedRun]) -> list[RunSpec]:
    """The runs a sweep would train, started or resumed (the others have succeeded; a run to evaluate again
    trains nothing and writes only its result.json)."""
    return [p.run for p in planned if p.action not in (Action.SKIP, Action.EVALUATE)]


@dataclass(frozen=True)
class Reevaluation:
    """Finished runs whose evaluation settings changed: evaluated again from their final models, no training."""

    runs: int
    episodes: int
    """Evaluation episodes in all."""
    seconds: float | None
    """From each run's earlier final evaluation, per episode; None where one did not say."""


def reevaluation(plan: SweepPlan, planned: Sequence[PlannedRun]) -> Reevaluation | None:
    """What evaluating the `evaluate` runs again costs; None when there are none."""
    from ..sweepdir.files import read_or_none
    from ..sweepdir.models import evaluated_as, physics_evaluated

    todo = [p.run for p in planned if p.action is Action.EVALUATE]
    if not todo:
        return None
    seconds: float | None = 0.0
    episodes = 0
    for run in todo:
        run_dir = plan.sweep_dir.run(run.run_id)
        result = read_or_none(run_dir.read_result)
        # the nominal evaluation again where its settings changed, and one episode per held-out draw (eval.physics)
        count = run.eval_episodes if result is None or not evaluated_as(run, result) else 0
        if run.physics_eval and not physics_evaluated(run, read_or_none(run_dir.read_physics_eval)):
            count += run.physics_eval["draws"]
        episodes += count
        if seconds is None or result is None or result.eval_s is None or not result.eval_episodes:
            seconds = None
            continue
        seconds += result.eval_s / result.eval_episodes * count
    return Reevaluation(len(todo), episodes, seconds)


@dataclass(frozen=True)
class Pricing:
    """A dry run's cost: `cost` of the runs to start, `at_max` of the most runs they may come to (adaptive
    seeds), where that wall time holds (None: unknown without --workers on a cluster)."""

    cost: Cost
    at_max: Cost | None
    where: str | None


def price(plan: SweepPlan, runs: Sequence[RunSpec], slots: int | None, backend: str, bench: BenchSpeed | None, *,
          measured: Sequence[RunSpec] = (), done_steps: dict[str, int] | None = None,
          at_max: Sequence[RunSpec] | None = None) -> Pricing:
    """The env steps and expected wall time of `runs` (in start order) on `slots` at once (None: a cluster
    that sizes itself), from the speeds the `measured` runs of this sweep folder that succeeded had, else from
    `bench`, what `sweep bench` kept for this machine."""
    from ..plan.cost import Measurements, estimate
    from ..plan.speeds import earlier_runs

    measurements = Measurements(earlier_runs(plan.sweep_dir, measured), bench)
    top = estimate(at_max, slots or 1, measurements, done_steps) if at_max is not None else None
    return Pricing(estimate(runs, slots or 1, measurements, done_steps), top, _where(slots, backend))


def price_population(plan: SweepPlan, slots: int | None, backend: str, bench: BenchSpeed | None) -> Pricing:
    """A `pbt:` sweep's dry run: the segments it has left, a generation at a time (the next one starts when
    every segment of this one has ended), each segment priced by the env steps past its parent's checkpoint,
    from the segments that succeeded or `bench`."""
    from ..plan.cost import Measurements, estimate, total
    from ..plan.speeds import earlier_runs
    from ..search.pbt import segments_left

    left = segments_left(plan)
    measurements = Measurements(earlier_runs(plan.sweep_dir, left.succeeded), bench)
    trained = left.trained()
    generations = [estimate(g, slots or 1, measurements, trained) for g in left.generations]
    return Pricing(total(generations, slots or 1, measurements), None, _where(slots, backend))


def _where(slots: int | None, backend: str) -> str | None:
    """Where a priced wall time holds: None when a cluster sizes itself and no --workers says how many."""
    return None if slots is None else "on this machine" if backend == "local" else \
        f"on the {backend} cluster at the speeds measured here"


def price_planned(plan: SweepPlan, planned: list[PlannedRun], slots: int | None, backend: str,
                  bench: BenchSpeed | None, at_max: list[PlannedRun] | None = None) -> tuple[Pricing, int]:
    """A grid's dry run: the cost of the runs to start or resume, priced by those that succeeded, and how many
    are skipped. at_max: adaptive seeds' every possible run, `planned` being the seeds granted so far."""
    done = [p.run for p in planned if p.action in (Action.SKIP, Action.EVALUATE)]  # their speeds price the rest
    skipped = sum(1 for p in planned if p.action is Action.SKIP)
    # a finished run that one extends measured the speed of its variant too (its spec but for the total)
    sources = [p.run.model_copy(update={"run_id": p.extends.source}) for p in planned if p.extends is not None]
    trained = resumed_steps(plan, at_max or planned)
    top = to_run(at_max) if at_max is not None else None
    return price(plan, to_run(planned), slots, backend, bench, measured=done + sources, done_steps=trained,
                 at_max=top), skipped


def resumed_steps(plan: SweepPlan, planned: list[PlannedRun]) -> dict[str, int]:
    """Run id -> the env steps the checkpoint of each run to resume (or of the finished run it extends) already
    holds."""
    from ..sweepdir.files import read_or_none

    trained: dict[str, int] = {}
    for p in planned:
        if p.extends is not None:
            trained[p.run.run_id] = p.extends.timesteps
        if p.action is not Action.RESUME:
            continue
        checkpoint = read_or_none(plan.sweep_dir.run(p.run.run_id).read_checkpoint)
        if checkpoint is not None:
            trained[p.run.run_id] = checkpoint.timesteps
    return trained


@dataclass(frozen=True)
class DiskCheck:
    """The peak disk use of the runs (plan/disk.py) against the free space where the sweep writes."""

    needed: DiskEstimate
    free: Room
    verdict: Verdict


def check_disk(plan: SweepPlan, runs: Sequence[RunSpec], slots: int | None) -> DiskCheck:
    """`runs` at their peak, `slots` at once (None: all of them, a cluster that sizes itself), against the free
    space. A kind that weighs its runs otherwise (PBT's segments) estimates them itself and calls judge_disk."""
    from ..plan.disk import estimate

    probes = {c.variant.name: c.probe for c in plan.checks}
    return judge_disk(plan, estimate(runs, probes, plan.spec.checkpoints_kept, slots or len(runs)))


def judge_disk(plan: SweepPlan, needed: DiskEstimate) -> DiskCheck:
    """The runs' estimate, with the model snapshot's bytes not stored yet, against the free space."""
    from ..engine.diskspace import room
    from ..plan.disk import judge
    from ..robots.snapshot import missing_bytes

    needed = dataclasses.replace(needed, snapshot=missing_bytes(plan.sweep_dir.snapshots,
                                                                [c.variant for c in plan.checks]))
    free = room(plan.sweep_dir.path)
    return DiskCheck(needed, free, judge(needed.bytes, free.free))


def disk_needs(estimate: DiskEstimate) -> str:
    """The estimate of plan/disk.py in words: 'about 26 GB at peak (20 SAC runs, 4 at once, ...)'."""
    from ..plan.disk import human_bytes as size

    peak = estimate.peak
    plural = "" if estimate.runs == 1 else "s"
    runs = f"{estimate.runs} {estimate.algos[0]} run{plural}" if len(estimate.algos) == 1 else \
        f"{estimate.runs} run{plural} ({', '.join(estimate.algos)})"
    buffers = (f"{size(peak.buffers)} replay buffers at {size(estimate.largest_buffer)} each, "
               if estimate.buffer_runs else "")
    held = estimate.held or f"{estimate.kept_checkpoints} checkpoints kept each"
    snapshot = f"{size(estimate.snapshot)} snapshot of the robots' files, " if estimate.snapshot else ""
    return (f"about {size(estimate.bytes)} at peak ({runs}, {estimate.at_once} at once, "
            f"{held}: {buffers}{size(peak.models)} models and exact states, {snapshot}{size(peak.logs)} logs and "
            "run files)")


def disk_shortage(plan: SweepPlan, check: DiskCheck) -> str:
    """The refusal's one line: what is needed, what is free, and what to change."""
    from ..plan.disk import human_bytes

    remedies = ["free space", "a --runs-dir on a larger disk",
                *(["lower buffer_size"] if check.needed.buffer_runs else []), "fewer --workers"]
    return (f"{plan.sweep_dir.path}: needs {disk_needs(check.needed)}, {human_bytes(check.free.free)} free on "
            f"{check.free.device}: {', '.join(remedies[:-1])} or {remedies[-1]}")


def disk_tight(plan: SweepPlan, check: DiskCheck) -> str:
    """The warning's text when the runs need most of the free space."""
    from ..plan.disk import WARN_SHARE, human_bytes

    return (f"{plan.sweep_dir.path}: needs {disk_needs(check.needed)}, over {100 * WARN_SHARE:.0f}% of the "
            f"{human_bytes(check.free.free)} free on {check.free.device}")
