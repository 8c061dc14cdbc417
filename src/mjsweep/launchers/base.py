"""The contract between the scheduler and whatever starts runs (local processes, Ray, SLURM)."""

from __future__ import annotations

import signal
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import Enum
from types import TracebackType
from typing import Protocol, Self

from ..sweepdir.files import RunDir, SweepDir
from ..sweepdir.models import RunSpec

RETURNCODE_LOST = -255
"""status.json's returncode for a run whose node, job or task vanished (no signal has this number)."""


class ExitKind(str, Enum):
    EXITED = "exited"                # the worker exited with a code
    KILLED = "killed"                # a signal ended it
    LOST = "lost"                    # its node, actor or task vanished
    OUT_OF_MEMORY = "out-of-memory"  # killed for its memory: the OOM killer, SLURM, Ray's memory monitor
    CANCELLED = "cancelled"          # the batch system cancelled it with a signal (someone's scancel)
    TIME_LIMIT = "time-limit"        # the batch system's own time limit ended it


@dataclass(frozen=True)
class OomFacts:
    """Who killed a run for its memory, and the numbers that tell why, where known."""

    by: str
    """The killer and what says so, as "killed by ..." ends: "the kernel's OOM killer (memory cgroup /x, v2,
    counted the kill)"."""
    limit_mb: float | None = None
    """The memory limit that was hit (the smallest limit of the cgroup and the cgroups above it)."""
    peak_mb: float | None = None
    """The cgroup's peak use (all its processes, the run's among them)."""
    shared: bool = True
    """Whether the run shared the memory that ran out with the sweep's other runs (a machine, a Ray node, a
    cgroup holding the launcher and its runs), so that fewer runs at once may let it fit; False for a limit of
    its own (a SLURM task's --mem)."""


@dataclass(frozen=True)
class RunExit:
    """How a run ended, as its launcher saw it. Build one with the class methods."""

    kind: ExitKind
    returncode: int
    """As status.json records it, in subprocess's convention: the exit code, minus the signal that
    ended it, or RETURNCODE_LOST."""
    oom: OomFacts | None = None
    """Set for OUT_OF_MEMORY: who killed the run for its memory, and the numbers where known."""
    oom_checked: bool = field(default=False, compare=False)
    """For a SIGKILL: whether the launcher could tell the OOM killer's from another's (a memory cgroup or the
    kernel counts OOM kills where it runs), so that one it names is not the OOM killer's."""

    @classmethod
    def exited(cls, code: int) -> RunExit:
        return cls(ExitKind.EXITED, code)

    @classmethod
    def killed(cls, sig: int) -> RunExit:
        return cls(ExitKind.KILLED, -sig)

    @classmethod
    def from_returncode(cls, returncode: int) -> RunExit:
        """A Popen returncode: negative when a signal ended the process."""
        return cls.killed(-returncode) if returncode < 0 else cls.exited(returncode)

    @classmethod
    def lost(cls) -> RunExit:
        return cls(ExitKind.LOST, RETURNCODE_LOST)

    @classmethod
    def out_of_memory(cls, facts: OomFacts | None = None) -> RunExit:
        """Killed for its memory: by the kernel's OOM killer (a memory cgroup's count says so), SLURM
        (OUT_OF_MEMORY) or Ray's memory monitor. status.json's returncode stays -9, as before."""
        return cls(ExitKind.OUT_OF_MEMORY, -signal.SIGKILL, facts or OomFacts("the OOM killer"))

    @classmethod
    def cancelled(cls, sig: int) -> RunExit:
        return cls(ExitKind.CANCELLED, -sig)

    @classmethod
    def time_limit(cls) -> RunExit:
        return cls(ExitKind.TIME_LIMIT, -signal.SIGTERM)


class RunHandle(Protocol):
    """A started run."""

    @property
    def pid(self) -> int | None:
        """The worker's pid; None when it runs on another machine."""

    @property
    def host(self) -> str:
        """Where it runs; a cluster run may learn its node some polls after it started."""

    def poll(self) -> RunExit | None:
        """How the run ended, once it has; else None. Cheap: the scheduler calls it every poll."""

    def interrupt(self) -> None:
        """Ask the run to stop: it saves a checkpoint and exits (SIGINT to its process group)."""

    def kill(self) -> None:
        """Stop the run and everything it started, at once."""

    def peak_rss_mb(self) -> float | None:
        """Largest resident memory (RSS, shared pages included) seen so far for the run's processes, if known."""

    def peak_uss_mb(self) -> float | None:
        """Largest unique memory (USS: pages no process outside the run shares) seen so far, what one more
        run like it adds; None where not measured (Ray, SLURM: the worker reports its RSS only)."""


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

    def news_fd(self) -> int | None:
        """A file descriptor that turns readable when a run may have ended, so that the scheduler's wait
        between polls ends at once; None: the scheduler waits its whole poll interval."""
        return None

    def close(self) -> None:
        """Release whatever the launcher holds (connections, clusters, tasks never started)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
