"""The `--workers` value `sweep bench` measured best for this machine, kept for `sweep run`'s default: written
here, read by the engine (engine/profile.py, where the file's format lives)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from ..engine.profile import Recommendation, cache_file, machine_key, read_entries
from ..sweepdir.files import write_text_atomic


def save(workers: int, cores: int, env: str, aggregate_fps: float) -> Path:
    """Record the recommendation for this machine kind, keeping other machines' entries."""
    import json

    path = cache_file()
    entries = read_entries(path)
    key = machine_key(cores)
    entries[key] = asdict(Recommendation(workers, key, datetime.now(UTC).isoformat(timespec="seconds"),
                                         env, round(aggregate_fps, 1)))
    path.parent.mkdir(parents=True, exist_ok=True)
    # Atomic: a concurrent `sweep run` reads the old file or the new one, never half.
    write_text_atomic(path, json.dumps(entries, indent=2) + "\n")
    return path
