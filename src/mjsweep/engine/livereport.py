"""report.html kept current while a sweep runs: the ui's `sweep report --format html` rebuilt, now and then,
in a child process of its own (docs/observability.md, "The live report.html").

The launcher only decides when, on the scheduler's thread: its events say that a run ended, and one tick
per polling round starts a build when one is due and notices one that ended (a waitpid, no blocking).
The build itself is the child's: at nice 19 and with one thread per pool so that the runs keep their
cores, in a session of its own so that a Ctrl-C at the terminal is the launcher's to handle, its output
away from the terminal so that it never garbles the live view, and killed by the kernel should the
launcher die.

When: only once something changed since the last build started (a run or a trial ended), one build at a
time, and never sooner than `every_s` after the last build ended, so that a build slower than the
interval (a sweep of thousands of runs) still leaves the machine alone in between. At the end one more
build, which finds the sweep's lock free and says that the sweep ended; after a Ctrl-C it gets
STOPPED_WAIT_S, and a second Ctrl-C ends it at once. No build outlives the launcher.

The final build is the one the sweep waits for, and most of a build is the interpreter's start and its
imports (typer, rich, pydantic, numpy; the figures are SVG written without matplotlib). So, with
`start_final`, that build is started early, once the first run ended, and waits, imports done, until
`finish` tells it to go: the sweep then waits only for the reading and the drawing, and the child exits
without the interpreter's teardown. It is not niced: once the runs ended nothing of the sweep's is left to
yield to, and its imports, once per sweep, take about half a CPU-second beside the runs (BENCHMARKS.md,
"The final report.html").
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from typing import Protocol

from ..childproc import Child
from .scheduler import Event, EventKind

NICENESS = 19
CHANGES = frozenset({EventKind.SUCCEEDED, EventKind.FAILED, EventKind.INTERRUPTED, EventKind.PRUNED,
                     EventKind.TRIAL})
"""Events after which the report has something new to show."""
FINAL_WAIT_S = 600.0
"""The most the final build may take once the runs ended; a bound on a hang, not a budget."""
STOPPED_WAIT_S = 5.0
"""The most the final build may add to a Ctrl-C."""


class Build(Protocol):
    """One build in flight."""

    def poll(self) -> int | None:
        """Its exit code once it ended, else None; never blocks."""

    def wait(self, timeout: float) -> int | None:
        """Its exit code, or None if it still runs after `timeout` seconds."""

    def error(self) -> str:
        """Why it failed, in one line."""

    def end(self) -> None:
        """Kill it if it still runs, reap it, release what it holds."""


class WaitingBuild(Build, Protocol):
    """A build started ahead of time that waits for `go` before it reads the sweep."""

    def go(self) -> bool:
        """Tell it to build now; False if it can no longer be told (it ended)."""


class ChildBuild:
    """`command` in a child process: nice 19, single-threaded pools, its own session, dying with us. waiting:
    the command waits for a line on its stdin (`go`) before it builds."""

    def __init__(self, command: list[str], waiting: bool = False, niceness: int = NICENESS):
        self._stderr = tempfile.TemporaryFile()
        try:
            self.proc = Child.start(command, stdin=subprocess.PIPE if waiting else subprocess.DEVNULL,
                                    stderr=self._stderr, niceness=niceness)
        except BaseException:
            self._stderr.close()
            raise

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def go(self) -> bool:
        stdin = self.proc.proc.stdin
        if stdin is None:
            return False
        try:
            stdin.write(b"go\n")
            stdin.close()
        except OSError:  # it ended (a broken pipe): the caller starts a build of its own
            return False
        return True

    def wait(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def error(self) -> str:
        self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, self._stderr.tell() - 4096))
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        return lines[-1].strip() if lines else f"exit {self.proc.returncode}"

    def end(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # its group: the session it leads
            self.proc.wait()
        stdin = self.proc.proc.stdin
        if stdin is not None and not stdin.closed:
            try:
                stdin.close()
            except OSError:
                pass
        self._stderr.close()


class LiveReport:
    """When to rebuild report.html while the scheduler runs; `event` and `tick` come from its thread."""

    def __init__(self, command: list[str], every_s: float | None, *, warn: Callable[[str], None], by_hand: str = "",
                 clock: Callable[[], float] = time.monotonic, start: Callable[[list[str]], Build] = ChildBuild,
                 start_final: Callable[[], WaitingBuild] | None = None):
        """every_s None: off, nothing is ever built (`sweep run --report-every off`). by_hand: the command a user
        types to build the report, for the warning when the final build is cut short. start_final: starts the
        final build ahead of time (it waits for `go`); None: the final build starts at the end."""
        if every_s is not None and every_s <= 0:
            raise ValueError(f"every_s {every_s}: a positive interval, or None for off")
        self.command, self.every_s, self.warn, self.clock, self.start = command, every_s, warn, clock, start
        self.start_final = start_final
        self._final: WaitingBuild | None = None
        """The final build, started ahead and waiting for `go`."""
        self.by_hand = by_hand or " ".join(command)
        self.builds = 0
        """Builds started, the final one included."""
        self._build: Build | None = None
        self._changed = False
        self._last_end = float("-inf")
        self._warned: set[str] = set()

    def event(self, event: Event) -> None:
        if event.kind in CHANGES and self.every_s is not None:
            self._changed = True

    def tick(self) -> None:
        """Notice a build that ended; start one if something changed and the interval has passed."""
        if self._build is not None:
            code = self._build.poll()
            if code is None:
                return
            self._ended(code)
        if self._changed and self._final is None and self.start_final is not None:
            self._prepare_final()  # a final build will be needed: its imports may start now
        if self._changed and self.every_s is not None and self.clock() - self._last_end >= self.every_s:
            self._start()

    def finish(self, stopped: bool) -> None:
        """The final build, once the sweep's lock is free: the report then says that the sweep ended. A build
        in flight read a sweep that still ran: it is ended first. `stopped` (a Ctrl-C): the user wants out,
        so the build gets STOPPED_WAIT_S, and a second Ctrl-C skips it."""
        if self._build is not None:
            self._build.end()
            self._build = None
        if not (self._changed or self.builds):
            self._end_final()
            return  # nothing ended and no live report was written: nothing to say
        build = self._go_final() or self._start()
        if build is None:
            return
        try:
            code = build.wait(STOPPED_WAIT_S if stopped else FINAL_WAIT_S)
        except KeyboardInterrupt:  # the Ctrl-C that skips it; the sweep's own exit code stands
            code = None
        if code is None:
            self.close()
            self._say(f"report.html: the final build was cut short, so it may still say that the sweep runs; "
                      f"{self.by_hand} rewrites it")
            return
        self._ended(code)

    def close(self) -> None:
        """End a build still in flight and the final one waiting (the launcher is leaving)."""
        if self._build is not None:
            self._build.end()
            self._build = None
        self._end_final()

    def _prepare_final(self) -> None:
        assert self.start_final is not None
        try:
            self._final = self.start_final()
        except OSError:  # cannot fork now: the final build starts at the end instead
            self.start_final = None

    def _go_final(self) -> Build | None:
        """The final build started ahead, told to go; None when there is none or it can no longer build."""
        final, self._final = self._final, None
        if final is None:
            return None
        if final.poll() is not None or not final.go():
            final.end()
            return None
        self._changed = False
        self.builds += 1
        self._build = final
        return final

    def _end_final(self) -> None:
        if self._final is not None:
            self._final.end()
            self._final = None

    def _start(self) -> Build | None:
        self._changed = False
        self.builds += 1
        try:
            self._build = self.start(self.command)
        except OSError as exc:  # cannot fork now: the runs matter more; the next change tries again
            self._last_end = self.clock()
            self._say(f"report.html not rewritten: cannot start its build: {exc}")
            return None
        return self._build

    def _ended(self, code: int) -> None:
        assert self._build is not None
        if code != 0:
            self._say(f"report.html not rewritten: {self._build.error()}")
        self._build.end()
        self._build = None
        self._last_end = self.clock()

    def _say(self, message: str) -> None:
        if message not in self._warned:  # a build that fails the same way each time says so once
            self._warned.add(message)
            self.warn(message)
