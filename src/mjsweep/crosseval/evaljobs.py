"""Cross-evaluation's processes, run by engine/scheduler as a sweep's trainings are: one run per policy, started
by the local launcher, so that they get its slots, retries of a killed process, timeouts and memory guard.

The runs live in a scratch sweep folder of their own (a temporary folder: their job file, log, status.json and
index.jsonl, gone once they ended); what they are for, the pairs' results, goes to the sweep's cross/."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from ..engine.scheduler import Event, EventKind, Scheduler, SchedulerOptions
from ..launchers.local import LocalLauncher
from ..sweepdir.files import RunDir, SweepDir, write_model
from ..sweepdir.models import RunSpec
from .pairs import PolicyJob, read_result

JOB_JSON = "job.json"
"""A cross-evaluation run's job, in its scratch run folder (crosseval/evaluator.py reads it)."""
GRACE_S = 5.0
"""Between the interrupt and the kill when evaluations are stopped: an evaluation keeps nothing half-done."""
POLL_S = 0.2


def evaluation_command(run_dir: Path) -> list[str]:
    return [sys.executable, "-m", "mjsweep.crosseval.evaluator", str(run_dir / JOB_JSON)]


def run_jobs(todo: list[PolicyJob], episodes: int, deterministic: bool, workers: int, say: Callable[[str], None],
             command: Callable[[Path], list[str]] = evaluation_command, retries: int = 1) -> list[str]:
    """Each job in a one-thread process of its own, at most `workers` at once; the run ids whose evaluation
    failed, each with its last output line. Raises KeyboardInterrupt once a Ctrl-C (or SIGTERM) stopped them.
    `command` is the job's command line for its scratch run folder (tests swap in stand-ins)."""
    by_id = {job.run.run_id: job for job in todo}
    with tempfile.TemporaryDirectory(prefix="mjsweep-cross-") as tmp:
        scratch = SweepDir(Path(tmp))
        runs = [_job_run(scratch.run(job.run.run_id), job, episodes, deterministic) for job in todo]
        lines = _Lines(scratch, say)
        options = SchedulerOptions(max_workers=workers, retries=retries, grace_s=GRACE_S, poll_s=POLL_S)
        with LocalLauncher(command=command) as launcher:
            outcome = Scheduler(launcher, scratch, options, on_event=lines.event,
                                completed=lambda run_dir: _evaluated(by_id[run_dir.run_id], episodes)).run(runs)
    if outcome.stopped:
        raise KeyboardInterrupt
    return lines.failed


def _job_run(run_dir: RunDir, job: PolicyJob, episodes: int, deterministic: bool) -> RunSpec:
    """The job's scratch run folder (its spec and job file) and the run the scheduler starts for it: on the
    CPU, in one slot, whatever the training used."""
    run = job.run.model_copy(update={"device": "cpu", "cpus": 1})
    run_dir.path.mkdir(parents=True)
    write_model(run_dir.spec_json, run)
    trained = RunDir(Path(job.run_dir))
    stats = trained.vecnormalize
    data = {"model": str(trained.model_zip), "vecnormalize": str(stats) if stats.is_file() else None,
            "algo": job.run.algo, "seed": job.run.seed, "episodes": episodes, "deterministic": deterministic,
            "targets": [{**asdict(t), "result": str(t.result)} for t in job.targets]}
    (run_dir.path / JOB_JSON).write_text(json.dumps(data), encoding="utf-8")
    return run


def _evaluated(job: PolicyJob, episodes: int) -> bool:
    """Every pair of the job has its result, over `episodes` episodes."""
    return all(t.evaluated_by(read_result(t.result), episodes) for t in job.targets)


class _Lines:
    """What the runs say: each "cross: " line of a run's log once an attempt ended, and a line per failure."""

    def __init__(self, scratch: SweepDir, say: Callable[[str], None]):
        self.scratch, self.say = scratch, say
        self.failed: list[str] = []
        self._read: dict[str, int] = {}
        """Characters of each log already said: a retry appends to the same log."""

    def event(self, event: Event) -> None:
        if event.kind in (EventKind.WARNING, EventKind.WAITING_MEMORY):
            self.say(f"cross: {event.message}")
        if event.run_id is None or event.kind not in (EventKind.SUCCEEDED, EventKind.FAILED, EventKind.RETRYING,
                                                      EventKind.INTERRUPTED):
            return
        lines = self._new_lines(self.scratch.run(event.run_id))
        for line in lines:
            if line.startswith("cross: "):
                self.say(line)
        if event.kind is EventKind.RETRYING:
            self.say(f"cross: {event.run_id}: {event.message}; evaluating it again")
        elif event.kind is EventKind.FAILED:
            self.failed.append(f"{event.run_id}: {lines[-1] if lines else event.message}")

    def _new_lines(self, run_dir: RunDir) -> list[str]:
        try:
            text = run_dir.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        start, self._read[run_dir.run_id] = self._read.get(run_dir.run_id, 0), len(text)
        return text[start:].splitlines()
