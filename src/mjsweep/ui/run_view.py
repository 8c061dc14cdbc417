"""How `sweep run` and `sweep validate` print what they decided before anything starts (api/planning.py): a
dry run's plan and cost (grid, adaptive seeds, search), the disk check's line, warning or refusal, and the
variants' pictures."""

from __future__ import annotations

import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..api import planning
from ..engine.profile import at_once, bench_speed
from ..errors import InputError
from . import console_tables as tables

if TYPE_CHECKING:
    from rich.console import Console

    from ..engine.sweep import SweepPlan
    from ..plan.order import Order
    from ..sweepdir.models import RunSpec


def dry_run(out: Console, plan: SweepPlan, start: Order, workers: int | None, backend: str) -> None:
    """A grid's (or adaptive seeds') plan, its cost and disk, and for SLURM the job array it would submit; a
    population's (pbt) one line."""
    from ..engine.sweep import decide, in_start_order

    tables.variant_table(out, plan)  # what deep validation found, model by model
    if plan.spec.pbt is not None:
        from ..search.pbt import dry_run_line

        out.print(dry_run_line(plan))
        print_cost(out, planning.price_population(plan, at_once(workers, backend), backend, bench_speed()),
                   note="PBT segments, a generation at a time")
        check_disk(plan, [], workers, backend, out=out, refuse=False)
        return
    if plan.spec.adaptive_seeds is not None:
        _adaptive_dry_run(out, plan, start, workers, backend)
        return
    planned = in_start_order(plan, decide(plan), start)  # reads every run dir: once
    tables.plan_table(out, plan, planned)
    pricing, skipped = planning.price_planned(plan, planned, at_once(workers, backend), backend, bench_speed())
    print_cost(out, pricing, skipped=skipped, note=extending_note(sum(1 for p in planned if p.extends is not None)))
    if (again := planning.reevaluation(plan, planned)) is not None:
        out.print(tables.reevaluation_line(again), markup=False, highlight=False)
    check_disk(plan, planning.to_run(planned), workers, backend, out=out, refuse=False)
    if backend == "slurm":
        tables.sbatch_preview(out, plan, planned, workers)


def extending_note(count: int) -> str:
    """The cost line's note on runs that extend finished ones: their steps are counted from the checkpoint on."""
    if not count:
        return ""
    return "1 extends a finished run: only the steps past its checkpoint counted" if count == 1 else \
        f"{count} extend finished runs: only the steps past their checkpoints counted"


def _adaptive_dry_run(out: Console, plan: SweepPlan, start: Order, workers: int | None, backend: str) -> None:
    """The seeds granted so far (every group's `min` in a new sweep), how many runs it may come to, and what
    they cost at the seeds granted and at max."""
    from ..engine.adaptive import AdaptiveSource, granted_plan
    from ..engine.sweep import decide, in_start_order

    policy = plan.spec.adaptive_seeds
    assert policy is not None
    source = AdaptiveSource(plan, policy)
    granted = in_start_order(plan, granted_plan(plan, source), start)
    tables.plan_table(out, plan, granted)
    tables.adaptive_seeds_plan(out, policy, len(source.by_group), sum(source.seeds.values()))
    at_max = in_start_order(plan, decide(plan), start)
    pricing, skipped = planning.price_planned(plan, granted, at_once(workers, backend), backend, bench_speed(),
                                              at_max=at_max)
    print_cost(out, pricing, skipped=skipped)
    check_disk(plan, planning.to_run(at_max), workers, backend, out=out, refuse=False)


def search_dry_run(out: Console, plan: SweepPlan, workers: int | None, backend: str) -> None:
    """A search's space, the first trials each study proposes, and the most its budget may cost."""
    from ..search import execute as searchlib
    from . import search_console as show

    tables.variant_table(out, plan)
    show.preview(out, plan.spec, searchlib.preview(plan))
    budget = searchlib.budget(plan)
    search = plan.spec.search
    assert search is not None
    studies = f"{budget.studies} {'study' if budget.studies == 1 else 'studies'} x {search.trials} trials"
    note = (f"{budget.trials_left} trials left of {studies}" if budget.trials_ended else studies) + \
        f" x {search.seeds_per_trial} seeds" + \
        (", each to the space's largest total_timesteps" if "total_timesteps" in search.space else "") + \
        ("; pruning may end trials sooner" if search.prune else "") + \
        (f"; then {budget.confirming} runs confirm the top {search.confirm.top} trials of each study on "
         f"{search.confirm.seeds} fresh seeds" if budget.confirming and search.confirm else "")
    pricing = planning.price(plan, budget.runs, at_once(workers, backend), backend, bench_speed(),
                             measured=budget.ended_runs)
    print_cost(out, pricing, note=note, at_most=True)


def print_cost(out: Console, pricing: planning.Pricing, *, skipped: int = 0, note: str = "",
               at_most: bool = False) -> None:
    """The dry run's cost lines; at_most: a ceiling (a search)."""
    for line in tables.cost_lines(pricing.cost, skipped=skipped, note=note, at_max=pricing.at_max, at_most=at_most,
                                  where=pricing.where, here=socket.gethostname()):
        out.print(line, markup=False, highlight=False, soft_wrap=True)


def check_disk(plan: SweepPlan, runs: Sequence[RunSpec], workers: int | None, backend: str, *,
               out: Console | None = None, refuse: bool = True) -> None:
    """Refused (an InputError) when the runs need more disk than is free, or only said when not `refuse` (a
    dry run); a warning when they need most of it. With `out`, the estimate's line too."""
    from ..plan.disk import Verdict

    check = planning.check_disk(plan, runs, at_once(workers, backend))
    if out is not None:
        out.print(tables.disk_line(check.needed, check.free), markup=False, highlight=False, soft_wrap=True)
    if check.verdict is Verdict.SHORT:
        shortage = planning.disk_shortage(plan, check)
        if refuse:
            raise InputError(shortage)
        print(f"warning: sweep run would refuse: {shortage}", file=sys.stderr, flush=True)
    elif check.verdict is Verdict.TIGHT:
        print(f"warning: {planning.disk_tight(plan, check)}", file=sys.stderr, flush=True)


def render_pictures(plan: SweepPlan, folder: Path) -> None:
    """Pictures of every variant, or exit 2 with one line saying why not (nothing has started yet)."""
    from ..media.gl import RenderFailed, RenderUnavailable
    from ..media.variant_pictures import render_variant_pictures

    try:
        drawn = render_variant_pictures(plan, folder)
    except (RenderUnavailable, RenderFailed) as exc:
        raise InputError(f"--pictures {folder}: {exc}") from None
    print(f"pictures: {len(plan.checks)} variants and {drawn.contact_sheet.name} in {folder} "
          f"(drawn with {drawn.backend})", file=sys.stderr, flush=True)


def keep_contact_sheet(folder: Path, plan: SweepPlan) -> None:
    """A copy of the contact sheet in the sweep folder, where `sweep report --format html` finds it."""
    from ..sweepdir.files import CONTACT_SHEET_PNG, write_bytes_atomic

    source, sweep_dir = folder / CONTACT_SHEET_PNG, plan.sweep_dir
    if source.is_file() and sweep_dir.path.is_dir():
        sweep_dir.pictures.mkdir(exist_ok=True)
        write_bytes_atomic(sweep_dir.contact_sheet, source.read_bytes())

