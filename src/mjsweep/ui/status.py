"""A sweep's current state, read from its folder alone: per-run progress, stale runs, contention warnings.

Works while a launcher runs (from another terminal) and after it died. Reads index.jsonl and, for runs it
does not vouch for, the run folders (runview.py), so `sweep status --watch` stays cheap.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..engine.machine import Competition, MachineLoad, measure_once
from ..results.experiments import read_plan
from ..results.runview import RunView, read_run, view_of
from ..sweepdir import index as runindex
from ..sweepdir.files import SweepDir
from ..sweepdir.lock import lock_holder
from ..sweepdir.models import DisplayState

STATE_ORDER = (DisplayState.RUNNING, DisplayState.STALE, DisplayState.PENDING, DisplayState.FAILED,
               DisplayState.INTERRUPTED, DisplayState.PRUNED, DisplayState.UNKNOWN, DisplayState.SUCCEEDED)
FPS_DROP = 0.5  # a run at under half its own early fps, or the sweep's median, is being starved
SPARE_MARGIN = 0.5
"""Cores other processes may take beyond those the runs leave free before they count as competing:
system daemons and the odd shell command do not."""


@dataclass(frozen=True)
class Totals:
    done: int
    total: int
    fps: float
    """Sum over running runs: the sweep's current throughput."""
    eta_s: float | None


@dataclass(frozen=True)
class Contention:
    """One sign that runs fight over cores; (subject, kind) identifies it across refreshes."""

    subject: str
    """A run id, or 'machine'."""
    kind: str
    """threads | fps-drop | fps-median | load"""
    message: str

    def __str__(self) -> str:
        return f"{self.subject}: {self.message}"


@dataclass(frozen=True)
class SweepView:
    path: Path
    launcher_pid: int | None
    """The pid in sweep.lock while a launcher holds it; None when no launcher runs."""
    runs: list[RunView]
    warnings: list[Contention] = field(default_factory=list)
    earlier: int = 0
    """Run folders of an earlier spec that the last plan does not include, left out of `runs`."""

    @property
    def counts(self) -> dict[str, int]:
        found = {r.state for r in self.runs}
        return {s: sum(1 for r in self.runs if r.state == s) for s in STATE_ORDER if s in found}


def read_sweep(path: Path, load1: float | None = None, cores: int | None = None,
               competition: Competition | None = None) -> SweepView:
    """The sweep's state now. load1, cores and competition stand for this machine's 1-minute load, usable
    cores and what other processes take now; left out, they are measured (only while a launcher runs)."""
    sweep_dir = SweepDir(path)
    launcher_pid = lock_holder(sweep_dir)
    host = socket.gethostname()
    indexed = runindex.ended_entries(sweep_dir.index_jsonl)
    runs = []
    for name in sweep_dir.folder_names():
        entry = indexed.get(name)
        view = view_of(entry) if entry else None
        if view is None:
            run_dir = sweep_dir.run(name)
            if not os.path.exists(run_dir.spec_json):
                continue  # not a run folder
            view = read_run(run_dir, launcher_pid is not None, host)
        runs.append(view)
    runs, earlier = _of_the_plan(sweep_dir, runs)
    runs.sort(key=lambda r: (STATE_ORDER.index(r.state) if r.state in STATE_ORDER else 99, r.run_id))
    warnings = contention_warnings(runs)
    if launcher_pid is not None:  # the machine's load matters only while something runs on it
        running = [r for r in runs if r.state == DisplayState.RUNNING]
        if load1 is None or cores is None:
            machine = measure_once(_sweep_pids(launcher_pid, running, host), len(running))
        else:
            machine = MachineLoad(load1, cores, competition)
        warnings += load_warnings(machine.load1, machine.cores, len(running), machine.competition)
    return SweepView(Path(path), launcher_pid, runs, warnings, earlier)


def _of_the_plan(sweep_dir: SweepDir, runs: list[RunView]) -> tuple[list[RunView], int]:
    """The runs of the last plan (plan.json) and how many others the folder holds: runs of an earlier spec,
    which a status of this plan does not count. Without plan.json (a search, an older folder), every run."""
    record = read_plan(sweep_dir)
    if record is None or not record.runs:
        return runs, 0
    planned = set(record.runs)
    kept = [r for r in runs if r.run_id in planned]
    return kept, len(runs) - len(kept)


def _sweep_pids(launcher_pid: int, running: list[RunView], host: str) -> list[int]:
    """The processes whose trees are the sweep's own on this host: its launcher and its running runs."""
    return [pid for pid in (launcher_pid, *(r.pid for r in running if r.host == host)) if pid and pid > 0]


def to_json(view: SweepView) -> str:
    """`sweep status --json`: the counts, every run (with eta_s) and the warnings."""
    t = totals(view.runs)
    runs = [{**r.model_dump(mode="json", exclude={"schema_version"}), "eta_s": r.eta_s} for r in view.runs]
    data = {"sweep": str(view.path), "launcher_pid": view.launcher_pid, "counts": view.counts,
            "earlier_spec_runs": view.earlier,
            "timesteps_done": t.done, "timesteps_total": t.total, "fps": t.fps, "eta_s": t.eta_s,
            "runs": runs, "warnings": [asdict(w) for w in view.warnings]}
    return json.dumps(data, indent=2) + "\n"


def contention_warnings(runs: list[RunView]) -> list[Contention]:
    """Signs that runs fight over cores: extra torch threads, a run slowed to a fraction of its pace."""
    out = [Contention(r.run_id, "threads", f"torch used {r.torch_threads} threads (expected 1)")
           for r in runs if r.torch_threads is not None and r.torch_threads > 1]
    for r in runs:  # a running run's fps is its last iteration's; an ended run's, its average over the run
        if r.fps and r.early_fps and r.fps < FPS_DROP * r.early_fps:
            what = f"{r.fps:.0f} fps" if r.active else f"averaged {r.fps:.0f} fps"
            out.append(Contention(r.run_id, "fps-drop", f"{what}, under half its early {r.early_fps:.0f}"))
    # Each algorithm against its own median: a SAC run's updates make it several times slower than PPO's.
    # A sweep of several algorithms has `algo` in its grid; one of a single algorithm compares all its runs.
    by_algo: dict[str | None, dict[str, float]] = {}
    for r in runs:
        if r.fps and r.state in (DisplayState.RUNNING, DisplayState.SUCCEEDED):
            by_algo.setdefault(r.grid.get("algo"), {})[r.run_id] = r.fps
    for measured in by_algo.values():
        if len(measured) >= 2:
            median = statistics.median(measured.values())
            out += [Contention(run_id, "fps-median", f"{fps:.0f} fps, under half the sweep's median {median:.0f}")
                    for run_id, fps in measured.items() if fps < FPS_DROP * median]
    return out


def load_warnings(load1: float, cores: int, running: int = 0,
                  competition: Competition | None = None) -> list[Contention]:
    """Other processes compete with the runs when the 1-minute load is above the cores (or above this
    sweep's own running runs when it runs more than one per core, as `sweep bench` may recommend) and,
    where `competition` measured what they take now, they take more than the cores the runs leave free."""
    if load1 <= max(cores, running):
        return []
    if competition is not None and competition.cores <= max(cores - running, 0) + SPARE_MARGIN:
        return []  # the load average still remembers work that has ended
    message = f"load {load1:.1f} (1-minute average) is above its {cores} usable cores"
    if competition is None:
        return [Contention("machine", "load", f"{message}: other processes compete with the runs")]
    names = ", ".join(f"{c.name} (pid {c.pid}) {c.cores:.1f}" for c in competition.named)
    return [Contention("machine", "load", f"{message} and other processes take {competition.cores:.1f} of them now"
                       + (f": {names}" if names else ""))]


def totals(runs: list[RunView]) -> Totals:
    done = sum(r.done_timesteps for r in runs)
    total = sum(r.total_timesteps for r in runs)
    fps = sum((r.fps or 0.0 for r in runs if r.active), 0.0)
    unfinished = any(r.state not in (DisplayState.SUCCEEDED, DisplayState.FAILED) for r in runs)
    eta = (total - done) / fps if fps > 0 and unfinished else None
    return Totals(done, total, fps, eta)
