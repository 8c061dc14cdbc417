"""Which group is better, and how sure: P(A > B) over seeds with its interval, and a plain verdict.

A pair is separated when the interval of P(A > B) leaves out 0.5 (a coin toss). When it is not, the
verdict says how many seeds each would take at the spread seen: the interval's half-width shrinks as one
over the square root of the seeds, so about n * (half-width / |P - 0.5|)^2 seeds bring it inside the gap.

`matrix()` holds P(row > column) for every ordered pair, and `profiles()` each group's performance profile:
the numbers `sweep report` draws and writes as JSON, so that figure and file never disagree.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from . import stats

MIN_SEEDS = 2
"""Seeds a group needs before it is compared: one seed says nothing of the spread."""
PROFILE_POINTS = 101
"""Returns (tau) at which a performance profile is evaluated, evenly from below the lowest to the highest."""


@dataclass(frozen=True)
class Comparison:
    a: str
    b: str
    seeds_a: int
    seeds_b: int
    p: float | None
    """P(A > B): the chance that a seed of A beats a seed of B (ties half); None with fewer than 2 seeds."""
    low: float | None
    high: float | None
    confidence: float

    @property
    def separated(self) -> bool:
        return self.low is not None and self.high is not None and (self.low > 0.5 or self.high < 0.5)

    @property
    def seeds_needed(self) -> int | None:
        """Seeds each that would separate the pair at the spread seen; None when separated or no gap is seen."""
        if self.separated or self.p is None or self.low is None or self.high is None or self.p == 0.5:
            return None
        half = (self.high - self.low) / 2
        return max(math.ceil(min(self.seeds_a, self.seeds_b) * (half / abs(self.p - 0.5)) ** 2),
                   min(self.seeds_a, self.seeds_b) + 1)

    @property
    def orderings(self) -> int | None:
        """When every seed of one group beat every seed of the other (P = 1 or 0): in how many equally likely
        orders of the seeds chance alone gives that one, C(n + m, n). The bootstrap interval of such a pair is
        [1.00, 1.00] however few the seeds, so the verdict says it while that is fewer than a hundred."""
        if self.p not in (0.0, 1.0):
            return None
        return math.comb(self.seeds_a + self.seeds_b, self.seeds_a)

    def verdict(self) -> str:
        seeds = self._seeds()
        if self.p is None or self.low is None or self.high is None:
            return f"{self.a} vs {self.b}: too few seeds to compare ({seeds}; at least 2 each)"
        if self.separated:
            better, worse, p, low, high = (self.a, self.b, self.p, self.low, self.high) if self.p > 0.5 else \
                (self.b, self.a, 1 - self.p, 1 - self.high, 1 - self.low)
            said = f"{better} > {worse} (P = {p:.2f} [{low:.2f}, {high:.2f}], {seeds})"
            if self.orderings is not None and self.orderings < 100:
                said += (f"; every seed of {better} beat every seed of {worse}, which chance alone does 1 time in "
                         f"{self.orderings}")
            return said
        said = (f"{self.a} vs {self.b}: not separated with {seeds} "
                f"(P({self.a} > {self.b}) = {self.p:.2f} [{self.low:.2f}, {self.high:.2f}])")
        if self.seeds_needed is None:
            return said + "; no difference seen: more seeds may never separate them"
        return said + f"; at the spread seen, about {self.seeds_needed} seeds each would separate them"

    def flipped(self) -> Comparison:
        """The same pair read the other way: P(B > A) = 1 - P(A > B) (ties count half), its interval mirrored."""
        if self.p is None or self.low is None or self.high is None:
            return Comparison(self.b, self.a, self.seeds_b, self.seeds_a, None, None, None, self.confidence)
        return Comparison(self.b, self.a, self.seeds_b, self.seeds_a, 1 - self.p, 1 - self.high, 1 - self.low,
                          self.confidence)

    def _seeds(self) -> str:
        if self.seeds_a == self.seeds_b:
            return f"{self.seeds_a} seed{'s' if self.seeds_a != 1 else ''} each"
        return f"{self.seeds_a} and {self.seeds_b} seeds"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "separated": self.separated, "seeds_needed": self.seeds_needed,
                "verdict": self.verdict()}


def compare(returns: dict[str, list[float]], pairs: list[tuple[str, str]] | None = None,
            confidence: float = stats.CONFIDENCE) -> list[Comparison]:
    """One comparison per pair (every pair of groups, in the order given, by default)."""
    chosen = pairs if pairs is not None else list(itertools.combinations(returns, 2))
    out = []
    for a, b in chosen:
        x, y = returns[a], returns[b]
        if len(x) < MIN_SEEDS or len(y) < MIN_SEEDS:
            out.append(Comparison(a, b, len(x), len(y), None, None, None, confidence))
            continue
        low, high = stats.improvement_interval(x, y, confidence=confidence)
        out.append(Comparison(a, b, len(x), len(y), stats.probability_of_improvement(x, y), low, high, confidence))
    return out


@dataclass(frozen=True)
class Matrix:
    """P(row > column) for every ordered pair of groups, in the order given (the report's: best first)."""

    groups: list[str]
    seeds: list[int]
    cells: list[list[Comparison | None]]
    """cells[i][j] compares groups[i] (a) with groups[j] (b); None on the diagonal."""
    confidence: float

    @property
    def comparable(self) -> list[str]:
        """The groups with enough seeds to be compared."""
        return [g for g, n in zip(self.groups, self.seeds, strict=True) if n >= MIN_SEEDS]

    def comparisons(self) -> list[Comparison]:
        """Every pair once, each group against those after it: what `compare()` gives for every pair."""
        upper = (self.cells[i][j] for i in range(len(self.groups)) for j in range(i + 1, len(self.groups)))
        return [c for c in upper if c is not None]

    def to_json(self) -> dict[str, Any]:
        def field(name: str) -> list[list[Any]]:
            return [[None if c is None else getattr(c, name) for c in row] for row in self.cells]

        return {"groups": self.groups, "seeds": self.seeds, "confidence": self.confidence, "p": field("p"),
                "low": field("low"), "high": field("high"), "separated": field("separated")}


def matrix(returns: dict[str, list[float]], confidence: float = stats.CONFIDENCE) -> Matrix:
    """Every ordered pair of groups. Each pair is bootstrapped once, above the diagonal, as `compare()` does;
    below it the same pair is read the other way, so a cell and its mirror always add up to 1."""
    groups = list(returns)
    cells: list[list[Comparison | None]] = [[None] * len(groups) for _ in groups]
    for comparison in compare(returns, confidence=confidence):
        i, j = groups.index(comparison.a), groups.index(comparison.b)
        cells[i][j], cells[j][i] = comparison, comparison.flipped()
    return Matrix(groups, [len(returns[g]) for g in groups], cells, confidence)


@dataclass(frozen=True)
class Profile:
    """One group's performance profile: the fraction of its runs whose return is above each tau."""

    group: str
    seeds: int
    fraction: list[float]
    low: list[float]
    high: list[float]
    """The fraction's percentile interval over stratified-bootstrap resamples of the group's runs."""


@dataclass(frozen=True)
class Profiles:
    taus: list[float]
    groups: list[Profile]
    confidence: float

    def to_json(self) -> dict[str, Any]:
        return {"taus": self.taus, "confidence": self.confidence, "groups": [asdict(p) for p in self.groups]}


def profiles(returns: dict[str, list[float]], points: int = PROFILE_POINTS,
             confidence: float = stats.CONFIDENCE) -> Profiles:
    """The performance profile of every group with enough seeds, all on the same taus: from a little below
    the lowest return (where every run is above) to the highest (where none is)."""
    chosen = {g: r for g, r in returns.items() if len(r) >= MIN_SEEDS}
    if not chosen:
        return Profiles([], [], confidence)
    lowest = min(min(r) for r in chosen.values())
    highest = max(max(r) for r in chosen.values())
    margin = 0.05 * (highest - lowest) or 1.0  # all returns equal: still a step from 1 to 0
    taus: list[float] = np.linspace(lowest - margin, highest, points).tolist()
    out = []
    for group, values in chosen.items():
        fraction, low, high = stats.performance_profile(values, taus, confidence=confidence)
        out.append(Profile(group, len(values), fraction.tolist(), low.tolist(), high.tolist()))
    return Profiles(taus, out, confidence)


def pick(names: list[str], groups: list[str], variants: dict[str, str]) -> list[tuple[str, str]] | None:
    """The pairs `sweep report --compare NAMES` asks for: every pair for none, else the two named, each a
    group as the report names it or a variant with one group (`variants`: group -> its variant).
    ValueError with the groups there are if a name matches none or more than one."""
    if not names:
        return None
    if len(names) != 2:
        raise ValueError(f"--compare takes no group or two, not {len(names)}")
    chosen = []
    for name in names:
        found = [g for g in groups if g == name] or [g for g in groups if variants[g] == name]
        if len(found) != 1:
            raise ValueError(f"--compare {name!r}: {'no' if not found else 'more than one'} group of that name; "
                             f"the groups: {', '.join(groups)}")
        chosen.append(found[0])
    return [(chosen[0], chosen[1])]


def to_markdown(comparisons: list[Comparison]) -> str:
    lines = ["## Comparisons", "", f"P(A > B) over seeds with its {comparisons[0].confidence:.0%} interval "
             "(stratified bootstrap); a pair is separated when the interval leaves out 0.5.", ""]
    return "\n".join(lines + [f"- {c.verdict()}" for c in comparisons]) + "\n"
