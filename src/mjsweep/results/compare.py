"""Which group is better, and how sure: a test whose false alarms stay at the level it names, P(A > B) with its
interval as the effect size, and a plain verdict.

A pair is separated when a test says so at the report's level, with the family-wise error held over every
pair compared: with fixed seeds, the studentized permutation Brunner-Munzel test of results/brunnermunzel.py
(its null: P(A > B) = 1/2, whatever the groups' spreads) with Holm's step-down over the pairs; with adaptive
seeds, the group-sequential test the seeds were granted by (results/seeding.py, its
verdicts read from seeds.jsonl), since a test for one look would overstate data gathered by looking.
P(A > B) and its score interval (results/effectsize.py) say how large the difference is; they decide nothing.

`matrix()` holds P(row > column) for every ordered pair, and `profiles()` each group's performance profile:
the numbers `sweep report` draws and writes as JSON, so that figure and file never disagree.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from . import brunnermunzel, effectsize, ranktest, stats

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
    """1 - the family-wise error the verdicts hold: 0.95 separates at most one pair in 20 sweeps of equals."""
    p_value: float | None = None
    """The two-sided Brunner-Munzel p-value of this pair alone (fixed seeds)."""
    adjusted: float | None = None
    """p_value adjusted by Holm's step-down over the `family` pairs compared: separated when <= 1 - confidence."""
    family: int = 1
    """How many pairs the error is held over."""
    sequential: str | None = None
    """With adaptive seeds: the group-sequential test's verdict in words (how many looks, where it crossed)."""
    separated: bool = False
    equal: bool = False
    """With adaptive seeds and `equal_within`: the pair was found equal within that margin."""

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    @property
    def reachable(self) -> bool:
        """Whether these seed counts can give a p-value at the level at all (3 vs 3 at 5% cannot: at best 0.1)."""
        return brunnermunzel.smallest_p(self.seeds_a, self.seeds_b) <= self.alpha + 1e-12

    @property
    def seeds_could(self) -> int:
        """The fewest seeds each that could separate this pair even at Holm's strictest step."""
        return brunnermunzel.seeds_to_reach(self.alpha / self.family)

    @property
    def seeds_needed(self) -> int | None:
        """Seeds each that would separate the pair at the spread seen, a rough guide from the interval's
        width; None when separated or no gap is seen."""
        if self.separated or self.p is None or self.low is None or self.high is None or self.p == 0.5:
            return None
        half = (self.high - self.low) / 2
        return max(math.ceil(min(self.seeds_a, self.seeds_b) * (half / abs(self.p - 0.5)) ** 2),
                   min(self.seeds_a, self.seeds_b) + 1, self.seeds_could)

    def verdict(self) -> str:
        seeds = self._seeds()
        if self.p is None or self.low is None or self.high is None:
            return f"{self.a} vs {self.b}: too few seeds to compare ({seeds}; at least 2 each)"
        effect = f"P({self.a} > {self.b}) = {self.p:.2f} [{self.low:.2f}, {self.high:.2f}]"
        if self.separated:
            better, worse, p, low, high = (self.a, self.b, self.p, self.low, self.high) if self.p > 0.5 else \
                (self.b, self.a, 1 - self.p, 1 - self.high, 1 - self.low)
            return f"{better} > {worse} ({self._test()}; P = {p:.2f} [{low:.2f}, {high:.2f}], {seeds})"
        if self.equal:
            return f"{self.a} = {self.b} within the margin ({self._test()}; {effect}, {seeds})"
        said = f"{self.a} vs {self.b}: not separated with {seeds} ({self._test()}; {effect})"
        if self.sequential is None and not self.reachable:
            return (f"{said}; {self.seeds_a} vs {self.seeds_b} seeds cannot separate anything at "
                    f"{self.confidence:.0%}: the smallest p-value they can give is "
                    f"{brunnermunzel.smallest_p(self.seeds_a, self.seeds_b):.2g}; {self.seeds_could} seeds each could")
        if self.seeds_needed is None:
            return said + "; no difference seen: more seeds may never separate them"
        return said + f"; at the spread seen, about {self.seeds_needed} seeds each would separate them"

    def _test(self) -> str:
        if self.sequential is not None:
            return self.sequential
        assert self.p_value is not None and self.adjusted is not None
        if self.family == 1:
            return f"{brunnermunzel.NAME} p = {self.p_value:.2g}"
        return f"{brunnermunzel.NAME} p = {self.p_value:.2g}, {self.adjusted:.2g} after Holm over {self.family} pairs"

    def flipped(self) -> Comparison:
        """The same pair read the other way: P(B > A) = 1 - P(A > B) (ties count half), its interval mirrored;
        the test is symmetric and stays."""
        mirrored = (None, None, None) if self.p is None or self.low is None or self.high is None else \
            (1 - self.p, 1 - self.high, 1 - self.low)
        return replace(self, a=self.b, b=self.a, seeds_a=self.seeds_b, seeds_b=self.seeds_a, p=mirrored[0],
                       low=mirrored[1], high=mirrored[2])

    def _seeds(self) -> str:
        if self.seeds_a == self.seeds_b:
            return f"{self.seeds_a} seed{'s' if self.seeds_a != 1 else ''} each"
        return f"{self.seeds_a} and {self.seeds_b} seeds"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "seeds_needed": self.seeds_needed, "verdict": self.verdict()}


def compare(returns: dict[str, list[float]], pairs: list[tuple[str, str]] | None = None,
            confidence: float = stats.CONFIDENCE, sequential: dict[frozenset[str], SequentialVerdict] | None = None
            ) -> list[Comparison]:
    """One comparison per pair (every pair of groups, in the order given, by default), the family-wise error
    held over the pairs asked for. `sequential`: adaptive seeds' verdicts by pair, which then decide."""
    chosen = pairs if pairs is not None else list(itertools.combinations(returns, 2))
    adjusted = rank_tests(returns, chosen)
    alpha = 1.0 - confidence
    out = []
    for a, b in chosen:
        x, y = returns[a], returns[b]
        if (a, b) not in adjusted:
            out.append(Comparison(a, b, len(x), len(y), None, None, None, confidence))
            continue
        low, high = effectsize.improvement_interval(x, y, confidence=confidence)
        p_value, holm_p = adjusted[(a, b)]
        base = Comparison(a, b, len(x), len(y), stats.probability_of_improvement(x, y), low, high, confidence,
                          p_value=p_value, adjusted=holm_p, family=len(adjusted), separated=holm_p <= alpha + 1e-12)
        said = (sequential or {}).get(frozenset((a, b)))
        out.append(base if said is None else replace(base, sequential=said.words, separated=said.separated,
                                                     equal=said.equal, family=said.family))
    return out


def rank_tests(returns: dict[str, list[float]], pairs: list[tuple[str, str]]
               ) -> dict[tuple[str, str], tuple[float, float]]:
    """Each pair with enough seeds on both sides: its Brunner-Munzel p-value and that p adjusted by Holm's
    step-down over those pairs."""
    tested = [(a, b) for a, b in pairs if len(returns[a]) >= MIN_SEEDS and len(returns[b]) >= MIN_SEEDS]
    p_values = [brunnermunzel.p_value(returns[a], returns[b]) for a, b in tested]
    return dict(zip(tested, zip(p_values, ranktest.holm(p_values), strict=True), strict=True))


def separations(returns: dict[str, list[float]], confidence: float = stats.CONFIDENCE) -> set[frozenset[str]]:
    """The pairs a fixed-seed report separates, every pair of groups tested: what `compare()` decides,
    without the intervals of the effect sizes."""
    tests = rank_tests(returns, list(itertools.combinations(returns, 2)))
    return {frozenset(pair) for pair, (_, holm_p) in tests.items() if holm_p <= 1.0 - confidence + 1e-12}


@dataclass(frozen=True)
class SequentialVerdict:
    """Adaptive seeds' last word on a pair (seeds.jsonl), which a report shows in place of a one-look test."""

    separated: bool
    equal: bool
    family: int
    words: str


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


def matrix(returns: dict[str, list[float]], confidence: float = stats.CONFIDENCE,
           sequential: dict[frozenset[str], SequentialVerdict] | None = None) -> Matrix:
    """Every ordered pair of groups. Each pair is tested and its interval found once, above the diagonal, as
    `compare()` does; below it the same pair is read the other way, so a cell and its mirror always add up to 1."""
    groups = list(returns)
    cells: list[list[Comparison | None]] = [[None] * len(groups) for _ in groups]
    for comparison in compare(returns, confidence=confidence, sequential=sequential):
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
    """The fraction's exact (Clopper-Pearson) interval over the group's runs."""


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


def method(comparisons: list[Comparison]) -> str:
    """What the verdicts rest on, in one sentence for report.md and report.html."""
    first = comparisons[0]
    if first.sequential is not None:
        test = ("the group-sequential test adaptive seeds were granted by (seeds.jsonl, named in "
                "each verdict), its error spent over the looks")
    else:
        test = (f"the two-sided studentized permutation {brunnermunzel.NAME} test of P(A > B) = 1/2 (valid where "
                "the groups' spreads differ; its variance floored at the rank test's)")
    return (f"A pair is separated when {test} rejects at {first.alpha:.0%} with Holm's step-down over the "
            f"{first.family} pairs, so that the chance of any false separation among groups that do not differ is "
            f"at most {first.alpha:.0%}. P(A > B) over seeds, with its {first.confidence:.0%} score interval "
            "(Newcombe's), says how large the difference is.")


def to_markdown(comparisons: list[Comparison]) -> str:
    lines = ["## Comparisons", "", method(comparisons), ""]
    return "\n".join(lines + [f"- {c.verdict()}" for c in comparisons]) + "\n"
