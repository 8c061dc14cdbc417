"""Which group is better, and how sure: P(A > B) over seeds with its interval, and a plain verdict.

A pair is separated when the interval of P(A > B) leaves out 0.5 (a coin toss). When it is not, the
verdict says how many seeds each would take at the spread seen: the interval's half-width shrinks as one
over the square root of the seeds, so about n * (half-width / |P - 0.5|)^2 seeds bring it inside the gap.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass
from typing import Any

from . import stats


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

    def verdict(self) -> str:
        seeds = self._seeds()
        if self.p is None or self.low is None or self.high is None:
            return f"{self.a} vs {self.b}: too few seeds to compare ({seeds}; at least 2 each)"
        if self.separated:
            better, worse, p, low, high = (self.a, self.b, self.p, self.low, self.high) if self.p > 0.5 else \
                (self.b, self.a, 1 - self.p, 1 - self.high, 1 - self.low)
            return f"{better} > {worse} (P = {p:.2f} [{low:.2f}, {high:.2f}], {seeds})"
        said = (f"{self.a} vs {self.b}: not separated with {seeds} "
                f"(P({self.a} > {self.b}) = {self.p:.2f} [{self.low:.2f}, {self.high:.2f}])")
        if self.seeds_needed is None:
            return said + "; no difference seen: more seeds may never separate them"
        return said + f"; at the spread seen, about {self.seeds_needed} seeds each would separate them"

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
        if len(x) < 2 or len(y) < 2:
            out.append(Comparison(a, b, len(x), len(y), None, None, None, confidence))
            continue
        low, high = stats.improvement_interval(x, y, confidence=confidence)
        out.append(Comparison(a, b, len(x), len(y), stats.probability_of_improvement(x, y), low, high, confidence))
    return out


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
