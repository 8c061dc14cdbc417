"""How `sweep run` and `sweep validate` print what they decided before anything starts: a dry run's plan and
cost (each kind's, kinds/), the disk check's line, warning or refusal, and the variants' pictures."""

from __future__ import annotations

import socket
import sys
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


def dry_run(out: Console, plan: SweepPlan, start: Order, workers: int | None, backend: str) -> None:
    """The kind's dry run (kinds/): its plan table, what it says of itself, its cost and disk, and for SLURM
    the job array a grid would submit."""
    from ..kinds import kind_of
    from . import report_sections

    shown = kind_of(plan.spec).dry_run(plan, start, at_once(workers, backend), backend, bench_speed())
    tables.variant_table(out, plan)  # what deep validation found, model by model
    if shown.planned:
        tables.plan_table(out, plan, shown.planned)
    report_sections.show_blocks(out, shown.blocks)
    print_cost(out, shown.pricing, skipped=shown.skipped, note=shown.note, at_most=shown.at_most)
    if shown.reevaluation is not None:
        out.print(tables.reevaluation_line(shown.reevaluation), markup=False, highlight=False)
    if shown.disk is not None:
        show_disk(plan, shown.disk, out=out, refuse=False)
    if backend == "slurm" and shown.job_array:
        tables.sbatch_preview(out, plan, shown.planned, workers)


def print_cost(out: Console, pricing: planning.Pricing, *, skipped: int = 0, note: str = "",
               at_most: bool = False) -> None:
    """The dry run's cost lines; at_most: a ceiling (a search)."""
    for line in tables.cost_lines(pricing.cost, skipped=skipped, note=note, at_max=pricing.at_max, at_most=at_most,
                                  where=pricing.where, here=socket.gethostname()):
        out.print(line, markup=False, highlight=False, soft_wrap=True)


def show_disk(plan: SweepPlan, check: planning.DiskCheck, *, out: Console | None = None, refuse: bool = True) -> None:
    """Refused (an InputError) when the runs need more disk than is free, or only said when not `refuse` (a
    dry run); a warning when they need most of it. With `out`, the estimate's line too."""
    from ..plan.disk import Verdict

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

