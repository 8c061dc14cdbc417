"""Runs as local OS processes: one worker per run, each in its own process group, one thread each."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from ..gpus import GpuSlots
from ..plan import RunSpec
from ..rundir import RunDir
from .base import Launcher, RunExit
from .spawn import spawn_worker, worker_command, worker_env

TREE_EVERY_S = 10.0
"""How often a worker's process tree is listed again. Listing children makes psutil read the stat file of
every process on the machine (milliseconds, per run, per poll: most of the launcher's CPU); reading the
RSS of the processes already known takes microseconds and is done at every poll."""


class LocalHandle:
    def __init__(self, proc: subprocess.Popen, on_exit: Callable[[], None] = lambda: None):
        self.proc = proc
        self.pid = proc.pid
        self.host = socket.gethostname()
        self._peak_rss = 0.0
        self._tree: list[psutil.Process] = []
        self._tree_at = float("-inf")
        self._on_exit = on_exit

    def poll(self) -> RunExit | None:
        self._sample_rss()
        code = self.proc.poll()
        if code is None:
            return None
        self._signal_group(signal.SIGKILL)  # whatever the worker started dies with it
        self._on_exit()
        self._on_exit = lambda: None
        return RunExit.from_returncode(code)

    def interrupt(self) -> None:
        self._signal_group(signal.SIGINT)

    def kill(self) -> None:
        self._signal_group(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        return self.proc.wait(timeout)

    def peak_rss_mb(self) -> float | None:
        return round(self._peak_rss / 2**20, 1) if self._peak_rss else None

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)  # the worker leads its own group (start_new_session)
        except (ProcessLookupError, PermissionError):
            pass

    def _sample_rss(self) -> None:
        now = time.monotonic()
        if now - self._tree_at >= TREE_EVERY_S:
            try:
                root = psutil.Process(self.pid)
                self._tree, self._tree_at = [root, *root.children(recursive=True)], now
            except psutil.Error:
                return
        rss = 0
        for proc in self._tree:
            try:
                rss += proc.memory_info().rss
            except psutil.Error:  # a child that has ended since the tree was listed
                pass
        self._peak_rss = max(self._peak_rss, rss)


class LocalLauncher(Launcher):
    """Starts each run as `python -m mjsweep.worker RUN_DIR`, an argument list, never a shell string.

    Runs with device "cuda" get a GPU slot each (CUDA_VISIBLE_DEVICES); CPU runs see no GPU.
    """

    def __init__(self, extra_env: dict[str, str] | None = None,
                 command: Callable[[Path], list[str]] = worker_command,
                 gpus: list[str] | None = None, runs_per_gpu: int = 1):
        self.extra_env = extra_env or {}
        self.command = command  # tests swap in cheap stand-ins for the worker
        self.gpu_slots = GpuSlots(gpus or [], runs_per_gpu)

    def can_start(self, run: RunSpec) -> bool:
        return run.device == "cpu" or self.gpu_slots.free()

    def start(self, run: RunSpec, run_dir: RunDir) -> LocalHandle:
        env = worker_env()
        env.update(self.extra_env)
        gpu = self.gpu_slots.take() if run.device != "cpu" else None
        env["CUDA_VISIBLE_DEVICES"] = gpu or ""
        try:
            proc = spawn_worker(self.command(run_dir.path), run_dir.path, run_dir.log, env)
        except BaseException:
            if gpu is not None:
                self.gpu_slots.give_back(gpu)
            raise
        return LocalHandle(proc, on_exit=(lambda: self.gpu_slots.give_back(gpu)) if gpu is not None else lambda: None)

