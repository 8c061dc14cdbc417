"""A sweep's current state, read from its folder alone: per-run progress, stale runs, contention warnings.

Works while a launcher runs (from another terminal) and after it died. Reads only small files and the
head and tail of progress.csv, and imports nothing heavy, so `sweep status --watch` stays cheap.
"""

from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import socket
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import runindex
from .machine import Competition, MachineLoad, measure_once
from .plan import RunSpec
from .results import training_fps
from .rundir import CorruptFileError, RunDir, RunState, RunStatus, SweepDir, read_bytes

STALE = "stale"
"""Display state of a run whose status.json says running but whose launcher or process is gone."""
STATE_ORDER = ("running", STALE, "pending", "failed", "interrupted", "unknown", "succeeded")
FPS_DROP = 0.5  # a run at under half its own early fps, or the sweep's median, is being starved
SPARE_MARGIN = 0.5
"""Cores other processes may take beyond those the runs leave free before they count as competing:
system daemons and the odd shell command do not."""
EARLY_ROWS = 3  # progress rows that define a run's early fps
_HEAD_BYTES = 8192
_TAIL_BYTES = 8192


@dataclass(frozen=True)
class Progress:
    """What progress.csv says: its last row, and the median fps of its first rows."""

    timesteps: int
    fps: float | None
    ep_rew_mean: float | None
    early_fps: float | None
    """None until the file has more rows than EARLY_ROWS (too early to judge a drop)."""


@dataclass(frozen=True)
class RunView:
    run_id: str
    variant: str
    grid: dict[str, Any]
    seed: int
    state: str
    """A RunState value, 'stale', or 'unknown' (status.json corrupt)."""
    attempts: int = 0
    timesteps: int = 0
    total_timesteps: int = 0
    fps: float | None = None
    early_fps: float | None = None
    ep_rew_mean: float | None = None
    final_return: float | None = None
    """result.json's eval_mean_return."""
    training_s: float | None = None
    """An ended run's seconds of training (rollout + update, over its attempts): what its fps counts."""
    eval_s: float | None = None
    """An ended run's seconds in the final evaluation."""
    save_s: float | None = None
    """An ended run's seconds writing checkpoints and the final model."""
    startup_s: float | None = None
    """An ended run's seconds from its last attempt's process start to its first env step."""
    torch_threads: int | None = None
    pid: int | None = None
    host: str | None = None
    problems: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return self.state == RunState.RUNNING.value

    @property
    def done_timesteps(self) -> int:
        if self.state == RunState.SUCCEEDED.value:
            return self.total_timesteps
        return min(self.timesteps, self.total_timesteps)

    @property
    def eta_s(self) -> float | None:
        if not self.active or not self.fps:
            return None
        return max(self.total_timesteps - self.timesteps, 0) / self.fps


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
        view = view_of_entry(indexed[name]) if name in indexed else None
        if view is None:
            run_dir = sweep_dir.run(name)
            if not os.path.exists(run_dir.spec_json):
                continue  # not a run folder
            view = read_run(run_dir, launcher_pid is not None, host)
        runs.append(view)
    runs.sort(key=lambda r: (STATE_ORDER.index(r.state) if r.state in STATE_ORDER else 99, r.run_id))
    warnings = contention_warnings(runs)
    if launcher_pid is not None:  # the machine's load matters only while something runs on it
        running = [r for r in runs if r.state == RunState.RUNNING.value]
        if load1 is None or cores is None:
            machine = measure_once(_sweep_pids(launcher_pid, running, host), len(running))
        else:
            machine = MachineLoad(load1, cores, competition)
        warnings += load_warnings(machine.load1, machine.cores, len(running), machine.competition)
    return SweepView(Path(path), launcher_pid, runs, warnings)


def _sweep_pids(launcher_pid: int, running: list[RunView], host: str) -> list[int]:
    """The processes whose trees are the sweep's own on this host: its launcher and its running runs."""
    return [pid for pid in (launcher_pid, *(r.pid for r in running if r.host == host)) if pid and pid > 0]


def to_json(view: SweepView) -> str:
    """`sweep status --json`: the counts, every run (with eta_s) and the warnings."""
    t = totals(view.runs)
    runs = [{**asdict(r), "eta_s": r.eta_s} for r in view.runs]
    data = {"sweep": str(view.path), "launcher_pid": view.launcher_pid, "counts": view.counts,
            "timesteps_done": t.done, "timesteps_total": t.total, "fps": t.fps, "eta_s": t.eta_s,
            "runs": runs, "warnings": [asdict(w) for w in view.warnings]}
    return json.dumps(data, indent=2) + "\n"


def index_entry(run_dir: RunDir) -> dict[str, Any]:
    """The run's line in index.jsonl, read from its files, as JSON reads it back. Written once the run has
    ended, when whether its launcher lives (which tells running from stale) no longer matters."""
    view = read_run(run_dir, True, socket.gethostname())
    return {**asdict(view), "problems": list(view.problems)}


def view_of_entry(entry: dict[str, Any]) -> RunView | None:
    """The view an index line holds; None if the line is not one (written by another version)."""
    if "training_s" not in entry:
        return None  # written before fps counted training alone: the run's files say what it is now
    try:
        return RunView(**{**entry, "grid": dict(entry["grid"]), "problems": tuple(entry.get("problems", ()))})
    except (TypeError, KeyError, ValueError):
        return None


def lock_holder(sweep_dir: SweepDir) -> int | None:
    """The launcher's pid if sweep.lock is held, else None. Takes the lock only for an instant."""
    try:
        fd = os.open(sweep_dir.lock_file, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 64, 0).decode(errors="replace").strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def read_run(run_dir: RunDir, launcher_alive: bool, host: str) -> RunView:
    """One run's view; a missing or corrupt file is a problem on the row, never an exception."""
    try:
        spec = RunSpec.model_validate_json(read_bytes(run_dir.spec_json))
    except (OSError, ValueError):
        return RunView(run_dir.run_id, "?", {}, -1, "unknown", problems=(f"{run_dir.spec_json}: unreadable",))
    problems: list[str] = []
    status = _read(run_dir.read_status, problems)
    result = _read(run_dir.read_result, problems) or {}
    state = status.state.value if status else ("unknown" if problems else RunState.PENDING.value)
    if status and status.state is RunState.RUNNING and _is_stale(status, launcher_alive, host):
        state = STALE
    progress = _progress_of(run_dir, state, result)
    return RunView(
        run_id=spec.run_id, variant=spec.variant, grid=spec.grid, seed=spec.seed, state=state,
        attempts=status.attempts if status else 0,
        timesteps=int(result.get("timesteps", progress.timesteps if progress else 0)),
        total_timesteps=spec.total_timesteps,
        fps=training_fps(result) if result else (progress.fps if progress else None),
        early_fps=progress.early_fps if progress else None,
        ep_rew_mean=progress.ep_rew_mean if progress else None,
        final_return=_float(result.get("eval_mean_return")),
        **{key: _float(result.get(key)) for key in ("training_s", "eval_s", "save_s", "startup_s")},
        torch_threads=result.get("torch_threads"), pid=status.pid if status else None,
        host=status.host if status else None, problems=tuple(problems))


def _progress_of(run_dir: RunDir, state: str, result: dict[str, Any]) -> Progress | None:
    """A finished run's result.json carries its progress summary; only other runs need progress.csv."""
    if state == RunState.PENDING.value:
        return None
    if "early_fps" in result:
        return Progress(int(result.get("timesteps") or 0), training_fps(result),
                        _float(result.get("ep_rew_mean")), _float(result.get("early_fps")))
    return read_progress(run_dir.progress_csv)


def _read(reader, problems: list[str]):
    try:
        return reader()
    except CorruptFileError as exc:
        problems.append(str(exc))
        return None


def _is_stale(status: RunStatus, launcher_alive: bool, host: str) -> bool:
    if not launcher_alive:
        return True
    return status.host == host and status.pid is not None and not _pid_alive(status.pid)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process with that pid: alive
    return True


def read_progress(path: Path) -> Progress | None:
    """progress.csv's last complete row and early fps, reading at most its first and last 8 KiB."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD_BYTES).decode("utf-8", errors="replace")
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - _TAIL_BYTES))
            tail = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    head_lines = head.splitlines()
    if len(head_lines) < 2 or "\n" not in tail:
        return None
    header = next(csv.reader([head_lines[0]]))
    # A row still being written has no newline yet: only complete lines count.
    last_line = next((ln for ln in reversed(tail[:tail.rfind("\n")].splitlines()) if ln.strip()), "")
    last = _row(header, last_line)
    if last is None or "timesteps" not in last:
        return None
    # Judge a drop only once the last row is past the early ones.
    past_early = len(head_lines) > EARLY_ROWS + 2 or size > _HEAD_BYTES
    early = [_float(r.get("fps")) for r in map(lambda ln: _row(header, ln), head_lines[1:EARLY_ROWS + 1]) if r]
    early = [f for f in early if f]
    return Progress(
        timesteps=int(float(last["timesteps"] or 0)), fps=_float(last.get("fps")),
        ep_rew_mean=_float(last.get("ep_rew_mean")),
        early_fps=statistics.median(early) if past_early and len(early) == EARLY_ROWS else None)


def _row(header: list[str], line: str) -> dict[str, str] | None:
    values = next(csv.reader(io.StringIO(line)), None)
    if not values or len(values) != len(header) or values == header:
        return None
    return dict(zip(header, values))


def _float(value: Any) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def contention_warnings(runs: list[RunView]) -> list[Contention]:
    """Signs that runs fight over cores: extra torch threads, a run slowed to a fraction of its pace."""
    out = [Contention(r.run_id, "threads", f"torch used {r.torch_threads} threads (expected 1)")
           for r in runs if r.torch_threads is not None and r.torch_threads > 1]
    for r in runs:  # a running run's fps is its last iteration's; an ended run's, its average over the run
        if r.fps and r.early_fps and r.fps < FPS_DROP * r.early_fps:
            what = f"{r.fps:.0f} fps" if r.active else f"averaged {r.fps:.0f} fps"
            out.append(Contention(r.run_id, "fps-drop", f"{what}, under half its early {r.early_fps:.0f}"))
    measured = [r for r in runs if r.fps and r.state in (RunState.RUNNING.value, RunState.SUCCEEDED.value)]
    if len(measured) >= 2:
        median = statistics.median(r.fps for r in measured)
        out += [Contention(r.run_id, "fps-median", f"{r.fps:.0f} fps, under half the sweep's median {median:.0f}")
                for r in measured if r.fps < FPS_DROP * median]
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
    unfinished = any(r.state not in (RunState.SUCCEEDED.value, RunState.FAILED.value) for r in runs)
    eta = (total - done) / fps if fps > 0 and unfinished else None
    return Totals(done, total, fps, eta)
