"""Why a run ended as it did, in the one line the live view, status.json, `sweep status` and the report show.
Pure: the scheduler hands over how the run ended, its class and its log's tail.

A log's last line is rarely the cause: an OOM-killed or kill -9'd worker writes nothing as it dies, and a
worker that exited 0 without a result may have printed anything last. So the line is built from what the
launcher saw, and only an error takes its words from the log: the last traceback's exception.
"""

from __future__ import annotations

import re
import signal

from ..launchers.base import ExitKind, RunExit
from ..sweepdir.models import FailureClass
from .failures import WORKER_INTERRUPTED

TRACEBACK = "Traceback (most recent call last):"
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning|Failure)\b[^\n]*$")
"""A line that names an exception (`ValueError: boom`, `numpy.linalg.LinAlgError: ...`), where no traceback is."""


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def error_line(tail: str) -> str | None:
    """The error a log's tail names: the last traceback's exception line, else the last line naming an
    exception; None when there is none. A line printed after it that the exception line ends with is
    preferred: the same words without the class's module path, as the worker prints a non-finite value's."""
    lines = [line.rstrip() for line in tail.splitlines()]
    starts = [i for i, line in enumerate(lines) if line.startswith(TRACEBACK)]
    if starts:
        after = [i for i in range(starts[-1] + 1, len(lines)) if lines[i] and not lines[i][0].isspace()]
        at = after[0] if after else None
    else:
        named = [i for i, line in enumerate(lines) if EXCEPTION_LINE.match(line)]
        at = named[-1] if named else None
    if at is None:
        return None
    later = [line for line in lines[at + 1:] if line.strip()]
    if later and lines[at].endswith(f": {later[-1]}"):
        return later[-1]
    return lines[at]


def _mb(value: float | None) -> str:
    return f"{value:,.0f} MiB"


def cause_of(end: RunExit, failure: FailureClass, tail: str, *, timeout_s: float | None = None,
             peak_mb: float | None = None) -> str:
    """One line: who or what ended the run. `tail`: its log's last lines; `peak_mb`: the run's own peak memory
    as its launcher measured it."""
    if failure is FailureClass.OUT_OF_MEMORY:
        facts = end.oom
        by = facts.by if facts else "the OOM killer"
        numbers = [f"its peak RSS {_mb(peak_mb)}"] if peak_mb else []
        if facts and facts.limit_mb:
            numbers.append(f"limit {_mb(facts.limit_mb)}")
        if facts and facts.peak_mb:
            numbers.append(f"the cgroup's peak {_mb(facts.peak_mb)}")
        return f"killed by {by}" + (f": {', '.join(numbers)}" if numbers else "")
    if failure is FailureClass.TIMEOUT:
        limit = f" of {_duration(timeout_s)}" if timeout_s else ""
        how = ", then SIGKILL when it did not stop within --grace" if end.returncode == -signal.SIGKILL else ""
        return f"timed out: ran past --timeout{limit}, stopped by SIGINT{how}"
    if failure is FailureClass.INTERRUPTED:
        return "stopped by the sweep (Ctrl-C, SIGTERM or SIGHUP on `sweep run`)"
    if failure is FailureClass.LOST:
        return "lost: its node, actor or task vanished (a node that died, SLURM's NODE_FAIL or preemption)"
    if end.kind is ExitKind.TIME_LIMIT:
        return "killed by SLURM at the job's time limit (TIMEOUT): raise slurm.time, or checkpoint more often"
    if end.kind is ExitKind.CANCELLED:
        return f"cancelled by SLURM with {signal_name(-end.returncode)} (scancel, from outside the sweep)"
    if end.kind is ExitKind.KILLED:
        sig = signal_name(-end.returncode)
        note = ""
        if end.returncode == -signal.SIGKILL:
            note = " (not the OOM killer: its kills are counted here, and none was)" if end.oom_checked else \
                " (kill -9, or the OOM killer: nothing here counts its kills)"
        return f"killed by {sig} from outside the sweep{note}"
    if end.returncode == WORKER_INTERRUPTED:
        return "stopped by a SIGINT or SIGTERM from outside the sweep (exit 130, with a checkpoint)"
    if end.returncode == 0:
        return "exited 0 without writing result.json"
    line = error_line(tail)
    if line is None:
        last = next((x.strip() for x in reversed(tail.splitlines()) if x.strip()), None)
        return f"exited with code {end.returncode}, naming no error" + (f" (log.txt ends: {last})" if last else "")
    return f"exited with code {end.returncode}: {line}"


def _duration(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g}h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g}m"
    return f"{seconds:g}s"
