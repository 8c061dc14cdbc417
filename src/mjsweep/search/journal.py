"""trials.jsonl: the study's append-only record, the source of truth a resumed search is rebuilt from.

A line is a trial's whole state after a change (asked, then complete, pruned or failed); the last line of a
trial wins. Only the launcher writes it, one line at a time and synced (sweepdir/journal.py), so a
launcher killed at any moment leaves every trial it asked for on record; a line cut short by a kill is
skipped on reading.
"""

from __future__ import annotations

from pathlib import Path

from ..sweepdir.journal import Journal
from ..sweepdir.models import TrialRecord


def _at(path: Path) -> Journal[TrialRecord]:
    return Journal(path, TrialRecord, lambda r: r.key)


def lines(path: Path) -> list[TrialRecord]:
    """Every line, in the order written: the sequence of asks and tells Optuna's samplers replay."""
    return _at(path).lines()


def replay(path: Path) -> list[TrialRecord]:
    """Every trial's latest state, in the order the trials were first asked."""
    return _at(path).replay()
