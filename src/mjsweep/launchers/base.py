"""The contract between the scheduler and whatever starts runs (local processes, Ray, SLURM)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Protocol, Self

from ..plan import RunSpec
from ..rundir import RunDir, SweepDir

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


class Launcher(ABC):
    """Starts runs for the scheduler. A context manager: close() on exit.

    start() raises OSError or errors.LaunchError for a run that cannot start (that run fails, the others
    go on); errors.InputError only before any run started (exit 2).
    """

    def slots(self, requested: int | None, default: int) -> int:
        """CPU slots the scheduler fills: --workers, else `default` (this machine's usable cores). A
        cluster knows its own capacity."""
        return requested or default

    def submit(self, runs: list[RunSpec], sweep_dir: SweepDir) -> None:
        """Called once with every run to execute, before the first start(): a batch system queues them
        all at once. Raises LauncherConfigError (exit 2) if they cannot be queued."""

    def can_start(self, run: RunSpec) -> bool:
        """Whether a resource the scheduler does not count itself (a GPU slot) is free for this run."""
        return True

    @abstractmethod
    def start(self, run: RunSpec, run_dir: RunDir) -> RunHandle:
        """Start `python -m mjsweep.worker RUN_DIR` for this run; its output goes to run_dir.log."""

    def close(self) -> None:
        """Release whatever the launcher holds (connections, clusters, tasks never started)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
