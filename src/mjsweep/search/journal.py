"""trials.jsonl: the study's append-only record, the source of truth a resumed search is rebuilt from.

A line is a trial's whole state after a change (asked, then complete, pruned or failed); the last line of a
trial wins. Only the launcher writes it, one line at a time and synced (sweepdir.files.append_line), so a
launcher killed at any moment leaves every trial it asked for on record; a line cut short by a kill is
skipped on reading.
"""

from __future__ import annotations

from pathlib import Path

from ..sweepdir.files import read_lines
from ..sweepdir.models import TrialRecord


def lines(path: Path) -> list[TrialRecord]:
    """Every line, in the order written: the sequence of asks and tells Optuna's samplers replay."""
    return read_lines(path, TrialRecord)


def replay(path: Path) -> list[TrialRecord]:
    """Every trial's latest state, in the order the trials were first asked."""
    latest: dict[tuple[str, int], TrialRecord] = {}
    for record in lines(path):
        latest[record.key] = record
    return list(latest.values())
