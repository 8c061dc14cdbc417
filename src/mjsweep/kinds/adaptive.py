"""Adaptive seeds (`seeds: {min, max, until: separated}`): every group's `min` seeds, then one seed a round to
the groups not yet separated from the best (engine/adaptive.py is its source of runs, seeds.jsonl its
journal; results/rounds_section.py its report section)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import DryRun, SweepKind, local_only

if TYPE_CHECKING:
    from ..engine.sweep import RunsOpener, SweepPlan
    from ..plan.cost import BenchSpeed
    from ..plan.order import Order
    from ..results.reach import AdaptiveReach
    from ..results.sections import Table, Text
    from ..spec.sweepspec import AdaptiveSeeds, SweepSpec


class AdaptiveSeedsKind(SweepKind):
    name = "adaptive seeds"

    def __init__(self, spec: SweepSpec, policy: AdaptiveSeeds):
        super().__init__(spec)
        self.policy = policy

    def open_runs(self, plan: SweepPlan, order: Order, backend: str) -> RunsOpener:
        from ..engine.adaptive import adaptive_runs

        local_only("adaptive seeds add runs as results come in", backend)
        return adaptive_runs(plan, self.policy)

    def dry_run(self, plan: SweepPlan, order: Order, slots: int | None, backend: str,
                bench: BenchSpeed | None) -> DryRun:
        """The seeds granted so far (every group's `min` in a new sweep), how many runs it may come to, and what
        they cost at the seeds granted and at max."""
        from ..api import planning
        from ..engine.adaptive import AdaptiveSource, granted_plan
        from ..engine.sweep import in_start_order

        source = AdaptiveSource(plan, self.policy)
        granted = in_start_order(plan, granted_plan(plan, source), order)
        at_max = in_start_order(plan, self.planned(plan), order)
        pricing, skipped = planning.price_planned(plan, granted, slots, backend, bench, at_max=at_max)
        return DryRun(pricing, planning.check_disk(plan, planning.to_run(at_max), slots), planned=granted,
                      blocks=self._design(len(source.by_group), sum(source.seeds.values())), skipped=skipped)

    def _design(self, groups: int, granted: int) -> list[Text | Table]:
        """How many runs adaptive seeds may come to, how it decides, and at which look it can first separate."""
        from ..results.reach import adaptive_reach, first_look_words
        from ..results.sections import Text

        policy = self.policy
        out: list[Text | Table] = [Text(
            f"adaptive seeds: {groups} groups x {policy.min} to {policy.max} seeds: at least "
            f"{groups * policy.min} runs, at most {groups * policy.max} ({granted} granted so far); after "
            f"every group's first {policy.min}, one seed a round goes to each group not yet separated from the "
            f"best and to the best, by a group-sequential Brunner-Munzel test whose chance of any false "
            f"separation over every look and pair is at most {1 - policy.confidence:.0%}")]
        if (reach := adaptive_reach(policy.min, policy.max, groups, policy.confidence)) is not None:
            out.append(Text(f"adaptive seeds: {first_look_words(reach)}"))
        return out

    def reach(self, groups: int) -> AdaptiveReach | None:
        from ..results.reach import adaptive_reach

        return adaptive_reach(self.policy.min, self.policy.max, groups, self.policy.confidence)
