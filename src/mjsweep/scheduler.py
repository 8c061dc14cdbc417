"""Fills free slots with runs, watches them, retries what deserves it, stops everything on request.

Works with any Launcher (local processes, Ray, SLURM, or a fake in tests). It is the only writer of
status.json while a sweep runs; the worker writes everything else in the run dir.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable

import psutil

from .launchers.base import RETURNCODE_LOST, Launcher, RunHandle
from .plan import RunSpec
from .rundir import CorruptFileError, FailureClass, RunState, RunStatus, SweepDir, now_iso
from .runindex import ENDED_STATES, IndexEntry, IndexWriter

WORKER_INTERRUPTED = 130  # the worker's exit code after a requested stop and a saved checkpoint
RETRYABLE = {FailureClass.KILLED, FailureClass.TIMEOUT, FailureClass.LOST}
DEFAULT_RUN_MEMORY_MB = 600.0  # before any run of the sweep has finished and been measured


@dataclass(frozen=True)
class SchedulerOptions:
    max_workers: int
    """CPU slots: runs at once, each run taking RunSpec.cpus of them."""
    retries: int = 1
    """Extra attempts for a run killed by a signal, lost, or timed out (never for an error)."""
    timeout_s: float | None = None
    grace_s: float = 10.0
    """Seconds between SIGINT and SIGKILL when stopping runs."""
    poll_s: float = 0.5
    memory_guard: bool = True


class EventKind(str, Enum):
    STARTED = "started"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    RETRYING = "retrying"
    INTERRUPTED = "interrupted"
    WAITING_MEMORY = "waiting-memory"
    STOPPING = "stopping"
    WARNING = "warning"


@dataclass(frozen=True)
class Event:
    kind: EventKind
    run_id: str | None
    message: str = ""


@dataclass
class _Active:
    run: RunSpec
    handle: RunHandle
    status: RunStatus
    started: float
    attempt: int
    timed_out_at: float | None = None
    interrupted_at: float | None = None


@dataclass
class SweepOutcome:
    succeeded: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        return 1 if self.failed else 0


class Scheduler:
    def __init__(self, launcher: Launcher, sweep_dir: SweepDir, options: SchedulerOptions,
                 on_event: Callable[[Event], None] = lambda e: None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 available_mb: Callable[[], float] = lambda: psutil.virtual_memory().available / 2**20):
        self.launcher, self.sweep_dir, self.options = launcher, sweep_dir, options
        self.on_event, self.clock, self.sleep = on_event, clock, sleep
        self.available_mb = available_mb
        self._stop_requests = 0
        self._active: dict[str, _Active] = {}
        self._measured_rss_mb: list[float] = []
        self._waiting_for_memory = False
        self._index = IndexWriter(sweep_dir.index_jsonl)

    # -- public -------------------------------------------------------------------------------------

    def run(self, runs: list[RunSpec]) -> SweepOutcome:
        """Run each given run to an end state. Ctrl-C/SIGTERM stop gracefully; a second one at once."""
        outcome = SweepOutcome()
        pending = deque((run, 0) for run in runs)
        self._learn_memory_per_run()
        with self._signals_handled():
            try:
                while (pending or self._active) and not self._stop_requests:
                    self._poll(pending, outcome)
                    self._fill_slots(pending, outcome)
                    self._enforce_timeouts()
                    if pending or self._active:
                        self.sleep(self.options.poll_s)
            finally:
                self._stop_all(outcome)
        outcome.interrupted.extend(run.run_id for run, _ in pending if self._stop_requests)
        return outcome

    def request_stop(self) -> None:
        """First call: stop gracefully (checkpoint, grace period). Second: kill at once."""
        self._stop_requests += 1
        if self._stop_requests > 1:
            for active in list(self._active.values()):
                active.handle.kill()

    # -- slots --------------------------------------------------------------------------------------

    def _fill_slots(self, pending: deque, outcome: SweepOutcome) -> None:
        while pending and not self._stop_requests:
            run, attempt = pending[0]
            used = sum(a.run.cpus for a in self._active.values())
            # A run wider than the whole cap still runs, alone.
            if self._active and used + run.cpus > self.options.max_workers:
                return
            if not self._memory_allows_another() or not self.launcher.can_start(run):
                return
            pending.popleft()
            self._start(run, attempt, outcome)

    def _start(self, run: RunSpec, attempt: int, outcome: SweepOutcome) -> None:
        run_dir = self.sweep_dir.run(run.run_id)
        previous = _read_status_or_none(run_dir)
        attempts = (previous.attempts if previous else 0) + 1
        self._index.restarting(run.run_id)
        try:
            handle = self.launcher.start(run, run_dir)
        except OSError as exc:  # cannot fork, cannot open log.txt (disk full): this run fails, not the sweep
            self._record(run_dir, RunStatus(state=RunState.FAILED, attempts=attempts, failure=FailureClass.ERROR,
                                            error_tail=f"could not start the worker: {exc}", ended_at=now_iso()))
            outcome.failed.append(run.run_id)
            self.on_event(Event(EventKind.FAILED, run.run_id, f"could not start the worker: {exc}"))
            return
        status = RunStatus(state=RunState.RUNNING, attempts=attempts, pid=handle.pid, host=handle.host,
                           started_at=now_iso())
        self._record(run_dir, status)
        self._active[run.run_id] = _Active(run, handle, status, self.clock(), attempt)
        self.on_event(Event(EventKind.STARTED, run.run_id, f"attempt {status.attempts}"))

    def _memory_allows_another(self) -> bool:
        if not self.options.memory_guard or not self._active:
            return True  # with nothing running, waiting would never end
        available_mb = self.available_mb()
        needed_mb = max(self._measured_rss_mb, default=DEFAULT_RUN_MEMORY_MB) * 1.25
        if available_mb >= needed_mb:
            self._waiting_for_memory = False
            return True
        if not self._waiting_for_memory:  # say it once per wait, not every poll
            self.on_event(Event(EventKind.WAITING_MEMORY, None,
                                f"{available_mb:.0f} MiB available, a run needs ~{needed_mb:.0f}"))
        self._waiting_for_memory = True
        return False

    def _learn_memory_per_run(self) -> None:
        """Peak memory of runs that already ended, from earlier invocations too."""
        for run_dir in self.sweep_dir.run_dirs():
            status = _read_status_or_none(run_dir)
            if status and status.peak_rss_mb:
                self._measured_rss_mb.append(status.peak_rss_mb)

    # -- watching -----------------------------------------------------------------------------------

    def _poll(self, pending: deque, outcome: SweepOutcome) -> None:
        for run_id, active in list(self._active.items()):
            code = active.handle.poll()
            self._note_host(active)
            if code is None:
                continue
            del self._active[run_id]
            self._finish(active, code, pending, outcome)

    def _note_host(self, active: _Active) -> None:
        """A cluster run learns its node after it started; status.json shows it once known."""
        if active.handle.host != active.status.host:
            active.status = active.status.model_copy(update={"host": active.handle.host})
            self._record(self.sweep_dir.run(active.run.run_id), active.status)

    def _enforce_timeouts(self) -> None:
        timeout, now = self.options.timeout_s, self.clock()
        for active in self._active.values():
            if timeout and active.timed_out_at is None and now - active.started > timeout:
                active.timed_out_at = now
                active.handle.interrupt()
            elif active.timed_out_at is not None and now - active.timed_out_at > self.options.grace_s:
                active.handle.kill()

    def _finish(self, active: _Active, code: int, pending: deque, outcome: SweepOutcome) -> None:
        run_dir = self.sweep_dir.run(active.run.run_id)
        failure = self._classify(active, code, run_dir)
        peak = active.handle.peak_rss_mb()
        if peak:
            self._measured_rss_mb.append(peak)
        ended = dict(returncode=code, ended_at=now_iso(), peak_rss_mb=peak, pid=active.status.pid)
        if failure is None:
            self._record(run_dir, active.status.model_copy(update={"state": RunState.SUCCEEDED, **ended}))
            outcome.succeeded.append(active.run.run_id)
            self.on_event(Event(EventKind.SUCCEEDED, active.run.run_id))
            return
        tail = run_dir.error_tail()
        state = RunState.INTERRUPTED if failure is FailureClass.INTERRUPTED else RunState.FAILED
        status = active.status.model_copy(update={"state": state, "failure": failure, "error_tail": tail,
                                                  **ended})
        self._record(run_dir, status)
        if failure in RETRYABLE and active.attempt < self.options.retries and not self._stop_requests:
            pending.append((active.run, active.attempt + 1))
            self.on_event(Event(EventKind.RETRYING, active.run.run_id, f"{failure.value} (exit {code})"))
        elif state is RunState.INTERRUPTED:
            outcome.interrupted.append(active.run.run_id)
            self.on_event(Event(EventKind.INTERRUPTED, active.run.run_id))
        else:
            outcome.failed.append(active.run.run_id)
            last = tail.strip().splitlines()[-1] if tail.strip() else f"exit {code}"
            self.on_event(Event(EventKind.FAILED, active.run.run_id, f"{failure.value}: {last}"))

    def _record(self, run_dir, status: RunStatus) -> None:
        """Write status.json (and, for an ended run, its index line); a full or failing disk is reported,
        and the sweep goes on."""
        try:
            run_dir.write_status(status)
        except OSError as exc:
            self.on_event(Event(EventKind.WARNING, run_dir.run_id, f"cannot write status.json: {exc}"))
            return
        if status.state.value in ENDED_STATES:
            self._index.ended(IndexEntry.of_run(run_dir))

    def _classify(self, active: _Active, code: int, run_dir) -> FailureClass | None:
        if self._stop_requests and active.interrupted_at is not None:
            return None if code == 0 and run_dir.has_complete_result() else FailureClass.INTERRUPTED
        if active.timed_out_at is not None:
            return None if code == 0 and run_dir.has_complete_result() else FailureClass.TIMEOUT
        if code == 0:
            return None if run_dir.has_complete_result() else FailureClass.ERROR
        if code == RETURNCODE_LOST:
            return FailureClass.LOST
        if code < 0 or code == WORKER_INTERRUPTED:
            return FailureClass.KILLED  # a signal nobody in this sweep asked for
        return FailureClass.ERROR

    # -- stopping -----------------------------------------------------------------------------------

    def _stop_all(self, outcome: SweepOutcome) -> None:
        """Interrupt every active run, wait out the grace period, kill what is left, record it."""
        if not self._active:
            return
        self.on_event(Event(EventKind.STOPPING, None, f"stopping {len(self._active)} runs"))
        self._stop_requests = max(self._stop_requests, 1)
        now = self.clock()
        for active in self._active.values():
            active.interrupted_at = now
            active.handle.interrupt()
        deadline = now + self.options.grace_s
        while self._active and self.clock() < deadline and self._stop_requests < 2:
            self._poll(deque(), outcome)
            if self._active:
                self.sleep(min(0.1, self.options.poll_s))
        for active in self._active.values():
            active.handle.kill()
        while self._active:
            self._poll(deque(), outcome)
            if self._active:
                self.sleep(0.05)

    def _signals_handled(self):
        return _SignalScope(self) if threading.current_thread() is threading.main_thread() else _NoScope()


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _SignalScope:
    """SIGINT, SIGTERM and SIGHUP (terminal closed) request a stop while the scheduler runs; the old
    handlers come back after."""

    def __init__(self, scheduler: Scheduler):
        self.scheduler = scheduler

    def __enter__(self):
        handler = lambda signum, frame: self.scheduler.request_stop()  # noqa: E731
        self.previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}

    def __exit__(self, *exc):
        for sig, previous in self.previous.items():
            signal.signal(sig, previous)


class _NoScope:
    def __enter__(self):
        pass

    def __exit__(self, *exc):
        pass


def _read_status_or_none(run_dir) -> RunStatus | None:
    try:
        return run_dir.read_status()
    except CorruptFileError:
        return None
