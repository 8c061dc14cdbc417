"""One run's state as `sweep status`, the live view and the index show it: its files as read
(results.read_row) summarized with its progress. A missing or corrupt file is a problem on the view,
never an exception.

Reads only small files and the head and tail of progress.csv, and imports nothing heavy.
"""

from __future__ import annotations

import csv
import io
import os
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..sweepdir.files import RunDir, RunState, RunStatus
from ..sweepdir.models import RunResult
from .rows import read_row

STALE = "stale"
"""Display state of a run whose status.json says running but whose launcher or process is gone."""
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



def read_run(run_dir: RunDir, launcher_alive: bool, host: str) -> RunView:
    """One run's view; a missing or corrupt file is a problem on the row, never an exception."""
    row = read_row(run_dir)
    spec, status, result = row.spec, row.status, row.result
    if spec is None:
        return RunView(run_dir.run_id, "?", {}, -1, "unknown", problems=(f"{run_dir.spec_json}: unreadable",))
    state = row.state
    if status and status.state is RunState.RUNNING and _is_stale(status, launcher_alive, host):
        state = STALE
    progress = _progress_of(run_dir, state, result)
    return RunView(
        run_id=spec.run_id, variant=spec.variant, grid=spec.grid, seed=spec.seed, state=state,
        attempts=status.attempts if status else 0,
        timesteps=result.timesteps if result and result.timesteps is not None
        else (progress.timesteps if progress else 0),
        total_timesteps=spec.total_timesteps,
        fps=result.training_fps if result else (progress.fps if progress else None),
        early_fps=progress.early_fps if progress else None,
        ep_rew_mean=progress.ep_rew_mean if progress else None,
        final_return=result.eval_mean_return if result else None,
        training_s=result.training_s if result else None, eval_s=result.eval_s if result else None,
        save_s=result.save_s if result else None, startup_s=result.startup_s if result else None,
        torch_threads=result.torch_threads if result else None, pid=status.pid if status else None,
        host=status.host if status else None, problems=row.problems)


def _progress_of(run_dir: RunDir, state: str, result: RunResult | None) -> Progress | None:
    """A finished run's result.json carries its progress summary; only other runs need progress.csv."""
    if state == RunState.PENDING.value:
        return None
    if result is not None and "early_fps" in result.model_fields_set:
        return Progress(result.timesteps or 0, result.training_fps, result.ep_rew_mean, result.early_fps)
    return read_progress(run_dir.progress_csv)


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
    # The early rows are the first that trained: the rows of an off-policy run's warm-up (learning_starts,
    # no updates: train_s 0) run at a pace training never has.
    warmup = 0
    for line in head_lines[1:]:
        if (row := _row(header, line)) is None or _float(row.get("train_s")) != 0.0:
            break
        warmup += 1
    # Judge a drop only once the last row is past the early ones.
    past_early = len(head_lines) - warmup > EARLY_ROWS + 2 or size > _HEAD_BYTES
    rows = (_row(header, line) for line in head_lines[1 + warmup:EARLY_ROWS + 1 + warmup])
    early = [fps for r in rows if r and (fps := _float(r.get("fps")))]
    return Progress(
        timesteps=int(float(last["timesteps"] or 0)), fps=_float(last.get("fps")),
        ep_rew_mean=_float(last.get("ep_rew_mean")),
        early_fps=statistics.median(early) if past_early and len(early) == EARLY_ROWS else None)


def _row(header: list[str], line: str) -> dict[str, str] | None:
    values = next(csv.reader(io.StringIO(line)), None)
    if not values or len(values) != len(header) or values == header:
        return None
    return dict(zip(header, values, strict=True))


def _float(value: Any) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None

