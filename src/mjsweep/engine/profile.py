"""This machine's profile as `sweep bench` kept it, read for `sweep run` and `mjsweep.run`: the runs at once it
measured best (the default workers) and the per-run speed it measured (a dry run's price without measured runs).

One small JSON file under the user's cache folder ($MJSWEEP_CACHE_DIR, else $XDG_CACHE_HOME/mjsweep, else
~/.cache/mjsweep), one entry per machine kind: a recommendation holds only on the CPU model and usable
core count it was measured on, so a copied home folder or a changed CPU affinity falls back to the cores.
Light on purpose: every sweep reads it on start. `bench/recommend.py` writes it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .machine import usable_cores

if TYPE_CHECKING:
    from ..plan.cost import BenchSpeed

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
    """The runs at once when no worker count is given, and why (said to the user; "" for a cluster)."""

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


def read_entries(path: Path) -> dict:
    """The file's entries by machine key; {} for a missing or broken file (it never stops a sweep)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load(cores: int) -> Recommendation | None:
    entry = read_entries(cache_file()).get(machine_key(cores))
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


def workers_for(backend: str) -> DefaultWorkers:
    """Runs at once without a worker count: here, what `sweep bench` measured best on this machine, else the
    usable cores; a cluster launcher sizes itself (no source to say)."""
    if backend != "local":
        return DefaultWorkers(usable_cores(), "")
    return default_workers(usable_cores())


def at_once(workers: int | None, backend: str) -> int | None:
    """Runs at once: `workers`, else the default here; None for a cluster that sizes itself."""
    return workers or (workers_for(backend).workers if backend == "local" else None)


def bench_speed() -> BenchSpeed | None:
    """What `sweep bench` kept for this machine as a per-run speed (it trains PPO on one env per run)."""
    from ..plan.cost import BenchSpeed

    rec = load(usable_cores())
    if rec is None or rec.aggregate_fps <= 0:
        return None
    return BenchSpeed(rec.env, "ppo", 1, rec.aggregate_fps / rec.workers, rec.workers, rec.measured_at)
