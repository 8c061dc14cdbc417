"""trials.jsonl: the study's append-only record, the source of truth a resumed search is rebuilt from.

A line is a trial's whole state after a change (asked, then complete, pruned or failed); the last line of a
trial wins. Only the launcher writes it, one line at a time and synced, so a launcher killed at any moment
leaves every trial it asked for on record; a line cut short by a kill is skipped on reading.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import ValidationError

from ..sweepdir.models import TrialRecord


def append(path: Path, record: TrialRecord) -> None:
    line = json.dumps(record.to_file()) + "\n"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def replay(path: Path) -> list[TrialRecord]:
    """Every trial's latest state, in the order the trials were first asked."""
    latest: dict[tuple[str, int], TrialRecord] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    for line in lines:
        try:
            record = TrialRecord.from_json(line)
        except (ValueError, ValidationError):
            continue  # the last line of a launcher killed mid-write
        latest[record.key] = record
    return list(latest.values())
