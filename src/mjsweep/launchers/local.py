"""Runs as local OS processes: one worker per run, each in its own process group, one thread each; started
by a fresh exec, or forked from a template process that has done the worker's imports once (template.py)."""

from __future__ import annotations

import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from ..childproc import child_env, signal_group
from ..sweepdir.files import RunDir
from ..sweepdir.models import RunSpec
from .base import Launcher, RunExit
from .gpus import GpuSlots
from .oomkill import OomWatch
from .spawn import spawn_worker, worker_command
from .template_client import TemplateError, TemplateProcess
from .treememory import TreeMemory, uss_readable

STARTS = ("exec", "template")


class WorkerProcess(Protocol):
    """What LocalHandle uses of a worker: a childproc.Child, or a child of the template process."""

    pid: int

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


class LocalHandle:
    def __init__(self, proc: WorkerProcess, on_exit: Callable[[], None] = lambda: None, read_uss: bool = True):
        self.proc = proc
        self.pid = proc.pid
        self.host = socket.gethostname()
        self.memory = TreeMemory(proc.pid, read_uss)
        self.oom = OomWatch(proc.pid)
        self._on_exit = on_exit

    def poll(self) -> RunExit | None:
        self.memory.sample()
        self.oom.refresh()
        code = self.proc.poll()
        if code is None:
            return None
        self._signal_group(signal.SIGKILL)  # whatever the worker started dies with it
        self._on_exit()
        self._on_exit = lambda: None
        if code == -signal.SIGKILL:
            facts = self.oom.verdict()
            if facts is not None:
                return RunExit.out_of_memory(facts)
            return replace(RunExit.killed(signal.SIGKILL), oom_checked=self.oom.can_tell())
        return RunExit.from_returncode(code)

    def interrupt(self) -> None:
        self._signal_group(signal.SIGINT)

    def kill(self) -> None:
        self._signal_group(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        return self.proc.wait(timeout)

    def peak_rss_mb(self) -> float | None:
        return self.memory.peak_rss_mb()

    def peak_uss_mb(self) -> float | None:
        return self.memory.peak_uss_mb()

    def _signal_group(self, sig: int) -> None:
        signal_group(self.pid, sig)  # the worker leads its own group, exec'd (childproc) or forked (template)


class LocalLauncher(Launcher):
    """Starts each run as `python -m mjsweep.worker RUN_DIR`, an argument list, never a shell string.

    Runs with device "cuda" get a GPU slot each (CUDA_VISIBLE_DEVICES); CPU runs see no GPU. With
    start_with="template", CPU runs are forked from the template process, started at submit() so that its
    imports overlap the sweep's own set-up; GPU runs, and every run once the template proved unusable, get
    a fresh exec. A template that died is started again at the next run.
    """

    def __init__(self, extra_env: dict[str, str] | None = None,
                 command: Callable[[Path], list[str]] = worker_command,
                 gpus: list[str] | None = None, runs_per_gpu: int = 1, start_with: str = "exec",
                 template: TemplateProcess | None = None):
        if start_with not in STARTS:
            raise ValueError(f"start_with {start_with!r}: expected one of {', '.join(STARTS)}")
        self.extra_env = extra_env or {}
        self.command = command  # tests swap in cheap stand-ins for the worker
        self.gpu_slots = GpuSlots(gpus or [], runs_per_gpu)
        self.start_with = start_with
        self._template = template  # one started early (launchers.early_template), or None
        self._read_uss: bool | None = None
        """Whether runs' USS can be read here; decided at the first start."""

    def submit(self, runs: list[RunSpec], sweep_dir) -> None:
        if self.start_with == "template" and any(run.device == "cpu" for run in runs):
            try:
                self._live_template()
            except TemplateError as exc:
                self._give_up_template(exc)

    def can_start(self, run: RunSpec) -> bool:
        return run.device == "cpu" or self.gpu_slots.free()

    def start(self, run: RunSpec, run_dir: RunDir) -> LocalHandle:
        env = child_env()
        env.update(self.extra_env)
        gpu = self.gpu_slots.take() if run.device != "cpu" else None
        env["CUDA_VISIBLE_DEVICES"] = gpu or ""
        command = self.command(run_dir.path)
        try:
            proc = self._fork(command, run_dir, env) if gpu is None and self._forkable(command) else None
            if proc is None:
                env["MJSWEEP_START"] = "exec"
                proc = spawn_worker(command, run_dir.path, run_dir.log, env)
        except BaseException:
            if gpu is not None:
                self.gpu_slots.give_back(gpu)
            raise
        return LocalHandle(proc, on_exit=(lambda: self.gpu_slots.give_back(gpu)) if gpu is not None else lambda: None,
                           read_uss=self._uss_readable())

    def news_fd(self) -> int | None:
        """The template's socket while forked runs are running (an exec'd run's end waits for the poll)."""
        return self._template.news_fd() if self._template is not None else None

    def close(self) -> None:
        if self._template is not None:
            self._template.close()
            self._template = None

    def _uss_readable(self) -> bool:
        """Asked once; where USS cannot be read, says so in one line and the admission counts RSS."""
        if self._read_uss is None:
            why = uss_readable()
            if why is not None:
                print(f"mjsweep: cannot read the runs' unique memory (USS: {why}); memory admission counts "
                      "their RSS, shared pages included", file=sys.stderr, flush=True)
            self._read_uss = why is None
        return self._read_uss

    def _forkable(self, command: list[str]) -> bool:
        """Whether the template can run this command line: this interpreter with -m, -c or a script."""
        return (self.start_with == "template" and len(command) > 1 and command[0] == sys.executable
                and (command[1] in ("-m", "-c") or not command[1].startswith("-")))

    def _fork(self, command: list[str], run_dir: RunDir, env: dict[str, str]) -> WorkerProcess | None:
        """The run forked from the template; None (after one line on stderr) if the template cannot serve,
        and from then on every run is a fresh exec."""
        try:
            return self._live_template().fork(command[1:], run_dir.path, run_dir.log,
                                              {**env, "MJSWEEP_START": "template"})
        except TemplateError as exc:
            self._give_up_template(exc)
            return None

    def _give_up_template(self, exc: TemplateError) -> None:
        print(f"mjsweep: {exc}; starting runs by exec from now on", file=sys.stderr, flush=True)
        self.close()
        self.start_with = "exec"

    def _live_template(self) -> TemplateProcess:
        if self._template is None or not self._template.alive:
            if self._template is not None:
                self._template.close()
            self._template = TemplateProcess.for_workers(self.extra_env)
        return self._template

