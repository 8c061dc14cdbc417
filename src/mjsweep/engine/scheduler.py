"""Fills free slots with runs, watches them, retries what deserves it, stops everything on request.

Works with any Launcher (local processes, Ray, SLURM, or a fake in tests). Through its StatusRecorder it
is the only writer of status.json while a sweep runs; the worker writes everything else in the run dir.
"""

from __future__ import annotations

import select
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

import psutil

from ..errors import LaunchError, said
from ..launchers.base import Launcher, RunExit, RunHandle
from ..launchers.oomkill import cgroup_available_mb, memory_cgroup
from ..sweepdir.files import RunDir, SweepDir, now_iso
from ..sweepdir.models import FailureClass, RunSpec, RunState, RunStatus
from .causes import cause_of
from .failures import classify, oom_advice, should_retry
from .memory import MeasuredPeaks, memory_admits, run_memory_mb
from .status_recorder import StatusRecorder


@dataclass(frozen=True)
class SchedulerOptions:
    max_workers: int
    """CPU slots: runs at once, each run taking RunSpec.cpus of them."""
    retries: int = 1
    """Extra attempts for a run killed by a signal, lost, or timed out (never for an error)."""
    timeout_s: float | None = None
    grace_s: float = 10.0
    """Seconds between SIGINT and SIGKILL when stopping runs."""
    poll_s: float = 0.1
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
    PRUNED = "pruned"
    TRIAL = "trial"  # a search's trial ended (run_id None; the message says which and how)
    SEEDS = "seeds"  # adaptive seeds decided a round (run_id None; the message says what and why)
    EXTENDS = "extends"  # a run continues a finished run with fewer steps (the message says which, from where)


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
    pruned_at: float | None = None


class RunSource(Protocol):
    """Runs made on demand (a search), asked for whenever a slot is free; a grid is a fixed list instead."""

    def next_run(self) -> RunSpec | None:
        """The next run to start; None when none is due now (more may come once running ones end)."""

    def exhausted(self) -> bool:
        """No run will come any more."""

    def ended(self, run_id: str, state: RunState) -> None:
        """A run reached its end state in this invocation (after any retries)."""

    def to_prune(self) -> Iterable[str]:
        """Runs to stop now as pruned: interrupted like Ctrl-C does, recorded as pruned."""


@dataclass
class SweepOutcome:
    succeeded: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)
    """Runs a stop ended while they ran."""
    pending: list[str] = field(default_factory=list)
    """Runs a stop left waiting for a slot: never started (or not started again for a retry)."""
    pruned: list[str] = field(default_factory=list)
    cut_short: bool = False
    """A stop came while a source (a search, PBT, adaptive seeds) still had runs to make: the sweep is not done
    even when every run it had started ended well."""

    @property
    def stopped(self) -> bool:
        return bool(self.interrupted) or bool(self.pending) or self.cut_short

    @property
    def exit_code(self) -> int:
        if self.stopped:
            return 130
        return 1 if self.failed else 0


class Scheduler:
    """The loop: fill free slots, poll, act on each end, stop on request. Decisions are failures.py's and
    memory.py's; status.json and index.jsonl are written by the StatusRecorder alone."""

    def __init__(self, launcher: Launcher, sweep_dir: SweepDir, options: SchedulerOptions, *,
                 on_event: Callable[[Event], None] = lambda e: None, on_poll: Callable[[], None] = lambda: None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 available_mb: Callable[[], float] | None = None,
                 completed: Callable[[RunDir], bool] = RunDir.has_complete_result):
        """completed: whether a run that exited 0 left what it was run for (a training: its result.json;
        cross-evaluation: every pair's result, crosseval/evaljobs.py)."""
        self.launcher, self.sweep_dir, self.options = launcher, sweep_dir, options
        self.completed = completed
        self.on_event, self.on_poll, self.clock, self.sleep = on_event, on_poll, clock, sleep
        """on_poll: called once per polling round, on this thread, for work that must go on while runs run
        and must be quick (the live report's tick: livereport.py)."""
        self.available_mb = available_mb or _available_here()
        self.recorder = StatusRecorder(sweep_dir, warn=self._warn)
        self._stop_requests = 0
        self._active: dict[str, _Active] = {}
        self._measured = MeasuredPeaks()
        """Peak memory of the ended runs, by algorithm."""
        self._waiting_for_memory = False
        self._source: RunSource | None = None
        self._memory_cap: int | None = None
        """Runs at once since one was killed for the memory it shared with them: fewer than then."""

    # -- public -------------------------------------------------------------------------------------

    def run(self, runs: list[RunSpec], source: RunSource | None = None) -> SweepOutcome:
        """Run each given run, then each run `source` makes, to an end state. Ctrl-C/SIGTERM stop
        gracefully; a second one at once."""
        outcome = SweepOutcome()
        pending = deque((run, 0) for run in runs)
        self._source = source
        self._measured = self.recorder.measured_peaks()  # from earlier invocations too
        with self._signals_handled():
            try:
                while (pending or self._active or self._more_to_come()) and not self._stop_requests:
                    self._poll(pending, outcome)
                    self._prune(pending)
                    self._fill_slots(pending, outcome)
                    self._enforce_timeouts()
                    self.on_poll()
                    if pending or self._active or self._more_to_come():
                        self._wait()
            finally:
                self._stop_all(outcome)
        outcome.pending.extend(run.run_id for run, _ in pending if self._stop_requests)
        outcome.cut_short = bool(self._stop_requests) and self._more_to_come()
        return outcome

    def request_stop(self) -> None:
        """First call: stop gracefully (checkpoint, grace period). Second: kill at once."""
        self._stop_requests += 1
        if self._stop_requests > 1:
            for active in list(self._active.values()):
                active.handle.kill()

    # -- slots --------------------------------------------------------------------------------------

    def _wait(self) -> None:
        """One poll interval, cut short when the launcher has news of a run's end (a forked run's end
        then starts the next run at once rather than at the next poll)."""
        fd = self.launcher.news_fd()
        if fd is None:
            self.sleep(self.options.poll_s)
        else:
            select.select([fd], [], [], self.options.poll_s)

    def _more_to_come(self) -> bool:
        return self._source is not None and not self._source.exhausted()

    def _next_from_source(self, pending: deque) -> bool:
        """Asks the source only when a one-slot run could start now, so that it decides as late as it can."""
        used = sum(a.run.cpus for a in self._active.values())
        if self._source is None or (self._active and used + 1 > self.options.max_workers):
            return False
        run = self._source.next_run()
        if run is not None:
            pending.append((run, 0))
        return run is not None

    def _fill_slots(self, pending: deque, outcome: SweepOutcome) -> None:
        # The stop is checked first: a source asked after a stop would make (and a search record) a run that
        # never starts.
        while not self._stop_requests and (pending or self._next_from_source(pending)):
            run, attempt = pending[0]
            used = sum(a.run.cpus for a in self._active.values())
            # A run wider than the whole cap still runs, alone.
            if self._active and used + run.cpus > self.options.max_workers:
                return
            if self._memory_cap is not None and len(self._active) >= self._memory_cap:
                return
            if not self._memory_allows_another(run.algo) or not self.launcher.can_start(run):
                return
            pending.popleft()
            self._start(run, attempt, outcome)

    def _start(self, run: RunSpec, attempt: int, outcome: SweepOutcome) -> None:
        run_dir = self.sweep_dir.run(run.run_id)
        previous = self.recorder.previous(run_dir)
        attempts = (previous.attempts if previous else 0) + 1
        self.recorder.restarting(run.run_id)
        try:
            handle = self.launcher.start(run, run_dir)
        except (OSError, LaunchError) as exc:  # cannot fork, disk full, sbatch refused: this run fails alone
            why = f"could not start the worker: {said(exc)}"
            self.recorder.record(run_dir, RunStatus(state=RunState.FAILED, attempts=attempts,
                                                    failure=FailureClass.ERROR, ended_at=now_iso(),
                                                    error_tail=why, cause=why))
            outcome.failed.append(run.run_id)
            self._ended(run.run_id, RunState.FAILED)
            self.on_event(Event(EventKind.FAILED, run.run_id, why))
            return
        status = RunStatus(state=RunState.RUNNING, attempts=attempts, pid=handle.pid, host=handle.host,
                           started_at=now_iso())
        self.recorder.record(run_dir, status)
        self._active[run.run_id] = _Active(run, handle, status, self.clock(), attempt)
        self.on_event(Event(EventKind.STARTED, run.run_id, f"attempt {status.attempts}"))

    def _memory_allows_another(self, algo: str) -> bool:
        if not self.options.memory_guard:
            return True
        available_mb, needed_mb = self.available_mb(), run_memory_mb(self._measured.for_admission(), algo)
        if memory_admits(available_mb, needed_mb, running=len(self._active)):
            self._waiting_for_memory = False
            return True
        if not self._waiting_for_memory:  # say it once per wait, not every poll
            self.on_event(Event(EventKind.WAITING_MEMORY, None,
                                f"{available_mb:.0f} MiB available, a run needs ~{needed_mb:.0f}"))
        self._waiting_for_memory = True
        return False

    # -- watching -----------------------------------------------------------------------------------

    def _poll(self, pending: deque, outcome: SweepOutcome) -> None:
        for run_id, active in list(self._active.items()):
            end = active.handle.poll()
            self._note_host(active)
            if end is None:
                continue
            del self._active[run_id]
            self._finish(active, end, pending, outcome)

    def _note_host(self, active: _Active) -> None:
        """A cluster run learns its node after it started; status.json shows it once known."""
        if active.handle.host != active.status.host:
            active.status = active.status.model_copy(update={"host": active.handle.host})
            self.recorder.record(self.sweep_dir.run(active.run.run_id), active.status)

    def _prune(self, pending: deque) -> None:
        """Stop the runs the source prunes, as Ctrl-C stops a run; a pruned run waiting to retry is dropped."""
        if self._source is None:
            return
        now = self.clock()
        for run_id in self._source.to_prune():
            for item in [p for p in pending if p[0].run_id == run_id]:
                pending.remove(item)
            active = self._active.get(run_id)
            if active is not None and active.pruned_at is None:
                active.pruned_at = now
                active.handle.interrupt()
        for active in self._active.values():
            if active.pruned_at is not None and now - active.pruned_at > self.options.grace_s:
                active.handle.kill()

    def _ended(self, run_id: str, state: RunState) -> None:
        if self._source is not None:
            self._source.ended(run_id, state)

    def _enforce_timeouts(self) -> None:
        timeout, now = self.options.timeout_s, self.clock()
        for active in self._active.values():
            if timeout and active.timed_out_at is None and now - active.started > timeout:
                active.timed_out_at = now
                active.handle.interrupt()
            elif active.timed_out_at is not None and now - active.timed_out_at > self.options.grace_s:
                active.handle.kill()

    def _finish(self, active: _Active, end: RunExit, pending: deque, outcome: SweepOutcome) -> None:
        run_dir = self.sweep_dir.run(active.run.run_id)
        stopped = (bool(self._stop_requests) and active.interrupted_at is not None) or active.pruned_at is not None
        failure = classify(end, stopped=stopped, timed_out=active.timed_out_at is not None,
                           succeeded=self.completed(run_dir))
        peak_rss, peak_uss = active.handle.peak_rss_mb(), active.handle.peak_uss_mb()
        self._measured.add(active.run.algo, peak_uss, peak_rss)
        code = end.returncode
        ended = {"returncode": code, "ended_at": now_iso(), "peak_rss_mb": peak_rss, "peak_uss_mb": peak_uss,
                 "pid": active.status.pid, "fell_back": run_dir.fell_back()}
        if failure is None:
            unrecorded = self.recorder.record(run_dir, active.status.model_copy(update={"state": RunState.SUCCEEDED,
                                                                                         **ended}))
            if unrecorded:  # the next `sweep run` would run it again: it is not reported as succeeded
                outcome.failed.append(active.run.run_id)
                self.on_event(Event(EventKind.FAILED, active.run.run_id,
                                    f"{FailureClass.ERROR.value}: it finished, but its end is not on record "
                                    f"({unrecorded}); the next `sweep run` runs it again"))
                self._ended(active.run.run_id, RunState.FAILED)
                return
            outcome.succeeded.append(active.run.run_id)
            self.on_event(Event(EventKind.SUCCEEDED, active.run.run_id))
            self._ended(active.run.run_id, RunState.SUCCEEDED)
            return
        at_once = len(self._active) + 1  # itself included: it has left _active already
        if run_dir.path.is_dir():
            tail = run_dir.error_tail()
            # A deep traceback's header is further back than the tail status.json keeps.
            cause = cause_of(end, failure, run_dir.error_tail(lines=1000), timeout_s=self.options.timeout_s,
                             peak_mb=peak_rss)
            if failure is FailureClass.OUT_OF_MEMORY:
                cause += f"; {oom_advice(active.run, end, at_once, peak_uss or peak_rss)}"
        else:  # log.txt went with it
            tail, cause = "", f"its run folder {run_dir.path} was deleted while it ran"
        state = RunState.INTERRUPTED if failure is FailureClass.INTERRUPTED else RunState.FAILED
        if active.pruned_at is not None:
            state, cause = RunState.PRUNED, "pruned: its trial was behind the others"
        # The cause ends the tail: whatever shows error_tail's last line (older readers too) shows it.
        status = active.status.model_copy(update={"state": state, "failure": failure, "cause": cause,
                                                  "error_tail": f"{tail}\n{cause}" if tail else cause, **ended})
        self.recorder.record(run_dir, status)
        if state is RunState.PRUNED:
            outcome.pruned.append(active.run.run_id)
            self.on_event(Event(EventKind.PRUNED, active.run.run_id))
            self._ended(active.run.run_id, state)
        elif should_retry(failure, active.attempt, self.options.retries, stopping=bool(self._stop_requests),
                          shared_with=at_once - 1 if end.oom is None or end.oom.shared else 0):
            if failure is FailureClass.OUT_OF_MEMORY:
                self._lower_memory_cap(at_once)
            pending.append((active.run, active.attempt + 1))
            self.on_event(Event(EventKind.RETRYING, active.run.run_id, f"{failure.value}: {cause} (exit {code})"))
        elif state is RunState.INTERRUPTED:
            outcome.interrupted.append(active.run.run_id)
            self.on_event(Event(EventKind.INTERRUPTED, active.run.run_id))
        else:
            outcome.failed.append(active.run.run_id)
            self.on_event(Event(EventKind.FAILED, active.run.run_id, f"{failure.value}: {cause}"))
            self._ended(active.run.run_id, state)

    def _lower_memory_cap(self, at_once: int) -> None:
        """After an OOM kill of a run that shared its memory with others: fewer runs at once from now on, so
        that its retry (and every run after it) has the room that was missing."""
        cap = max(1, min(at_once, self._memory_cap or at_once) - 1)
        if cap != self._memory_cap:
            self._memory_cap = cap
            self.on_event(Event(EventKind.WARNING, None, f"a run was killed for its memory with {at_once} runs at "
                                f"once: at most {cap} at once from now on"))

    def _warn(self, run_id: str, message: str) -> None:
        self.on_event(Event(EventKind.WARNING, run_id, message))

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


def _available_here() -> Callable[[], float]:
    """The memory a new run may take here: the machine's available memory, or less where the launcher's memory
    cgroup (a SLURM job's, a container's) has a limit with less left under it."""
    cgroup = memory_cgroup()  # the launcher's, which its local runs start in

    def available_mb() -> float:
        host = psutil.virtual_memory().available / 2**20
        left = cgroup_available_mb(cgroup)
        return host if left is None else min(host, left)
    return available_mb


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
