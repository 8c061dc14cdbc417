"""One run's state as `sweep status`, the live view and the index show it: its files as read
(results.read_row) summarized with its progress. A missing or corrupt file is a problem on the view,
never an exception.

Reads only small files and the head and tail of progress.csv, and imports nothing heavy.
"""

from __future__ import annotations

import os
import socket

from ..sweepdir.csvfiles import Progress, read_progress
from ..sweepdir.files import RunDir
from ..sweepdir.index import IndexEntry
from ..sweepdir.models import DisplayState, RunResult, RunState, RunStatus
from .rows import read_row


class RunView(IndexEntry):
    """An index line's fields (sweepdir.index.IndexEntry), as status, the live view and the index show a run,
    with what the screen derives from them."""

    @property
    def active(self) -> bool:
        return self.state == DisplayState.RUNNING

    @property
    def done_timesteps(self) -> int:
        if self.state == DisplayState.SUCCEEDED:
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
        return RunView(run_id=run_dir.run_id, variant="?", grid={}, seed=-1, state=DisplayState.UNKNOWN,
                       problems=(f"{run_dir.spec_json}: unreadable",))
    state = row.state
    if status and status.state is RunState.RUNNING and _is_stale(status, launcher_alive, host):
        state = DisplayState.STALE
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
        host=status.host if status else None, problems=row.problems, fell_back=run_dir.fell_back(),
        cause=status.cause if status else None)  # as index lines of any version say it


def _progress_of(run_dir: RunDir, state: DisplayState, result: RunResult | None) -> Progress | None:
    """A finished run's result.json carries its progress summary; only other runs need progress.csv."""
    if state == DisplayState.PENDING:
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


def index_entry(run_dir: RunDir) -> IndexEntry:
    """An ended run's index line, from its files. Written once the run has ended, when whether its launcher
    lives (which tells running from stale) no longer matters."""
    return IndexEntry.model_construct(**dict(read_run(run_dir, True, socket.gethostname())))  # checked as a view


def view_of(entry: IndexEntry) -> RunView:
    """The view an index line vouches for, without reading the run's files."""
    return RunView.model_construct(**dict(entry))  # checked when the line was read: 10,000 of these
