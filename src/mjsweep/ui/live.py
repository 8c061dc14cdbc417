"""Progress of a running sweep: a live table on a terminal, plain lines everywhere else.

The scheduler calls `event()` from its polling loop; that only records the new state. Files are read
by a background refresher (the rich Live thread, or the summary thread), at most once a second and only
for runs that are active or just changed, so watching never slows the scheduler down.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import TYPE_CHECKING

from rich.console import Console
from rich.live import Live

from ..engine.machine import MachineLoad, PresentLoad
from ..engine.scheduler import EventKind
from ..naming import counted
from ..plan.planned import Action
from ..results.runview import RunView, read_run, view_of
from ..sweepdir import index as runindex
from ..sweepdir.files import SweepDir
from ..sweepdir.models import DisplayState
from .runs_table import summary_text, sweep_renderable
from .status import Contention, contention_warnings, load_warnings

if TYPE_CHECKING:
    from ..engine.scheduler import Event
    from ..plan.planned import PlannedRun

REFRESH_S = 1.0
SUMMARY_EVERY_S = 30.0
"""Default period of the plain summary line; MJSWEEP_SUMMARY_EVERY (seconds) overrides it."""
EVENT_STATES = {EventKind.STARTED: DisplayState.RUNNING, EventKind.SUCCEEDED: DisplayState.SUCCEEDED,
                EventKind.FAILED: DisplayState.FAILED, EventKind.RETRYING: DisplayState.PENDING,
                EventKind.INTERRUPTED: DisplayState.INTERRUPTED, EventKind.PRUNED: DisplayState.PRUNED}
LOUD_EVENTS = {EventKind.FAILED, EventKind.RETRYING, EventKind.WARNING, EventKind.WAITING_MEMORY,
               EventKind.STOPPING, EventKind.TRIAL, EventKind.SEEDS, EventKind.EXTENDS}
"""Events the live view also prints above its table; the others only change a row."""


class Tracker:
    """Every run's latest view; events set states, refresh() reads files for active and changed runs."""

    def __init__(self, sweep_dir: SweepDir, clock=time.monotonic, present: PresentLoad | None = None):
        self.sweep_dir, self.clock = sweep_dir, clock
        self.present = present or PresentLoad(roots=(os.getpid(),))
        """The machine's load now; the sweep's processes are this launcher's tree."""
        self.lock = threading.Lock()
        self.views: dict[str, RunView] = {}
        self.states: dict[str, DisplayState] = {}
        self.dirty: set[str] = set()
        self.started = clock()
        self._last_read = float("-inf")
        self._host = socket.gethostname()
        self._machine: MachineLoad | None = None

    def planned(self, planned: list[PlannedRun]) -> None:
        indexed = runindex.ended_entries(self.sweep_dir.index_jsonl)  # skipped runs' views, in one read
        with self.lock:
            for item in planned:
                run = item.run
                state = DisplayState.SUCCEEDED if item.action is Action.SKIP else DisplayState.PENDING
                entry = indexed.get(run.run_id) if state == DisplayState.SUCCEEDED else None
                view = view_of(entry) if entry else None
                if view is None:
                    view = RunView(run_id=run.run_id, variant=run.variant, grid=run.grid, seed=run.seed, state=state,
                                   total_timesteps=run.total_timesteps)
                    if state == DisplayState.SUCCEEDED:
                        self.dirty.add(run.run_id)  # its fps and return are worth one read
                self.views[run.run_id] = view
                self.states[run.run_id] = state

    def event(self, event: Event) -> None:
        state = EVENT_STATES.get(event.kind)
        if state is None or event.run_id is None:
            return
        if event.run_id not in self.views:
            if event.kind is not EventKind.STARTED:
                return
            with self.lock:  # a run made on demand (a search) joins when it starts; refresh() reads its files
                self.views[event.run_id] = RunView(run_id=event.run_id, variant="", grid={}, seed=0, state=state)
        with self.lock:
            self.states[event.run_id] = state
            self.views[event.run_id] = self.views[event.run_id].model_copy(update={"state": state})
            self.dirty.add(event.run_id)

    def refresh(self, force: bool = False) -> list[RunView]:
        """Re-read active and changed runs if a second has passed (or forced); the views, in plan order."""
        with self.lock:
            due = force or self.clock() - self._last_read >= REFRESH_S
            if due:
                self._last_read = self.clock()
                running = {k for k, s in self.states.items() if s == DisplayState.RUNNING}
                wanted = self.dirty | running
                self.dirty = set()
        if due:  # read outside the lock: the scheduler's event() never waits for the disk
            fresh = {run_id: read_run(self.sweep_dir.run(run_id), True, self._host) for run_id in wanted}
            machine = self.present.sample(len(running))
            with self.lock:
                for run_id, view in fresh.items():
                    # Events are the truth about states (a run about to be retried reads 'failed').
                    self.views[run_id] = view.model_copy(update={"state": self.states[run_id]})
                self._machine = machine
        with self.lock:
            return list(self.views.values())

    def warnings(self, runs: list[RunView]) -> list[Contention]:
        running, machine = sum(r.state == DisplayState.RUNNING for r in runs), self._machine
        if machine is None:  # not judged yet: a high load waits for what other processes take now
            return contention_warnings(runs)
        return contention_warnings(runs) + load_warnings(machine.load1, machine.cores, running, machine.competition)

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
        if planned:  # a search starts with none planned: it makes its runs as slots free up
            self._print(f"{counted(len(planned), 'run')}: {todo} to run, {len(planned) - todo} already succeeded")
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
