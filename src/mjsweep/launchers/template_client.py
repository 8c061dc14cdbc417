"""The launcher's side of the template process (template.py): start it, ask it for a child per run, and
learn how each child ended. Its children are not the launcher's, so a child's end comes as a message;
its liveness, memory and process group are read and signalled by pid as for any process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from ..childproc import Child, child_env
from ..errors import LaunchError
from .template_wire import Reader, send

READY_WAIT_S = 300.0
"""Longest wait for the template's imports (seconds on a quiet machine; far more on a crowded one)."""
ANSWER_WAIT_S = 60.0
"""Longest wait for the pid of a forked child."""


class TemplateError(LaunchError):
    """The template process cannot serve: it died, or forking from it would not be safe."""


class TemplateProcess:
    """One template process, started with `env` (a worker's environment, without a GPU)."""

    def __init__(self, env: dict[str, str]):
        self._errors = tempfile.TemporaryFile()
        ours, theirs = socket.socketpair()
        with theirs:
            try:
                self.proc = Child.start(
                    [sys.executable, "-m", "mjsweep.launchers.template", str(theirs.fileno()), str(os.getpid())],
                    env=env, stderr=self._errors, pass_fds=(theirs.fileno(),))
            except OSError as exc:
                ours.close()
                self._errors.close()
                raise TemplateError(f"the template process cannot start: {exc}") from None
        self.sock = ours
        self._reader = Reader(ours)
        self._ready: bool = False
        self._answers: list[dict] = []
        self.exits: dict[int, int] = {}
        """Wait statuses of the children that ended, by pid."""
        self._running: set[int] = set()

    @classmethod
    def for_workers(cls, extra_env: dict[str, str] | None = None) -> TemplateProcess:
        """A template with a worker's environment (thread caps), extra_env, and no GPU: GPU runs are exec'd."""
        env = child_env()
        env.update(extra_env or {})
        env["CUDA_VISIBLE_DEVICES"] = ""
        return cls(env)

    @property
    def alive(self) -> bool:
        return not self._reader.closed and self.proc.poll() is None

    def fork(self, argv: list[str], cwd: Path, log: Path, env: dict[str, str]) -> TemplateChild:
        """A child running `python ARGV...` in cwd, its output appended to log. Raises TemplateError."""
        self._wait_ready()
        try:
            send(self.sock, {"argv": argv, "cwd": str(cwd), "log": str(log), "env": env})
        except OSError as exc:
            raise self._failed(f"cannot reach it ({exc})") from None
        answer = self._next_answer(ANSWER_WAIT_S)
        if "error" in answer:
            raise OSError(answer["error"])
        self._running.add(answer["pid"])
        return TemplateChild(self, answer["pid"])

    def news_fd(self) -> int | None:
        """The socket while children run: it turns readable when one ends, so the launcher's wait between
        polls can end then. None otherwise, when nothing but an answer it has not asked for could wake it."""
        return self.sock.fileno() if self._running and self.alive else None

    def pump(self) -> None:
        """Take in the messages that have arrived, without waiting."""
        if not self._reader.closed:
            self.sock.settimeout(0)
            self._take(self._reader.read())

    def close(self) -> None:
        """End the template; its running children die with it (PDEATHSIG)."""
        self._reader.closed = True
        self.sock.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._errors.close()

    def _wait_ready(self) -> None:
        if not self._ready:
            ready = self._next_answer(READY_WAIT_S)
            if ready.get("threads") != 1:
                self.close()
                raise TemplateError(f"the template process has {ready.get('threads')} threads after its "
                                    "imports; forking it would not be safe")
            self._ready = True

    def _next_answer(self, wait_s: float) -> dict:
        deadline = time.monotonic() + wait_s
        while not self._answers:
            left = deadline - time.monotonic()
            if self._reader.closed or left <= 0:
                raise self._failed("it died" if self._reader.closed else f"no answer in {wait_s:.0f} s")
            self.sock.settimeout(left)
            try:
                self._take(self._reader.read())
            except TimeoutError:
                pass
        return self._answers.pop(0)

    def _take(self, messages: list[dict]) -> None:
        for message in messages:
            if "exited" in message:
                self.exits[message["exited"]] = message["status"]
                self._running.discard(message["exited"])
            else:
                self._answers.append(message)

    def _failed(self, why: str) -> TemplateError:
        self.proc.kill()
        self.proc.wait()
        self._errors.seek(0)
        tail = self._errors.read().decode(errors="replace").strip()[-2000:]
        return TemplateError(f"the template process failed: {why}" + (f"\n{tail}" if tail else ""))


class TemplateChild:
    """A forked run, as much of subprocess.Popen as LocalHandle uses."""

    def __init__(self, template: TemplateProcess, pid: int):
        self.template = template
        self.pid = pid
        self.returncode: int | None = None
        try:
            self._process: psutil.Process | None = psutil.Process(pid)  # its start time guards against pid reuse
        except psutil.Error:
            self._process = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.template.pump()
            if (status := self.template.exits.pop(self.pid, None)) is not None:
                self.returncode = os.waitstatus_to_exitcode(status)
            elif not self.template.alive and not self._running():
                # The template ended without reporting this child: its end killed the child (PDEATHSIG).
                self.returncode = -signal.SIGKILL
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            time.sleep(0.05)
        return code

    def _running(self) -> bool:
        try:
            return self._process is not None and self._process.is_running() \
                and self._process.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False
