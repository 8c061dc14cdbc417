"""How every launcher that runs the worker itself (local, a Ray actor) starts it: an argument list, never
a shell string; its own process group; thread pools capped at one thread; killed by the kernel when its
parent dies."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS")
_PR_SET_PDEATHSIG = 1


def worker_command(run_dir: Path) -> list[str]:
    return [sys.executable, "-m", "mjsweep.worker", str(run_dir)]


def worker_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The parent's environment with every thread pool capped at one thread and output unbuffered."""
    env = dict(os.environ if base is None else base)
    env.update(dict.fromkeys(THREAD_VARS, "1"))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def spawn_worker(command: list[str], cwd: Path, log: Path, env: dict[str, str]) -> subprocess.Popen:
    """Start `command` in `cwd` as the leader of a new process group (stopping a run signals the group),
    its output appended to `log`."""
    with open(log, "ab") as out:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                cwd=cwd, start_new_session=True, close_fds=True,
                                preexec_fn=_unblocked_dying_with(os.getpid()))


def _unblocked_dying_with(parent_pid: int, niceness: int = 0) -> Callable[[], None]:
    """A preexec_fn. A child inherits its parent's signal mask, and Ray runs actor methods with SIGINT
    blocked: unblock every signal, or the worker never sees the SIGINT that asks it to checkpoint. Then
    the kernel SIGKILLs the child when its parent dies, however it dies. `niceness` lowers the child's
    CPU priority (engine/livereport.py's report builds: 19)."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before fork, not in the child

    def preexec() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        if niceness:
            os.nice(niceness)
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return preexec
