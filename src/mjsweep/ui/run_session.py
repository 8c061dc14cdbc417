"""`sweep run` once the plan stands: what the screen shows around the front door (api/running.py `launch`):
the progress display, the notes said once the sweep's lock is held, and the pictures drawn before it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from ..api.options import RunOptions
    from ..engine.scheduler import SweepOutcome
    from ..engine.sweep import SweepPlan
    from ..launchers.template_client import TemplateProcess


def execute(out: Console, plan: SweepPlan, options: RunOptions, *, quiet: bool = False, pictures: Path | None = None,
            template: TemplateProcess | None = None) -> SweepOutcome:
    """Run the sweep through the front door, the progress shown; `pictures`: every variant drawn into that
    folder once the refusals have passed, and its contact sheet kept in the sweep folder."""
    from ..api.running import Watch, launch
    from ..engine.profile import workers_for
    from ..kinds import kind_of
    from . import live
    from .run_view import keep_contact_sheet, render_pictures

    default = workers_for(options.backend.value)
    said = options.workers or quiet or not default.source or not kind_of(plan.spec).says_workers
    notes = ([] if said else [f"workers: {default.workers} ({default.source})"]) + \
        _report_note(plan, options.report_every_s, quiet)
    progress = live.make_progress(out, plan.sweep_dir, quiet=quiet)
    watch = Watch(on_event=progress.event, warn=lambda line: print(f"warning: {line}", file=sys.stderr, flush=True),
                  on_planned=_announce_then(notes, progress.planned),
                  before_start=(lambda: render_pictures(plan, pictures)) if pictures else lambda: None,
                  after_runs=(lambda: keep_contact_sheet(pictures, plan)) if pictures else lambda: None,
                  template=template)
    try:
        return launch(plan, options, watch)
    finally:
        progress.close()


def _announce_then(notes: list[str], planned: Callable[[Any], None]) -> Callable[[Any], None]:
    """on_planned that first says on stderr where the worker count came from and where report.html is: only
    once the sweep's lock is held, so a refused second launcher prints its one error line and nothing else."""
    def on_planned(items: Any) -> None:
        for note in notes:
            print(note, file=sys.stderr, flush=True)
        planned(items)
    return on_planned


def _report_note(plan: SweepPlan, every_s: float | None, quiet: bool) -> list[str]:
    """Where the live report.html is, said once at the start."""
    if quiet or every_s is None:
        return []
    return [f"report: {plan.sweep_dir.report_html} (rewritten while runs end, at most every {every_s:g}s)"]
