"""eval.physics in the report: per group, over seeds, how each seed's final policy fared on the held-out draws
(physics_eval.json), and which group is more robust, with seeds as the units.

Each seed gives three numbers from its draws: the mean return, the 10th percentile (how bad the bad draws get)
and, with a threshold, the fraction of draws whose return reaches it. The draws are repeated measures within a
seed, never units of their own: a group's figure is the mean of its seeds' numbers with Student's t interval
over seeds (stats.mean_interval, the interval of the report's table), and "more robust" compares the seeds'
means over draws through compare.compare (Brunner-Munzel, Holm over the pairs), as the report's verdicts do.
Only groups evaluated on the same draws (equal draws, seed and distribution) are compared.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..sweepdir.files import SweepDir, read_or_none
from ..sweepdir.models import PhysicsEval
from . import compare as comparelib
from . import stats
from .rows import ResultRow
from .sections import Items, Section, Table, Text

LOW_QUANTILE = 10
"""The percentile over draws that says how the policy does on its bad draws."""
METRICS = ("mean", "p10", "fraction")


@dataclass(frozen=True)
class SeedPhysics:
    run_id: str
    seed: int
    mean: float
    """The mean return over the draws."""
    p10: float
    """The 10th percentile of the returns over the draws."""
    fraction: float | None
    """The fraction of draws whose return is at or above the threshold; None without one."""


@dataclass(frozen=True)
class GroupPhysics:
    group: str
    settings: dict[str, Any]
    """physics_eval.json's settings of its seeds: {draws, seed, threshold, randomize}."""
    seeds: tuple[SeedPhysics, ...]

    def values(self, metric: str) -> list[float]:
        return [v for s in self.seeds if (v := getattr(s, metric)) is not None]

    def summary(self, metric: str) -> tuple[float, float | None, float | None] | None:
        """The mean over seeds of one per-seed number and its t interval (none for one seed, as in the report's
        table); None where no seed has it."""
        values = self.values(metric)
        if not values:
            return None
        low, high = stats.mean_interval(values) if len(values) >= 2 else (None, None)
        return float(np.mean(values)), low, high

    @property
    def draws_key(self) -> str:
        """What decides the draws: groups with equal keys met the same physics."""
        return json.dumps({k: v for k, v in self.settings.items() if k != "threshold"}, sort_keys=True)


@dataclass(frozen=True)
class PhysicsReport:
    groups: list[GroupPhysics]
    """In the report's order (best first on the nominal returns)."""
    comparisons: list[comparelib.Comparison]
    """Every pair of groups evaluated on the same draws, over the seeds' means over draws."""

    def section(self) -> Section:
        threshold = any(g.settings.get("threshold") is not None for g in self.groups)
        columns = ("group", "seeds", "draws", "mean over draws", f"{LOW_QUANTILE}th percentile",
                   *(("draws at threshold",) if threshold else ()))
        rows = []
        for g in self.groups:
            cells = [g.group, str(len(g.seeds)), str(g.settings["draws"]),
                     _shown(g.summary("mean")), _shown(g.summary("p10"))]
            if threshold:
                fraction = g.summary("fraction")
                cells.append(f"{_shown(fraction, percent=True)} (≥ {g.settings['threshold']:g})" if fraction
                             else "no threshold")
            rows.append(tuple(cells))
        blocks: list[Text | Table | Items] = [
            Text("Each seed's final policy played one episode on each held-out draw of physics (eval.physics). Per "
                 f"seed: the mean return over its draws, their {LOW_QUANTILE}th percentile"
                 + (", and the fraction of draws whose return reaches the threshold" if threshold else "")
                 + "; each cell is the mean of those per-seed numbers over seeds with Student's t 95% interval "
                 "(seeds are the units, draws repeated measures within a seed; it holds about 95% where the seeds' "
                 "numbers are near normal, less where some seeds fail outright: docs/statistics.md)."),
            Table(columns, tuple(rows), "robustness")]
        if self.comparisons:
            blocks.append(Text("More robust: the seeds' means over draws compared, seeds as the units. "
                               + comparelib.method(self.comparisons)))
            blocks.append(Items(tuple(c.verdict() for c in self.comparisons)))
        elif len(self.groups) > 1:
            blocks.append(Text("No two groups met the same draws (each drew from its own training distribution): "
                               "give eval.physics.randomize to compare them on common physics."))
        return Section("held-out physics", tuple(blocks))

    def csv_columns(self) -> dict[str, dict[str, float | None]]:
        """report.csv's held-out columns by group: physics_<metric>, and its interval's ends."""
        out: dict[str, dict[str, float | None]] = {}
        for g in self.groups:
            columns: dict[str, float | None] = {}
            for metric in METRICS:
                found = g.summary(metric)
                for suffix, value in zip(("", "_ci95_low", "_ci95_high"), found or (None, None, None), strict=True):
                    columns[f"physics_{metric}{suffix}"] = value
            out[g.group] = columns
        return out

    def to_json(self) -> dict[str, Any]:
        def summary(g: GroupPhysics, metric: str) -> dict[str, float | None] | None:
            found = g.summary(metric)
            return None if found is None else dict(zip(("mean", "ci95_low", "ci95_high"), found, strict=True))

        return {"groups": [{"group": g.group, "settings": g.settings,
                            "seeds": [asdict(s) for s in g.seeds],
                            **{metric: summary(g, metric) for metric in METRICS}} for g in self.groups],
                "comparisons": [c.to_json() for c in self.comparisons]}


def _shown(found: tuple[float, float | None, float | None] | None, percent: bool = False) -> str:
    if found is None:
        return "-"
    number = "{:.0%}" if percent else "{:.2f}"
    mean, low, high = found
    if low is None or high is None:
        return number.format(mean)
    return f"{number.format(mean)} [{number.format(low)}, {number.format(high)}]"


def seed_numbers(returns: list[float], threshold: float | None) -> tuple[float, float, float | None]:
    """A seed's mean return over its draws, their 10th percentile (linear interpolation, numpy's default), and
    the fraction of draws at or above the threshold (None without one)."""
    values = np.asarray(returns, dtype=float)
    return (float(values.mean()), float(np.percentile(values, LOW_QUANTILE)),
            None if threshold is None else float(np.mean(values >= threshold)))


def seed_physics(row: ResultRow, evaluation: PhysicsEval) -> SeedPhysics:
    return SeedPhysics(row.run_id, row.seed, *seed_numbers(evaluation.returns, evaluation.settings.get("threshold")))


def read(folder: SweepDir, rows: list[ResultRow], order: list[str]) -> PhysicsReport | None:
    """The succeeded runs' held-out evaluations that match their spec.json, by group in `order`; None when no run
    has one."""
    by_group: dict[str, list[tuple[ResultRow, PhysicsEval]]] = {}
    for row in rows:
        if not row.ok or row.spec is None or row.spec.physics_eval is None:
            continue
        evaluation = read_or_none(folder.run(row.run_id).read_physics_eval)
        if evaluation is not None and evaluation.matches(row.spec) and evaluation.returns:
            by_group.setdefault(row.group, []).append((row, evaluation))
    if not by_group:
        return None
    groups = [GroupPhysics(name, found[0][1].settings, tuple(seed_physics(r, e) for r, e in found))
              for name in [*order, *sorted(set(by_group) - set(order))] if (found := by_group.get(name))]
    pairs = [(a.group, b.group) for a, b in itertools.combinations(groups, 2) if a.draws_key == b.draws_key]
    means = {g.group: g.values("mean") for g in groups}
    return PhysicsReport(groups, comparelib.compare(means, pairs) if pairs else [])
