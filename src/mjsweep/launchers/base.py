"""The contract between the scheduler and whatever starts runs (local processes, Ray, SLURM)."""

from __future__ import annotations

from typing import Protocol

from ..plan import RunSpec
from ..rundir import RunDir

RETURNCODE_LOST = -255
"""poll()'s answer when the run's node, job or task vanished (no signal has this number)."""


class RunHandle(Protocol):
    """A started run."""

    pid: int | None
    host: str

    def poll(self) -> int | None:
        """The worker's exit code once it has ended (negative: killed by that signal;
        RETURNCODE_LOST: its node or job was lost), else None."""

    def interrupt(self) -> None:
        """Ask the run to stop: it saves a checkpoint and exits (SIGINT to its process group)."""

    def kill(self) -> None:
        """Stop the run and everything it started, at once."""

    def peak_rss_mb(self) -> float | None:
        """Largest resident memory seen so far for the run's processes, if known."""


class Launcher(Protocol):
    """Two optional hooks, looked up with getattr: `slots(requested: int | None) -> int` (a cluster
    knows how many CPU slots it has; see launchers.scheduler_slots) and `submit(runs, sweep_dir)`
    (called once before the scheduler starts, for a batch system that queues every run at once)."""

    def can_start(self, run: RunSpec) -> bool:
        """Whether a resource the scheduler does not count itself (a GPU slot) is free for this run."""

    def start(self, run: RunSpec, run_dir: RunDir) -> RunHandle:
        """Start `python -m mjsweep.worker RUN_DIR` for this run; its output goes to run_dir.log."""

    def close(self) -> None:
        """Release whatever the launcher holds (connections, clusters)."""
