"""Population-based training (`pbt:`): each generation's segments, one run per member, each resuming from the
final checkpoint of its own or a copied member's previous segment (search/pbt.py its source of runs,
pbt.jsonl its journal; search/pbtreport.py its report sections)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import DryRun, SweepKind, local_only

if TYPE_CHECKING:
    from ..api.planning import DiskCheck
    from ..engine.sweep import RunsOpener, SweepPlan
    from ..plan.cost import BenchSpeed
    from ..plan.order import Order
    from ..spec.pbtspec import PbtSpec
    from ..spec.sweepspec import SweepSpec


class Population(SweepKind):
    name = "pbt"
    plans_runs = False

    def __init__(self, spec: SweepSpec, pbt: PbtSpec):
        super().__init__(spec)
        self.pbt = pbt

    def open_runs(self, plan: SweepPlan, order: Order, backend: str) -> RunsOpener:
        from ..search.pbt import pbt_runs

        local_only("pbt starts each generation as results come in", backend)
        return pbt_runs(plan)

    def dry_run(self, plan: SweepPlan, order: Order, slots: int | None, backend: str,
                bench: BenchSpeed | None) -> DryRun:
        from ..api import planning
        from ..results.sections import Text
        from ..search.pbt import dry_run_line

        return DryRun(planning.price_population(plan, slots, backend, bench), self.disk_check(plan, slots),
                      blocks=[Text(dry_run_line(plan))], note="PBT segments, a generation at a time")

    def disk_check(self, plan: SweepPlan, slots: int | None) -> DiskCheck:
        """Weighed by the segments it has left to train, a generation at a time, with the final checkpoints a
        generation resumes from."""
        from ..api.planning import judge_disk
        from ..plan.disk import population_estimate
        from ..search.pbt import segments_left

        generations = segments_left(plan).generations
        widest = max((len(g) for g in generations), default=1)
        probes = {c.variant.name: c.probe for c in plan.checks}
        return judge_disk(plan, population_estimate(generations, probes, plan.spec.checkpoints_kept,
                                                    slots or widest))
