"""What a run's end means: its failure class, and whether it deserves another attempt. Pure: the
scheduler gathers the facts (how the run exited, whether it was asked to stop, result.json) and acts."""

from __future__ import annotations

from ..launchers.base import ExitKind, RunExit
from ..spec.algos import ALGOS
from ..sweepdir.models import FailureClass, RunSpec

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


def should_retry(failure: FailureClass, attempt: int, retries: int, stopping: bool, shared_with: int = 0) -> bool:
    """Whether to queue the run again: an end it did not cause, within --retries extra attempts
    (`attempt` counts from 0 in this invocation), unless the sweep is stopping. A run killed for its memory
    is retried only where memory may allow it now: it shared that memory with `shared_with` other runs, and
    the scheduler runs fewer at once from then on; alone, or over a limit of its own, it would die again."""
    if failure is FailureClass.OUT_OF_MEMORY and shared_with < 1:
        return False
    return failure in RETRYABLE and attempt < retries and not stopping


DEFAULT_BUFFER_SIZE = 1_000_000
"""stable-baselines3's replay buffer size when the spec sets none."""


def oom_advice(run: RunSpec, end: RunExit, at_once: int, peak_mb: float | None) -> str:
    """What would let a run killed for its memory fit: fewer runs at once where it shared the memory with
    others (how many fit, where the limit and its peak are known), a smaller replay buffer for an off-policy
    run, else more memory."""
    facts = end.oom
    options = []
    if at_once > 1 and (facts is None or facts.shared):
        fit = ""
        if facts and facts.limit_mb and peak_mb:
            fit = f" (about {max(1, int(facts.limit_mb // peak_mb))} fit in {facts.limit_mb:,.0f} MiB at its peak)"
        options.append(f"fewer --workers{fit}")
    if run.algo in ALGOS and ALGOS[run.algo].off_policy:
        size = run.hyperparams.get("buffer_size", DEFAULT_BUFFER_SIZE)
        size_text = f"{size:,}" if isinstance(size, int) else str(size)
        options.append(f"a smaller {run.algo}.buffer_size (now {size_text} transitions)")
    memory = "a larger slurm.mem" if facts is not None and not facts.shared else "more memory for the sweep"
    options.append(memory)
    ran = f"{at_once} runs were running at once" if at_once > 1 else "it ran alone"
    return f"{ran}; it would fit with " + ", or ".join(options)
