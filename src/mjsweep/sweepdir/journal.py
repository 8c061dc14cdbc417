"""The append-only records a sweep's kind keeps (trials.jsonl, confirm.jsonl, seeds.jsonl, pbt.jsonl) as one
type: lines appended one at a time and synced before anything acts on them, read back in the order written,
a line cut short by a kill mid-write skipped; a keyed record's replay is each key's latest line."""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Generic, TypeVar

from .files import SweepDir, append_line, read_lines
from .models import ConfirmRecord, FileModel, SeedRound, TrialRecord

R = TypeVar("R", bound=FileModel)


class Journal(Generic[R]):
    """One append-only record of `model` lines; `key` names the thing a line is the latest state of (a trial,
    a confirmation), None for a record whose every line counts (seeds' rounds, PBT's segments)."""

    def __init__(self, path: Path, model: type[R], key: Callable[[R], Hashable] | None = None):
        self.path, self.model, self.key = path, model, key

    def append(self, record: R) -> None:
        """On record (synced) before it returns: the caller acts on it only then. A line a kill cut short stays
        on a line of its own, skipped on reading, rather than swallowing this one."""
        if _torn(self.path):
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write("\n")
        append_line(self.path, record)

    def lines(self) -> list[R]:
        """Every line, in the order written."""
        return read_lines(self.path, self.model)

    def replay(self) -> list[R]:
        """Each key's latest line, in the order the keys first appeared."""
        assert self.key is not None, "a record without keys has no replay: read its lines"
        latest: dict[Hashable, R] = {}
        for record in self.lines():
            latest[self.key(record)] = record
        return list(latest.values())


def _torn(path: Path) -> bool:
    """Whether the file's last line lacks its newline."""
    try:
        with open(path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) != b"\n"
    except OSError:  # no file, or an empty one
        return False


def trials(folder: SweepDir) -> Journal[TrialRecord]:
    """trials.jsonl: a search's trials, a line per change of one (asked, then complete, pruned or failed)."""
    return Journal(folder.trials_jsonl, TrialRecord, lambda r: r.key)


def confirmations(folder: SweepDir) -> Journal[ConfirmRecord]:
    """confirm.jsonl: a search's top trials run again on fresh seeds, a line per change of one."""
    return Journal(folder.confirm_jsonl, ConfirmRecord, lambda r: r.key)


def seed_rounds(folder: SweepDir) -> Journal[SeedRound]:
    """seeds.jsonl: adaptive seeds' decisions, one line a round."""
    return Journal(folder.seeds_jsonl, SeedRound)
