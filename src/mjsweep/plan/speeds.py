"""The speeds a sweep folder's succeeded runs measured, for plan/cost.py: per (variant, n_envs, algo), the
median training fps and the median seconds besides training, and how many of them ran at once."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from statistics import median

from ..sweepdir.files import SweepDir, read_or_none
from ..sweepdir.models import RunResult, RunSpec, RunStatus, succeeded
from .cost import EarlierRuns, Speed
from .order import FpsKey, fps_key


def earlier_runs(sweep_dir: SweepDir, runs: Iterable[RunSpec]) -> EarlierRuns | None:
    """What the given runs that succeeded in sweep_dir measured; None when none did. Unreadable files are
    left out."""
    fps: dict[FpsKey, list[float]] = {}
    overhead: dict[FpsKey, list[float]] = {}
    spans: list[tuple[datetime, datetime]] = []
    hosts: dict[str, None] = {}
    for run in runs:
        run_dir = sweep_dir.run(run.run_id)
        status, result = read_or_none(run_dir.read_status), read_or_none(run_dir.read_result)
        if not succeeded(status, result) or result is None or not result.training_fps:
            continue
        key = fps_key(run)
        fps.setdefault(key, []).append(result.training_fps)
        overhead.setdefault(key, []).append(overhead_s(result))
        if result.host:
            hosts[result.host] = None
        if status is not None and (span := _span(status)) is not None:
            spans.append(span)
    if not fps:
        return None
    speeds = {key: Speed(median(values), median(overhead[key])) for key, values in fps.items()}
    return EarlierRuns(speeds, most_at_once(spans), tuple(hosts))


def overhead_s(result: RunResult) -> float:
    """A run's seconds besides its training steps: start-up, saving, the final and periodic evaluations."""
    return sum(s or 0.0 for s in (result.startup_s, result.save_s, result.eval_s, result.periodic_eval_s))


def most_at_once(spans: list[tuple[datetime, datetime]]) -> int | None:
    """The most spans that overlap at one time; None without any."""
    if not spans:
        return None
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])  # an end before a start
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


def _span(status: RunStatus) -> tuple[datetime, datetime] | None:
    try:
        start = datetime.fromisoformat(status.started_at or "")
        end = datetime.fromisoformat(status.ended_at or "")
    except ValueError:
        return None
    # Files of any version compare: a time written without a zone is UTC, as now_iso() writes it.
    start, end = (t if t.tzinfo else t.replace(tzinfo=UTC) for t in (start, end))
    return (start, end) if start <= end else None
