"""`sweep run` once the plan stands: the launcher (adopting the early template), the scheduler's options, the
progress display and the live report.html around engine.sweep.execute, and the notes said once the sweep's
lock is held."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from ..engine.livereport import LiveReport
    from ..engine.scheduler import Event, SweepOutcome
    from ..engine.sweep import RunsOpener, SweepPlan

EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class RunOptions:
    """`sweep run`'s options for how the runs execute."""

    backend: str = "local"
    workers: int | None = None
    quiet: bool = False
    gpus: str | None = None
    address: str | None = None
    start_with: str = "auto"
    template: Any = None
    """The template process early_template started, for the local launcher to adopt."""
    retries: int = 1
    timeout_s: float | None = None
    grace_s: float = 10.0
    report_every_s: float | None = 60.0
    pictures: Path | None = None


def execute(out: Console, plan: SweepPlan, opener: RunsOpener, options: RunOptions) -> SweepOutcome:
    """Run what `opener` hands out under the sweep's lock, the progress shown and report.html kept current."""
    from ..engine.sweep import execute
    from .run_view import keep_contact_sheet

    with _launched(out, plan, options) as (launcher, scheduling, progress, notes, report):
        try:
            outcome = execute(plan, opener, launcher, scheduling, on_event=_each(progress.event, report.event),
                              on_poll=report.tick, on_planned=_announce_then(notes, progress.planned))
        finally:
            if options.pictures:
                keep_contact_sheet(options.pictures, plan)
        report.finish(stopped=outcome.exit_code == EXIT_INTERRUPTED)
    return outcome


@contextmanager
def _launched(out: Console, plan: SweepPlan, options: RunOptions) -> Iterator[tuple[Any, Any, Any, list[str],
                                                                                      LiveReport]]:
    """The launcher, the scheduler's options, the progress display, the notes to say once the lock is held,
    and the live report.html. No report build outlives it."""
    from ..engine.livereport import ChildBuild, LiveReport
    from ..engine.scheduler import Event, EventKind, SchedulerOptions
    from ..launchers import build_launcher
    from . import live
    from .run_view import default_workers

    launcher = build_launcher(options.backend, plan.spec, gpus=options.gpus, address=options.address,
                              workers=options.workers, start=options.start_with, template=options.template)
    with launcher:
        default = default_workers(options.backend)
        # Memory is only this machine's to guard when the runs execute here.
        scheduling = SchedulerOptions(max_workers=launcher.slots(options.workers, default.workers),
                                      retries=options.retries, timeout_s=options.timeout_s, grace_s=options.grace_s,
                                      memory_guard=options.backend == "local")
        progress = live.make_progress(out, plan.sweep_dir, quiet=options.quiet)
        # report.html is `sweep report --format html` itself, run by the same Python in a child process.
        command = [sys.executable, "-m", "mjsweep.ui.cli", "report", str(plan.sweep_dir.path.absolute()),
                   "--format", "html"]
        # The final one, started ahead: it imports while runs train, and builds when the sweep ends.
        final = [sys.executable, "-m", "mjsweep.ui.report_child", *command[3:]]
        report = LiveReport(command, options.report_every_s,
                            by_hand=f"sweep report {plan.sweep_dir.path} --format html",
                            warn=lambda message: progress.event(Event(EventKind.WARNING, None, message)),
                            start_final=lambda: ChildBuild(final, waiting=True, niceness=0))
        said = options.workers or options.quiet or not default.source or plan.spec.search is not None
        notes = ([] if said else [f"workers: {default.workers} ({default.source})"]) + \
            _report_note(plan, report, options.quiet)
        try:
            yield launcher, scheduling, progress, notes, report
        finally:
            report.close()
            progress.close()


def _announce_then(notes: list[str], planned: Callable[[Any], None]) -> Callable[[Any], None]:
    """on_planned that first says on stderr where the worker count came from and where report.html is: only
    once the sweep's lock is held, so a refused second launcher prints its one error line and nothing else."""
    def on_planned(items: Any) -> None:
        for note in notes:
            print(note, file=sys.stderr, flush=True)
        planned(items)
    return on_planned


def _report_note(plan: SweepPlan, report: LiveReport, quiet: bool) -> list[str]:
    """Where the live report.html is, said once at the start."""
    if quiet or report.every_s is None:
        return []
    return [f"report: {plan.sweep_dir.report_html} (rewritten while runs end, at most every {report.every_s:g}s)"]


def _each(*handlers: Callable[[Event], None]) -> Callable[[Event], None]:
    """One on_event that hands each event to every handler, in order."""
    def on_event(event: Event) -> None:
        for handler in handlers:
            handler(event)
    return on_event
