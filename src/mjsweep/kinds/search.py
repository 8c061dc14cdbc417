"""A search (`search:`): trials proposed as slots free up, each run on its seeds, the best confirmed on fresh
seeds (search/ is its code: search/source.py its source of runs, trials.jsonl and confirm.jsonl its
journals, search/ranking.py and search/confirm.py its report sections)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import DryRun, SweepKind, local_only

if TYPE_CHECKING:
    from ..api.planning import DiskCheck
    from ..engine.sweep import RunsOpener, SweepPlan
    from ..plan.cost import BenchSpeed
    from ..plan.order import Order
    from ..results.sections import Table, Text
    from ..spec.searchspace import SearchSpec
    from ..spec.sweepspec import SweepSpec


class SearchKind(SweepKind):
    name = "search"
    plans_runs = False
    says_workers = False

    def __init__(self, spec: SweepSpec, search: SearchSpec):
        super().__init__(spec)
        self.search = search

    def open_runs(self, plan: SweepPlan, order: Order, backend: str) -> RunsOpener:
        from ..search import execute as searchlib

        searchlib.check_method(plan)
        local_only("a search makes its runs as slots free up", backend)
        return searchlib.search_runs(plan)

    def dry_run(self, plan: SweepPlan, order: Order, slots: int | None, backend: str,
                bench: BenchSpeed | None) -> DryRun:
        """Its space, the first trials each study proposes, and the most its budget may cost."""
        from ..api import planning
        from ..search import execute as searchlib

        searchlib.check_method(plan)
        budget = searchlib.budget(plan)
        search = self.search
        studies = f"{budget.studies} {'study' if budget.studies == 1 else 'studies'} x {search.trials} trials"
        note = (f"{budget.trials_left} trials left of {studies}" if budget.trials_ended else studies) + \
            f" x {search.seeds_per_trial} seeds" + \
            (", each to the space's largest total_timesteps" if "total_timesteps" in search.space else "") + \
            ("; pruning may end trials sooner" if search.prune else "") + \
            (f"; then {budget.confirming} runs confirm the top {search.confirm.top} trials of each study on "
             f"{search.confirm.seeds} fresh seeds" if budget.confirming and search.confirm else "")
        pricing = planning.price(plan, budget.runs, slots, backend, bench, measured=budget.ended_runs)
        return DryRun(pricing, None, blocks=self._preview(plan), note=note, at_most=True)

    def _preview(self, plan: SweepPlan) -> list[Text | Table]:
        from ..naming import format_value
        from ..results.sections import Table, Text
        from ..search import execute as searchlib
        from ..search.ranking import space_lines

        out: list[Text | Table] = [Text(line) for line in space_lines(self.spec)]
        for item in searchlib.preview(plan):
            rows = tuple((str(number), " ".join(f"{k}={format_value(v)}" for k, v in params.items()))
                         for number, params in enumerate(item.proposals))
            out.append(Table(("trial", "parameters"), rows,
                             f"study {item.study.key}: the first trials the sampler proposes"))
        return [*out, Text("dry run: nothing started")]

    def disk_check(self, plan: SweepPlan, slots: int | None) -> DiskCheck | None:
        return None  # its runs are made as it goes: not weighed
