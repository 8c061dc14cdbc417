"""<sweep>/index.jsonl: one line per run that ended, holding everything `sweep status` shows of it.

A finished sweep of 10,000 runs is then one file to read instead of three per run (each open costs
tens of microseconds on a loaded or virtualized machine). The index only speeds reading up; the run
folders stay the truth:

- only the launcher holding sweep.lock writes it; each launcher rewrites it at start (keeping the runs
  it skips) and appends a line when a run ends;
- before a run starts again, a {"run_id": ..., "state": "running"} line says "read its files";
- a reader trusts a run's last line only if it is an ended state, skips lines it cannot parse, and
  reads the run's files for every run the index does not vouch for;
- if a line cannot be written, the index is removed, so that it is never wrong, only absent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .rundir import read_bytes, write_text_atomic

ENDED_STATES = frozenset({"succeeded", "failed", "interrupted"})
RESTARTED = "running"


def ended_entries(path: Path) -> dict[str, dict[str, Any]]:
    """run_id -> its last entry, for runs whose last line is an ended state; {} without a readable index."""
    try:
        data = read_bytes(path)
    except OSError:
        return {}
    entries: dict[str, dict[str, Any]] = {}
    for line in data.splitlines():
        try:
            entry = json.loads(line)
            run_id = entry["run_id"]
            state = entry["state"]
        except (ValueError, TypeError, KeyError):
            continue  # a blank line, or one a crash cut short
        if not isinstance(run_id, str):
            continue
        if state in ENDED_STATES:
            entries[run_id] = entry
        else:
            entries.pop(run_id, None)
    return entries


def rewrite(path: Path, entries: list[dict[str, Any]]) -> None:
    """Replace the index with these ended runs' entries, atomically; remove it if that fails."""
    try:
        write_text_atomic(path, "".join(_line(e) for e in entries if e.get("state") in ENDED_STATES))
    except OSError:
        _remove(path)


class IndexWriter:
    """Appends to the index for the launcher; after a failed write it removes the index and stops."""

    def __init__(self, path: Path):
        self.path = path
        self.broken = False

    def ended(self, entry: dict[str, Any]) -> None:
        if entry.get("state") in ENDED_STATES:
            self._append(_line(entry))

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
