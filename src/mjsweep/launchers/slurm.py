"""Runs on SLURM: one job array per sweep invocation, one array task per run.

The run dirs live on the cluster's shared filesystem, so a task runs the same worker command in the
same run dir as a local run would, and the launcher only watches: squeue for tasks still queued or
running, `scontrol show job` for how a finished one ended (sacct needs slurmdbd, which many small
clusters lack). `#SBATCH --requeue`: a preempted task goes back to the queue and its worker resumes
from its checkpoint by itself.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..childproc import THREAD_VARS
from ..errors import LauncherConfigError, LaunchError
from ..spec.sweepspec import SlurmSpec
from ..sweepdir.files import IN_RUN, RunDir, SweepDir, read_or_none, write_text_atomic
from ..sweepdir.models import RunSpec
from .base import Launcher, OomFacts, RunExit

QUEUE_REFRESH_S = 2.0
"""squeue is asked at most this often, once for all tasks, however many runs poll."""
UNLIMITED_SLOTS = 1_000_000
"""The scheduler hands every run to SLURM at once; the array's %K throttle limits what runs."""
LOST_STATES = {"NODE_FAIL", "BOOT_FAIL", "PREEMPTED", "DEADLINE", "REVOKED"}
ENDED_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", *LOST_STATES}
"""scontrol's JobState values of a task that is over; any other (PENDING, RUNNING, REQUEUED, ...) is not."""
COMMANDS = ("sbatch", "squeue", "scontrol", "scancel")
ORPHAN_WAIT_S = 300.0
"""How long submit() waits for a dead launcher's tasks to end after cancelling them (KillWait and more)."""


@dataclass(frozen=True)
class Submission:
    """One job array as it would be submitted: where its files go, their text, the sbatch call."""

    script_path: Path
    script: str
    run_list_path: Path
    run_list: str
    command: list[str]


def build_submission(runs: list[RunSpec], sweep_dir: SweepDir, slurm: SlurmSpec,
                     throttle: int | None, stamp: str | None = None) -> Submission:
    """The array for `runs`: task i runs the run whose dir is line i+1 of the run list."""
    stamp = stamp or datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    folder = sweep_dir.slurm.resolve()
    script_path, list_path = folder / f"array-{stamp}.sh", folder / f"array-{stamp}.runs"
    array = f"0-{len(runs) - 1}" + (f"%{throttle}" if throttle else "")
    cpus = slurm.cpus_per_task or max(r.cpus for r in runs)
    options = [f"--job-name=mjsweep-{runs[0].sweep}", f"--array={array}", f"--cpus-per-task={cpus}",
               "--requeue", "--open-mode=append"]
    options += [f"--{key}={value}" for key in ("partition", "time", "mem", "gres")
                if (value := getattr(slurm, key)) is not None]
    options += slurm.extra
    cuda = runs[0].device == "cuda"
    body = [
        "#!/bin/bash",
        *(f"#SBATCH {opt}" for opt in options),
        "# Task i trains the run whose dir is line i+1 of the run list (on the shared filesystem).",
        f'run_dir=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" {shlex.quote(str(list_path))})',
        'cd "$run_dir" || exit 1',
        "export " + " ".join(f"{var}=1" for var in THREAD_VARS),
        'export PYTHONUNBUFFERED=1 MJSWEEP_NODE="${SLURMD_NODENAME:-$(hostname)}"',
        *([] if cuda else ["export CUDA_VISIBLE_DEVICES="]),  # cpu runs see no GPU, as locally
        f'exec {shlex.quote(sys.executable)} -m mjsweep.worker "$run_dir" >>"$run_dir/{IN_RUN.log}" 2>&1',
    ]
    run_list = "".join(f"{sweep_dir.run(r.run_id).path.resolve()}\n" for r in runs)
    command = ["sbatch", "--parsable", f"--output={folder / '%A_%a.out'}", str(script_path)]
    return Submission(script_path, "\n".join(body) + "\n", list_path, run_list, command)


class _Queue:
    """What squeue says about this user's array tasks: 'JOB_INDEX' -> (state, node)."""

    def __init__(self):
        self._tasks: dict[str, tuple[str, str]] = {}
        self._at = float("-inf")

    def state(self, task: str) -> tuple[str, str] | None:
        if time.monotonic() - self._at > QUEUE_REFRESH_S:
            self._refresh()
        return self._tasks.get(task)

    def forget(self) -> None:
        """Ask squeue again on the next state(): a task submitted since the last answer is not in it."""
        self._at = float("-inf")

    def _refresh(self) -> None:
        out = subprocess.run(["squeue", "--noheader", "--array", f"--user={os.getuid()}", "--format=%i|%T|%N"],
                             capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if out.returncode != 0:
            return  # slurmctld busy or restarting: keep the last view and ask again next time
        self._tasks = {}
        for line in out.stdout.splitlines():
            task, state, node = (line.split("|") + ["", ""])[:3]
            self._tasks[task.strip()] = (state.strip(), node.strip())
        self._at = time.monotonic()


SLURM_OOM = OomFacts("SLURM's memory enforcement (job state OUT_OF_MEMORY: the task went over its --mem)",
                     shared=False)


def finished_exit(task: str, run_dir: RunDir) -> RunExit | None:
    """How a task that left the queue ended: from `scontrol show job` while SLURM still knows it, else
    from sacct's accounting where the cluster keeps one, else from whether the worker wrote its result.
    None: SLURM says it has not ended (squeue's answer was stale or failed)."""
    out = subprocess.run(["scontrol", "--oneliner", "show", "job", task], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL)
    state = re.search(r"\bJobState=(\S+)", out.stdout)
    code = re.search(r"\bExitCode=(\d+):(\d+)", out.stdout)
    if out.returncode == 0 and state and code:
        return exit_of(state.group(1), int(code.group(1)), int(code.group(2)))
    accounted = _sacct(task)
    if accounted is not None:
        return exit_of(*accounted)
    return RunExit.exited(0) if run_dir.result_json.exists() else RunExit.lost()


def exit_of(state: str, status: int, sig: int) -> RunExit | None:
    """A task's end from SLURM's state (scontrol's JobState, sacct's State) and its ExitCode status:signal;
    None for a state that is not an end."""
    state = state.split()[0] if state.strip() else state  # sacct writes "CANCELLED by 1000"
    if state not in ENDED_STATES:
        return None
    if state in LOST_STATES:
        return RunExit.lost()
    if state == "TIMEOUT":
        return RunExit.time_limit()
    if state == "OUT_OF_MEMORY":
        return RunExit.out_of_memory(SLURM_OOM)
    if sig:
        return RunExit.cancelled(sig) if state == "CANCELLED" else RunExit.killed(sig)
    return RunExit.exited(status)


def _sacct(task: str) -> tuple[str, int, int] | None:
    """(State, exit status, signal) of a task slurmctld has forgotten, from the accounting database; None
    without sacct, without accounting (slurmdbd), or for a task it does not know."""
    if not shutil.which("sacct"):
        return None
    out = subprocess.run(["sacct", "--noheader", "--parsable2", "--allocations", "--jobs", task,
                          "--format=State,ExitCode"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    match = re.match(r"([^|\n]+)\|(\d+):(\d+)", out.stdout.strip()) if out.returncode == 0 else None
    return (match.group(1), int(match.group(2)), int(match.group(3))) if match else None


class SlurmHandle:
    def __init__(self, task: str, run_dir: RunDir, queue: _Queue):
        self.task, self.run_dir, self.queue = task, run_dir, queue
        self.pid = None
        self.host = f"slurm task {task}"
        self._exit: RunExit | None = None

    def poll(self) -> RunExit | None:
        if self._exit is None and self.queue.state(self.task) is None:
            self._exit = finished_exit(self.task, self.run_dir)
        return self._exit

    def interrupt(self) -> None:
        state = self.queue.state(self.task)
        if state and state[0] == "PENDING":
            _scancel(self.task)  # nothing to checkpoint yet
        else:
            _scancel("--signal=INT", "--full", self.task)  # the worker saves a checkpoint and exits

    def kill(self) -> None:
        _scancel(self.task)

    def peak_rss_mb(self) -> float | None:
        result = read_or_none(self.run_dir.read_result)
        return result.peak_rss_mb if result else None

    def peak_uss_mb(self) -> float | None:
        return None  # the worker measures its own RSS only; the admission goes by that


def _scancel(*args: str) -> None:
    subprocess.run(["scancel", *args], capture_output=True, stdin=subprocess.DEVNULL)


def _orphans(sweep_dir: SweepDir) -> list[str]:
    """This sweep's tasks still in the queue, found by their script's folder. The caller holds the sweep's
    lock, so they were left by a launcher that died without cancelling them (kill -9, a lost login node)."""
    out = subprocess.run(["squeue", "--noheader", "--array", f"--user={os.getuid()}", "--format=%i|%o"],
                         capture_output=True, text=True, stdin=subprocess.DEVNULL)
    folder = f"{sweep_dir.slurm.resolve()}{os.sep}"
    return [task for task, _, script in (line.partition("|") for line in out.stdout.splitlines())
            if script.startswith(folder)]


def _cancel_orphans(sweep_dir: SweepDir) -> None:
    """Like the local launcher's leftover workers: stopped (SIGTERM first, so they checkpoint) before the
    same run dirs are handed to new tasks, which then resume."""
    orphans = _orphans(sweep_dir)
    if orphans:
        _scancel(*orphans)
    deadline = time.monotonic() + ORPHAN_WAIT_S
    while orphans and time.monotonic() < deadline:
        time.sleep(QUEUE_REFRESH_S)
        orphans = _orphans(sweep_dir)
    if orphans:
        raise LauncherConfigError(f"tasks {', '.join(orphans)} of an earlier `sweep run` of this sweep are "
                                  "still in the queue after scancel; wait for them to end, then run again")


class SlurmLauncher(Launcher):
    """Submits every run of the sweep as one array (submit()); start() hands out its tasks."""

    def __init__(self, slurm: SlurmSpec, throttle: int | None = None):
        missing = [cmd for cmd in COMMANDS if not shutil.which(cmd)]
        if missing:
            raise LauncherConfigError(f"--backend slurm needs {', '.join(missing)} on PATH "
                                      "(run the sweep on a SLURM login node)")
        self.slurm, self.throttle = slurm, throttle
        self._queue = _Queue()
        self._unclaimed: dict[str, str] = {}  # run_id -> its array task, submitted, not yet started

    def slots(self, requested: int | None, default: int) -> int:
        return UNLIMITED_SLOTS  # --workers is the array's throttle instead

    def submit(self, runs: list[RunSpec], sweep_dir: SweepDir) -> None:
        """Queue all runs as one array; the scheduler then start()s each, which only hands out its task.
        A refused array stops the sweep before any run (exit 2): it is most often the spec's slurm block."""
        _cancel_orphans(sweep_dir)
        try:
            self._unclaimed.update(self._sbatch(runs, sweep_dir))
        except LaunchError as exc:
            raise LauncherConfigError(str(exc)) from None

    def start(self, run: RunSpec, run_dir: RunDir) -> SlurmHandle:
        task = self._unclaimed.pop(run.run_id, None)
        if task is None:  # a retry: an array of one
            task = self._sbatch([run], SweepDir(run_dir.path.parent))[run.run_id]
        return SlurmHandle(task, run_dir, self._queue)

    def close(self) -> None:
        for task in self._unclaimed.values():  # submitted but never started (the sweep was stopped)
            _scancel(task)

    def _sbatch(self, runs: list[RunSpec], sweep_dir: SweepDir) -> dict[str, str]:
        sub = build_submission(runs, sweep_dir, self.slurm, self.throttle)
        sub.script_path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(sub.run_list_path, sub.run_list)
        write_text_atomic(sub.script_path, sub.script)
        out = subprocess.run(sub.command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if out.returncode != 0:
            message = " ".join(out.stderr.split()) or f"exit {out.returncode}"
            raise LaunchError(f"sbatch refused the array ({sub.script_path}): {message}")
        job = out.stdout.strip().split(";")[0]
        self._queue.forget()
        return {run.run_id: f"{job}_{i}" for i, run in enumerate(runs)}
