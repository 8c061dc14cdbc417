"""What a run's end means: its failure class, and whether it deserves another attempt. Pure: the
scheduler gathers the facts (how the run exited, whether it was asked to stop, result.json) and acts."""

from __future__ import annotations

from ..launchers.base import ExitKind, RunExit
from ..sweepdir.models import FailureClass

WORKER_INTERRUPTED = 130
"""The worker's exit code after a requested stop and a saved checkpoint."""
RETRYABLE = frozenset({FailureClass.KILLED, FailureClass.TIMEOUT, FailureClass.LOST, FailureClass.OUT_OF_MEMORY})
"""Ends the run itself did not cause: another attempt may finish it. An error would happen again."""
UNASKED_ENDS = {
    ExitKind.KILLED: FailureClass.KILLED,         # a signal nobody in this sweep sent (kill -9)
    ExitKind.OUT_OF_MEMORY: FailureClass.OUT_OF_MEMORY,
    ExitKind.CANCELLED: FailureClass.KILLED,
    ExitKind.TIME_LIMIT: FailureClass.KILLED,     # the cluster's limit, not --timeout
    ExitKind.LOST: FailureClass.LOST,
}
"""The class of each end the worker did not choose, when the sweep asked nothing of the run."""


def classify(end: RunExit, *, stopped: bool, timed_out: bool, succeeded: bool) -> FailureClass | None:
    """The run's failure class; None if it succeeded.

    stopped: the sweep is stopping and asked this run to stop; timed_out: --timeout stopped it;
    succeeded: its result.json holds an evaluation. A run asked to stop that still ended cleanly with
    its result succeeded; any other end of such a run is what it was asked.
    """
    clean = end.kind is ExitKind.EXITED and end.returncode == 0 and succeeded
    if stopped:
        return None if clean else FailureClass.INTERRUPTED
    if timed_out:
        return None if clean else FailureClass.TIMEOUT
    if end.kind is not ExitKind.EXITED:
        return UNASKED_ENDS[end.kind]
    if end.returncode == 0:
        return None if succeeded else FailureClass.ERROR  # exit 0 without a result is a bug, not luck
    if end.returncode == WORKER_INTERRUPTED:
        return FailureClass.KILLED  # a stop signal nobody in this sweep sent (kill -INT, someone's scancel)
    return FailureClass.ERROR


def should_retry(failure: FailureClass, attempt: int, retries: int, stopping: bool) -> bool:
    """Whether to queue the run again: an end it did not cause, within --retries extra attempts
    (`attempt` counts from 0 in this invocation), unless the sweep is stopping."""
    return failure in RETRYABLE and attempt < retries and not stopping
