"""The one way mjsweep owns a child process: an argument list, never a shell string; the leader of a session
of its own (stopping it signals its whole group, whatever it started included, and a Ctrl-C at the terminal
is the parent's to handle); killed by the kernel when its parent dies, however it dies; every thread pool
capped at one thread. Stopping it: interrupt, a grace period, then kill.

Linux only (PR_SET_PDEATHSIG), as the launchers are.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from pathlib import Path
from typing import IO, Any

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS")
"""The variables that size the thread pools of OpenMP, MKL, OpenBLAS, numexpr and Accelerate, each read once
when its library loads: a child gets 1 in each, so that N children on N cores do not fight over them."""
_PR_SET_PDEATHSIG = 1


def cap_threads(env: MutableMapping[str, str]) -> None:
    """Set every thread pool variable of `env` to one thread (os.environ too, before numpy or torch load)."""
    env.update(dict.fromkeys(THREAD_VARS, "1"))


def child_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (this process's environment by default) with one-thread pools and unbuffered Python output."""
    env = dict(os.environ if base is None else base)
    cap_threads(env)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def dying_with(parent_pid: int) -> Callable[[], None]:
    """What a child calls, after fork, to be SIGKILLed by the kernel when `parent_pid` dies. prctl is looked up
    here, before the fork: the child of a threaded parent must not load anything."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def die_with_parent() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect: nobody would kill us
            os._exit(1)

    return die_with_parent


def _preexec(niceness: int) -> Callable[[], None]:
    die_with_parent = dying_with(os.getpid())
    c_signal = ctypes.CDLL(None).signal  # looked up before the fork, as prctl is

    def preexec() -> None:
        # A child inherits its parent's signal mask, and Ray runs actor methods with SIGINT blocked: unblocked,
        # or the child never sees the SIGINT that asks it to stop.
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        # An ignored SIGINT survives exec, and a shell ignores it in a job started with `&` without job control
        # (a script's `sweep run ... &`): back to the default, so that the child's own handler is installed.
        c_signal(signal.SIGINT, signal.SIG_DFL)
        if niceness:
            os.nice(niceness)
        die_with_parent()

    return preexec


def signal_group(pgid: int, sig: int) -> None:
    """`sig` to the process group led by `pgid`; nothing if it is gone (or no longer ours to signal)."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Child:
    """A started child process and its group; start one with `Child.start`."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.pid = proc.pid

    @classmethod
    def start(cls, command: list[str], *, env: Mapping[str, str] | None = None, cwd: Path | str | None = None,
              log: Path | None = None, stdin: int | IO[Any] | None = subprocess.DEVNULL,
              stdout: int | IO[Any] | None = subprocess.DEVNULL, stderr: int | IO[Any] | None = None,
              niceness: int = 0, pass_fds: tuple[int, ...] = (), text: bool = False) -> Child:
        """Start `command` with `env` (child_env() by default). log: its stdout and stderr appended to that file
        (in place of `stdout` and `stderr`). niceness: lower its CPU priority (19: only idle cores)."""
        if log is not None:
            with open(log, "ab") as out:
                return cls.start(command, env=env, cwd=cwd, stdin=stdin, stdout=out, stderr=subprocess.STDOUT,
                                 niceness=niceness, pass_fds=pass_fds, text=text)
        proc = subprocess.Popen(command, stdin=stdin, stdout=stdout, stderr=stderr,
                                env=dict(env) if env is not None else child_env(), cwd=cwd, text=text,
                                start_new_session=True, close_fds=True, pass_fds=pass_fds,
                                preexec_fn=_preexec(niceness))
        return cls(proc)

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def poll(self) -> int | None:
        """Its exit code (minus the signal that ended it) once it ended, else None; never blocks."""
        return self.proc.poll()

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code; raises subprocess.TimeoutExpired if it still runs after `timeout` seconds."""
        return self.proc.wait(timeout)

    def signal(self, sig: int) -> None:
        """`sig` to its whole group: the child and whatever it started that stayed in its session."""
        signal_group(self.pid, sig)

    def interrupt(self) -> None:
        self.signal(signal.SIGINT)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)

    def stop(self, grace_s: float) -> int:
        """Interrupt, give it `grace_s` to end, kill its group; its exit code."""
        return stop_all([self], grace_s)[0]


def stop_all(children: Iterable[Child], grace_s: float) -> list[int]:
    """Interrupt each child that still runs, give them `grace_s` together, then kill each group (what a child
    started dies with it even once the child ended) and reap; their exit codes, in order."""
    children = list(children)
    for child in children:
        if child.poll() is None:
            child.interrupt()
    deadline = time.monotonic() + grace_s
    while any(child.poll() is None for child in children) and time.monotonic() < deadline:
        time.sleep(0.02)
    for child in children:
        child.kill()
    return [child.wait() for child in children]
