"""Aggregation over seeds: one row per variant x grid point."""

from __future__ import annotations

import csv
import io
import statistics
from dataclasses import dataclass
from typing import Any

from .results import ResultRow


@dataclass(frozen=True)
class GroupRow:
    group: str
    variant: str
    grid: dict[str, Any]
    runs: int
    succeeded: int
    failed: int
    mean_return: float | None
    std_return: float | None
    """Sample standard deviation over seeds (0 with a single seed)."""
    mean_fps: float | None


def aggregate(rows: list[ResultRow]) -> list[GroupRow]:
    """Group runs that differ only by seed; best mean return first, groups without results last."""
    groups: dict[str, list[ResultRow]] = {}
    for row in rows:
        groups.setdefault(row.group, []).append(row)
    out = []
    for name, members in groups.items():
        ok = [m for m in members if m.ok]
        returns = [float(m.result["eval_mean_return"]) for m in ok]
        fps = [float(m.result["fps"]) for m in ok if "fps" in m.result]
        out.append(GroupRow(
            group=name, variant=members[0].variant, grid=members[0].grid, runs=len(members),
            succeeded=len(ok), failed=sum(1 for m in members if m.state == "failed"),
            mean_return=statistics.fmean(returns) if returns else None,
            std_return=(statistics.stdev(returns) if len(returns) > 1 else 0.0) if returns else None,
            mean_fps=statistics.fmean(fps) if fps else None,
        ))
    return sorted(out, key=lambda g: (g.mean_return is None, -(g.mean_return or 0.0), g.group))


CSV_FIELDS = ("variant", "grid", "runs", "succeeded", "failed", "mean_return", "std_return", "mean_fps")


def to_csv(groups: list[GroupRow]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for g in groups:
        grid = " ".join(f"{k}={v}" for k, v in g.grid.items())
        writer.writerow([g.variant, grid, g.runs, g.succeeded, g.failed, _num(g.mean_return),
                         _num(g.std_return), _num(g.mean_fps)])
    return buf.getvalue()


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"
