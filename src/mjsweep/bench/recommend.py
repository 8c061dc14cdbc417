"""The `--workers` value `sweep bench` measured best for this machine, kept for `sweep run`'s default.

One small JSON file under the user's cache folder ($MJSWEEP_CACHE_DIR, else $XDG_CACHE_HOME/mjsweep, else
~/.cache/mjsweep), one entry per machine kind: a recommendation holds only on the CPU model and usable
core count it was measured on, so a copied home folder or a changed CPU affinity falls back to the cores.
Light on purpose: `sweep run` imports it on every start.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..sweepdir.files import write_text_atomic

FILE_NAME = "bench.json"


@dataclass(frozen=True)
class Recommendation:
    workers: int
    machine: str
    """The key it holds for: CPU model and usable cores."""
    measured_at: str
    """ISO time of the bench that measured it."""
    env: str
    aggregate_fps: float
    """The aggregate env-steps/s the bench measured at `workers`."""


@dataclass(frozen=True)
class DefaultWorkers:
    """What `sweep run` uses when --workers is not given, and why (printed for the user)."""

    workers: int
    source: str


def cache_file() -> Path:
    base = os.environ.get("MJSWEEP_CACHE_DIR")
    if base:
        return Path(base) / FILE_NAME
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "mjsweep" / FILE_NAME


def machine_key(cores: int) -> str:
    return f"{cpu_model()} x {cores} usable cores"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "unknown CPU"


def save(workers: int, cores: int, env: str, aggregate_fps: float) -> Path:
    """Record the recommendation for this machine kind, keeping other machines' entries."""
    path = cache_file()
    entries = _read(path)
    key = machine_key(cores)
    entries[key] = asdict(Recommendation(workers, key, datetime.now(UTC).isoformat(timespec="seconds"),
                                         env, round(aggregate_fps, 1)))
    path.parent.mkdir(parents=True, exist_ok=True)
    # Atomic: a concurrent `sweep run` reads the old file or the new one, never half.
    write_text_atomic(path, json.dumps(entries, indent=2) + "\n")
    return path


def load(cores: int) -> Recommendation | None:
    entry = _read(cache_file()).get(machine_key(cores))
    try:
        rec = Recommendation(**entry) if isinstance(entry, dict) else None
    except TypeError:  # written by another version: ignore it rather than fail a sweep
        return None
    return rec if rec and isinstance(rec.workers, int) and rec.workers >= 1 else None


def default_workers(cores: int) -> DefaultWorkers:
    """The measured recommendation for this machine if there is one, else one run per usable core."""
    rec = load(cores)
    if rec is None:
        return DefaultWorkers(cores, f"{cores} usable cores; `sweep bench` measures the best value here")
    return DefaultWorkers(rec.workers, f"measured best by `sweep bench` on {rec.measured_at[:10]} "
                                       f"({cache_file()})")


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
