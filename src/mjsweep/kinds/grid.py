"""A grid: every variant x grid point x seed, fixed before it starts; a run to start continues a finished run of
the same content with fewer steps where it can (plan/extension.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import DryRun, SweepKind

if TYPE_CHECKING:
    from ..engine.sweep import RunsOpener, SweepPlan
    from ..plan.cost import BenchSpeed
    from ..plan.order import Order
    from ..plan.planned import PlannedRun
    from ..results.reach import FixedReach


class Grid(SweepKind):
    name = "grid"

    def open_runs(self, plan: SweepPlan, order: Order, backend: str) -> RunsOpener:
        from ..engine.sweep import planned_runs

        return planned_runs(plan, order)

    def planned(self, plan: SweepPlan) -> list[PlannedRun]:
        from ..engine.sweep import decide

        return decide(plan)

    def dry_run(self, plan: SweepPlan, order: Order, slots: int | None, backend: str,
                bench: BenchSpeed | None) -> DryRun:
        from ..api import planning
        from ..engine.sweep import in_start_order

        planned = in_start_order(plan, self.planned(plan), order)  # reads every run dir: once
        pricing, skipped = planning.price_planned(plan, planned, slots, backend, bench)
        return DryRun(pricing, planning.check_disk(plan, planning.to_run(planned), slots), planned=planned,
                      skipped=skipped, note=extending_note(sum(1 for p in planned if p.extends is not None)),
                      reevaluation=planning.reevaluation(plan, planned), job_array=True)

    def reach(self, groups: int) -> FixedReach | None:
        from ..results import stats
        from ..results.reach import fixed_reach

        return fixed_reach(len(self.spec.seed_list), groups, stats.CONFIDENCE)


def extending_note(count: int) -> str:
    """The cost line's note on runs that extend finished ones: their steps are counted from the checkpoint on."""
    if not count:
        return ""
    return "1 extends a finished run: only the steps past its checkpoint counted" if count == 1 else \
        f"{count} extend finished runs: only the steps past their checkpoints counted"
