"""trials.jsonl: the study's append-only record, the source of truth a resumed search is rebuilt from.

A line is a trial's whole state after a change (asked, then complete, pruned or failed); the last line of a
trial wins. Only the launcher writes it, one line at a time and synced, so a launcher killed at any moment
leaves every trial it asked for on record; a line cut short by a kill is skipped on reading.
"""

from __future__ import annotations

import json
import os
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

RECORD_SCHEMA = 1


class TrialState(str, Enum):
    RUNNING = "running"    # asked; some of its seeds have not ended
    COMPLETE = "complete"  # every seed ended, at least one succeeded: it has its objective
    PRUNED = "pruned"      # stopped as behind the other trials of its study
    FAILED = "failed"      # no seed succeeded, or its robot could not be built


class TrialRecord(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True)

    schema_version: int = Field(default=RECORD_SCHEMA, alias="schema")
    study: str
    """The study's key: the variant family and grid point it searches (one study per pair)."""
    number: int
    """The trial's number within its study, from 0."""
    params: dict[str, Any]
    runs: list[str]
    """Its runs' ids, one per seed."""
    state: TrialState
    value: float | None = None
    """The objective (complete), or the evaluation it was judged on (pruned)."""
    seeds_ok: int = 0
    note: str = ""

    @property
    def key(self) -> tuple[str, int]:
        return self.study, self.number


def append(path: Path, record: TrialRecord) -> None:
    line = json.dumps(record.model_dump(mode="json", by_alias=True)) + "\n"
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
            record = TrialRecord.model_validate(json.loads(line))
        except (ValueError, ValidationError):
            continue  # the last line of a launcher killed mid-write
        latest[record.key] = record
    return list(latest.values())
