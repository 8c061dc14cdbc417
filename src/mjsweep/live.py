"""Progress of a running sweep: a live table on a terminal, plain lines everywhere else.

The scheduler calls `event()` from its polling loop; that only records the new state. Files are read
by a background refresher (the rich Live thread, or the summary thread), at most once a second and only
for runs that are active or just changed, so watching never slows the scheduler down.
"""

from __future__ import annotations

import dataclasses
import os
import re
import socket
import threading
import time
from typing import TYPE_CHECKING, Iterable

from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from . import runindex
from .render import PLAIN_ROWS, PlainLines, fixed, plain_table
from .rundir import SweepDir
from .runview import STALE, RunView, read_run
from .scheduler import EventKind
from .status import STATE_ORDER, Contention, SweepView, contention_warnings, load_warnings, machine_load, totals

if TYPE_CHECKING:
    from .scheduler import Event
    from .sweep import PlannedRun

REFRESH_S = 1.0
SUMMARY_EVERY_S = 30.0
"""Default period of the plain summary line; MJSWEEP_SUMMARY_EVERY (seconds) overrides it."""
RUN_COLUMNS = ("run", "state", "timesteps", "fps", "ETA", "return", "eval", "attempts")
MAX_LISTED = 20  # ended runs listed by name in the compact table; the rest are counted
BAR_WIDTH = 40
MIN_RUN_WIDTH = 20
EVENT_STATES = {EventKind.STARTED: "running", EventKind.SUCCEEDED: "succeeded", EventKind.FAILED: "failed",
                EventKind.RETRYING: "pending", EventKind.INTERRUPTED: "interrupted"}
LOUD_EVENTS = {EventKind.FAILED, EventKind.RETRYING, EventKind.WARNING, EventKind.WAITING_MEMORY,
               EventKind.STOPPING}
"""Events the live view also prints above its table; the others only change a row."""


class Tracker:
    """Every run's latest view; events set states, refresh() reads files for active and changed runs."""

    def __init__(self, sweep_dir: SweepDir, clock=time.monotonic):
        self.sweep_dir, self.clock = sweep_dir, clock
        self.lock = threading.Lock()
        self.views: dict[str, RunView] = {}
        self.states: dict[str, str] = {}
        self.dirty: set[str] = set()
        self.started = clock()
        self._last_read = float("-inf")
        self._host = socket.gethostname()
        self._load: tuple[float, int] | None = None

    def planned(self, planned: list[PlannedRun]) -> None:
        indexed = runindex.ended_entries(self.sweep_dir.index_jsonl)  # skipped runs' views, in one read
        with self.lock:
            for item in planned:
                run = item.run
                state = "succeeded" if item.action.value == "skip" else "pending"
                entry = indexed.get(run.run_id) if state == "succeeded" else None
                view = entry.to_view() if entry else None
                if view is None:
                    view = RunView(run.run_id, run.variant, run.grid, run.seed, state,
                                   total_timesteps=run.total_timesteps)
                    if state == "succeeded":
                        self.dirty.add(run.run_id)  # its fps and return are worth one read
                self.views[run.run_id] = view
                self.states[run.run_id] = state

    def event(self, event: Event) -> None:
        state = EVENT_STATES.get(event.kind)
        if state is None or event.run_id not in self.views:
            return
        with self.lock:
            self.states[event.run_id] = state
            self.views[event.run_id] = dataclasses.replace(self.views[event.run_id], state=state)
            self.dirty.add(event.run_id)

    def refresh(self, force: bool = False) -> list[RunView]:
        """Re-read active and changed runs if a second has passed (or forced); the views, in plan order."""
        with self.lock:
            due = force or self.clock() - self._last_read >= REFRESH_S
            if due:
                self._last_read = self.clock()
                wanted = self.dirty | {k for k, s in self.states.items() if s == "running"}
                self.dirty = set()
        if due:  # read outside the lock: the scheduler's event() never waits for the disk
            fresh = {run_id: read_run(self.sweep_dir.run(run_id), True, self._host) for run_id in wanted}
            load = machine_load()
            with self.lock:
                for run_id, view in fresh.items():
                    # Events are the truth about states (a run about to be retried reads 'failed').
                    self.views[run_id] = dataclasses.replace(view, state=self.states[run_id])
                self._load = load
        with self.lock:
            return list(self.views.values())

    def warnings(self, runs: list[RunView]) -> list[Contention]:
        running = sum(r.state == "running" for r in runs)
        return contention_warnings(runs) + (load_warnings(*self._load, running) if self._load else [])

    def elapsed(self) -> float:
        return self.clock() - self.started


class PlainProgress:
    """One line per state change and a summary line every `summary_every` seconds; quiet: nothing."""

    def __init__(self, out: Console, sweep_dir: SweepDir, quiet: bool = False,
                 summary_every: float = SUMMARY_EVERY_S):
        self.out, self.quiet, self.summary_every = out, quiet, summary_every
        self.tracker = Tracker(sweep_dir)
        self._said: set[tuple[str, str]] = set()
        self._print_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._summaries, name="mjsweep-summary", daemon=True)

    def planned(self, planned: list[PlannedRun]) -> None:
        self.tracker.planned(planned)
        if self.quiet:
            return
        todo = sum(1 for p in planned if p.action.value != "skip")
        self._print(f"{len(planned)} runs: {todo} to run, {len(planned) - todo} already succeeded")
        self._thread.start()

    def event(self, event: Event) -> None:
        self.tracker.event(event)
        if self.quiet:
            return
        subject = event.run_id or "sweep"
        self._print(f"[{self.tracker.elapsed():7.1f}s] {event.kind.value:<11} {subject}"
                    + (f": {event.message}" if event.message else ""))

    def close(self) -> None:
        """Stop the summary thread; print the warnings not yet printed."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if not self.quiet and self.tracker.views:
            self._new_warnings(self.tracker.refresh(force=True))

    def _summaries(self) -> None:
        while not self._stop.wait(self.summary_every):
            runs = self.tracker.refresh()
            self._print(f"[{self.tracker.elapsed():7.1f}s] summary     {summary_text(runs)}")
            self._new_warnings(runs)

    def _new_warnings(self, runs: list[RunView]) -> None:
        for warning in self.tracker.warnings(runs):
            if (warning.subject, warning.kind) not in self._said:
                self._said.add((warning.subject, warning.kind))
                self._print(f"warning: {warning}")

    def _print(self, line: str) -> None:
        with self._print_lock:
            self.out.print(line, soft_wrap=True, markup=False, highlight=False)  # messages may hold [brackets]


class LiveProgress:
    """A table of active runs and an overall progress bar, redrawn about once a second."""

    def __init__(self, out: Console, sweep_dir: SweepDir):
        self.out = out
        self.tracker = Tracker(sweep_dir)
        self.live = Live(console=out, get_renderable=self._render, refresh_per_second=1 / REFRESH_S,
                         transient=False)

    def planned(self, planned: list[PlannedRun]) -> None:
        self.tracker.planned(planned)
        self.live.start()

    def event(self, event: Event) -> None:
        self.tracker.event(event)
        if event.kind in LOUD_EVENTS:
            self.out.print(f"{event.kind.value}: {event.run_id or 'sweep'}"
                           + (f": {event.message}" if event.message else ""), soft_wrap=True, markup=False,
                           highlight=False)

    def close(self) -> None:
        if self.live.is_started:
            self.tracker.refresh(force=True)  # the final frame shows the final numbers
            self.live.refresh()
            self.live.stop()

    def _render(self):
        runs = self.tracker.refresh()
        return sweep_renderable(runs, self.tracker.warnings(runs), compact=True, width=self.out.width)


def make_progress(out: Console, sweep_dir: SweepDir, quiet: bool = False) -> PlainProgress | LiveProgress:
    """The live table on a terminal, plain lines elsewhere (or with --quiet, only the end summary)."""
    if out.is_terminal and not quiet:
        return LiveProgress(out, sweep_dir)
    return PlainProgress(out, sweep_dir, quiet=quiet, summary_every=_summary_every(out))


def _summary_every(out: Console) -> float:
    text = os.environ.get("MJSWEEP_SUMMARY_EVERY", "")
    try:
        return max(float(text), REFRESH_S / 2) if text else SUMMARY_EVERY_S
    except ValueError:
        out.print(f"warning: MJSWEEP_SUMMARY_EVERY={text!r} is not a number of seconds; "
                  f"using {SUMMARY_EVERY_S:.0f}", markup=False, highlight=False)
        return SUMMARY_EVERY_S


# -- rendering, shared with `sweep status` -----------------------------------------------------------


def status_renderable(view: SweepView):
    """`sweep status`: who runs the sweep, counts by state, every run, warnings."""
    who = (f"launcher running (pid {view.launcher_pid})" if view.launcher_pid is not None
           else "no launcher running")
    lines = [Text(f"sweep {view.path.name} ({view.path}): {who}")]
    stale = view.counts.get(STALE, 0)
    if stale:
        lines.append(Text(f"{stale} run(s) stale: marked running, but their launcher or process is gone; "
                          "`sweep run` on the same spec resumes them", style="yellow"))
    return Group(*lines, sweep_renderable(view.runs, view.warnings, compact=False))


def watch(out: Console, make, interval: float) -> None:
    """Redraw make() every `interval` seconds until Ctrl-C; off a terminal, print it each time."""
    if not out.is_terminal:
        while True:
            out.print(make())
            time.sleep(interval)
    with Live(console=out, get_renderable=make, refresh_per_second=1 / interval):
        while True:
            time.sleep(interval)


def sweep_renderable(runs: list[RunView], warnings: Iterable[Contention], compact: bool,
                     width: int | None = None):
    """Overall bar, the run table (compact: active and unsuccessful runs by name, others counted), warnings.

    With a terminal `width`, the bar and long run ids shrink so that each run stays on one line.
    """
    parts = [progress_bar(runs, width)]
    if not compact and len(runs) > PLAIN_ROWS:  # thousands of runs: plain rows, drawn in milliseconds
        parts.append(PlainLines(plain_table(RUN_COLUMNS, [run_cells(r, None) for r in runs])))
    elif (table := runs_table(runs, compact, width)).row_count:
        parts.append(table)
    if compact:
        parts.append(Text(ended_counts(runs)))
    parts += [Text(f"warning: {w}", style="yellow") for w in warnings]
    return Group(*parts)


def progress_bar(runs: list[RunView], width: int | None = None):
    t = totals(runs)
    pct = 100.0 * t.done / t.total if t.total else 0.0
    text = (f"{pct:5.1f}%  {steps(t.done)}/{steps(t.total)} steps  {t.fps:.0f} fps  "
            f"ETA {duration(t.eta_s)}  | {counts_text(runs)}")
    bar = BAR_WIDTH if width is None else min(BAR_WIDTH, width - len(text) - 1)
    if bar < 10:  # a narrow terminal: the bar on its own line, the numbers under it
        return Group(ProgressBar(total=max(t.total, 1), completed=t.done, width=min(BAR_WIDTH, width)),
                     Text(text))
    grid = Table.grid(padding=(0, 1))
    grid.add_row(ProgressBar(total=max(t.total, 1), completed=t.done, width=bar), text)
    return grid


def runs_table(runs: list[RunView], compact: bool, width: int | None = None) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in RUN_COLUMNS:
        table.add_column(col, no_wrap=col != "run", overflow="fold")
    shown = [r for r in runs if r.state not in ("pending", "succeeded")] if compact else runs
    if compact and len(shown) > MAX_LISTED:
        shown = [r for r in shown if r.active] + [r for r in shown if not r.active][-MAX_LISTED:]
    rows = [run_cells(r, None) for r in shown]
    if width is not None and rows:  # the run column gets what the other columns leave of the terminal
        others = sum(max(len(col), *(len(row[i]) for row in rows)) + 2 for i, col in enumerate(RUN_COLUMNS) if i)
        rows = [(fit(row[0], max(MIN_RUN_WIDTH, width - others)), *row[1:]) for row in rows]
    for row in rows:
        table.add_row(*row)
    return table


def run_cells(r: RunView, run_width: int | None) -> tuple[str, ...]:
    return (fit(r.run_id, run_width), r.state, f"{steps(r.done_timesteps)}/{steps(r.total_timesteps)}",
            fixed(r.fps, 0), duration(r.eta_s), fixed(r.ep_rew_mean), fixed(r.final_return), str(r.attempts))


def fit(text: str, width: int | None) -> str:
    """Shorten a run id to `width`: first drop its hash, then cut the middle, keeping more of the end (seed)."""
    if width is None or len(text) <= width:
        return text
    text = re.sub(r"_[0-9a-f]{8}$", "", text)  # the variant, grid point and seed tell runs apart on screen
    if len(text) <= width:
        return text
    tail = (width - 1) * 2 // 3
    return text[:width - 1 - tail] + "…" + text[-tail:]


def counts_text(runs: list[RunView]) -> str:
    counts = {state: sum(1 for r in runs if r.state == state) for state in STATE_ORDER}
    return ", ".join(f"{n} {state}" for state, n in counts.items() if n) or "no runs"


def ended_counts(runs: list[RunView]) -> str:
    ok = [r for r in runs if r.state == "succeeded"]
    pending = sum(1 for r in runs if r.state == "pending")
    returns = [r.final_return for r in ok if r.final_return is not None]
    best = f" (best eval return {max(returns):.2f})" if returns else ""
    return f"{len(ok)} succeeded{best}, {pending} pending"


def summary_text(runs: list[RunView]) -> str:
    t = totals(runs)
    pct = 100.0 * t.done / t.total if t.total else 0.0
    return (f"{counts_text(runs)} | {steps(t.done)}/{steps(t.total)} steps ({pct:.0f}%), "
            f"{t.fps:.0f} fps, ETA {duration(t.eta_s)}")


def steps(n: int) -> str:
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return str(n)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
