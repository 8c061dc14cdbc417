"""<sweep>/index.jsonl: one line per run that ended, holding everything `sweep status` shows of it.

A finished sweep of 10,000 runs is then one file to read instead of three per run (each open costs
tens of microseconds on a loaded or virtualized machine). The index only speeds reading up; the run
folders stay the truth:

- only the launcher holding sweep.lock writes it; each launcher rewrites it at start (keeping the runs
  it skips) and appends a line when a run ends;
- before a run starts again, a {"run_id": ..., "state": "running"} line says "read its files";
- a reader trusts a run's last line only if it is an ended state, skips lines it cannot parse, and
  reads the run's files for every run the index does not vouch for (a line with keys this version does
  not know, from a later schema, or without training_s (written when fps counted wall time) vouches for
  nothing, and the next `sweep run` writes it again);
- if a line cannot be written, the index is removed, so that it is never wrong, only absent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, ValidationError

from .files import read_bytes, write_text_atomic
from .models import SCHEMA, DisplayState, FileModel

ENDED_STATES = frozenset({DisplayState.SUCCEEDED, DisplayState.FAILED, DisplayState.INTERRUPTED, DisplayState.PRUNED})
RESTARTED = DisplayState.RUNNING


class IndexEntry(FileModel):
    """An ended run's line: everything `sweep status` shows of it (results.runview.index_entry builds it
    from the run's files). Its own model, so that a change to what the screen shows does not change the file."""

    # The index is only a cache: a line this version does not fully understand is not trusted, and the
    # run's files are read instead.
    model_config = ConfigDict(extra="forbid")

    run_id: str
    variant: str
    grid: dict[str, Any]
    seed: int
    state: DisplayState
    """A RunState in the file; on screen also stale, or unknown (status.json corrupt)."""
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
    fell_back: str | None = None
    """resume.json's line: an attempt that could not resume from its newest checkpoint, and what it did."""
    cause: str | None = None
    """Why a run that failed or was interrupted ended so (status.json's cause); None in lines written before."""


def ended_entries(path: Path) -> dict[str, IndexEntry | None]:
    """run_id -> its last entry, for runs whose last line is an ended state; None where that line is one
    this version cannot vouch for (the run's files tell); {} without a readable index."""
    try:
        data = read_bytes(path)
    except OSError:
        return {}
    entries: dict[str, IndexEntry | None] = {}
    for line in data.splitlines():
        entry = _entry(line)
        said = (entry.run_id, entry.state) if entry else _run_and_state(line)
        if said is None:
            continue  # a blank line, or one a crash cut short
        run_id, state = said
        if state in ENDED_STATES:
            entries[run_id] = entry
        else:
            entries.pop(run_id, None)
    return entries


def _entry(line: bytes) -> IndexEntry | None:
    # One pass of pydantic's JSON parser per line: `sweep status` reads 10,000 of them.
    try:
        entry = IndexEntry.from_json(line)
    except ValidationError:
        return None
    if entry.schema_version > SCHEMA or "training_s" not in entry.model_fields_set:
        return None  # a later version's, or written when fps counted wall time: the run's files tell
    return entry


def _run_and_state(line: bytes) -> tuple[str, Any] | None:
    """What any line says, whatever else it holds: its run and that run's state."""
    try:
        data = json.loads(line)
        run_id, state = data["run_id"], data["state"]
    except (ValueError, TypeError, KeyError):
        return None
    return (run_id, state) if isinstance(run_id, str) else None


def rewrite(path: Path, entries: list[IndexEntry]) -> None:
    """Replace the index with these ended runs' entries, atomically; remove it if that fails."""
    try:
        write_text_atomic(path, "".join(_line(e.to_file()) for e in entries if e.state in ENDED_STATES))
    except OSError:
        _remove(path)


class IndexWriter:
    """Appends to the index for the launcher; after a failed write it removes the index and stops."""

    def __init__(self, path: Path):
        self.path = path
        self.broken = False

    def ended(self, entry: IndexEntry) -> None:
        if entry.state in ENDED_STATES:
            self._append(_line(entry.to_file()))

    def restarting(self, run_id: str) -> None:
        """Called before the run's worker starts: from then on its files, not its old entry, are the truth."""
        self._append(_line({"run_id": run_id, "state": RESTARTED}))

    def _append(self, line: str) -> None:
        if self.broken:
            return
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                data = line.encode("utf-8")
                while data:
                    data = data[os.write(fd, data):]
                os.fsync(fd)  # on disk before the status.json it stands for changes
            finally:
                os.close(fd)
        except OSError:
            self.broken = True
            _remove(self.path)


def _remove(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass  # absent already, or the folder refuses: the run files stay the truth either way


def _line(entry: dict[str, Any]) -> str:
    return json.dumps(entry, separators=(",", ":"), default=str) + "\n"
