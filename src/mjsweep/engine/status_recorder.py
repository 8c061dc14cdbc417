"""The one writer of a sweep's status.json files while it runs, and of their lines in index.jsonl."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import os_words
from ..results.runview import index_entry
from ..sweepdir.files import RunDir, SweepDir, read_json, read_or_none
from ..sweepdir.index import ENDED_STATES, IndexWriter
from ..sweepdir.models import DisplayState, RunState, RunStatus
from .memory import MeasuredPeaks


class StatusRecorder:
    """A write that fails (a full disk) is reported through `warn(run_id, message)`, and the sweep goes on."""

    def __init__(self, sweep_dir: SweepDir, warn: Callable[[str, str], None]):
        self.sweep_dir = sweep_dir
        self._warn = warn
        self._index = IndexWriter(sweep_dir.index_jsonl)

    def previous(self, run_dir: RunDir) -> RunStatus | None:
        """What an earlier attempt recorded, or None (no status, or a corrupt one)."""
        return read_or_none(run_dir.read_status)

    def measured_peaks(self) -> MeasuredPeaks:
        """Peak memory of every run that recorded one, in earlier invocations too, by algorithm."""
        peaks = MeasuredPeaks()
        for run_dir in self.sweep_dir.run_dirs():
            if (status := self.previous(run_dir)) and (status.peak_uss_mb or status.peak_rss_mb):
                peaks.add(_algo_of(run_dir), status.peak_uss_mb, status.peak_rss_mb)
        return peaks

    def restarting(self, run_id: str) -> None:
        """Before a run starts again: readers must go back to its files (runindex.RESTARTED)."""
        self._index.restarting(run_id)

    def record(self, run_dir: RunDir, status: RunStatus) -> str | None:
        """Write status.json and, for an ended run, its index line. None once written; else why not (also
        said through `warn`): a run whose end is not on record has not succeeded for the next `sweep run`."""
        try:
            run_dir.write_status(status)
        except OSError as exc:
            why = f"cannot write {run_dir.status_json}: {os_words(exc)}"
            self._warn(run_dir.run_id, why)
            return why
        if DisplayState.of(status.state) in ENDED_STATES:
            self._index.ended(index_entry(run_dir))
        if status.state == RunState.SUCCEEDED:
            try:
                run_dir.keep_final_checkpoint()  # the older ones were for a resume that will not come
            except OSError as exc:
                self._warn(run_dir.run_id, f"cannot delete its older checkpoints: {os_words(exc)}")
        return None


def _algo_of(run_dir: RunDir) -> str:
    """The run's algorithm from its spec.json; PPO for files written before the key (or unreadable)."""
    algo = (read_or_none(lambda: read_json(run_dir.spec_json)) or {}).get("algo", "ppo")
    return algo if isinstance(algo, str) else "ppo"
