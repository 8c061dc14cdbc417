"""Whether a sweep's seeds can separate anything before it trains: the smallest p-value the comparison test can
give at a seed count against the family-wise level (Holm's first step, the level over every pair), and for
adaptive seeds the first look whose share of the error a complete separation could cross.

Every number of the test comes from results' own functions (`smallest_p` below is the one call into the test),
so this module keeps telling the truth when the test changes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import brunnermunzel, sequential

if TYPE_CHECKING:
    pass

MOST_SEEDS = 1000
"""Where the search for a seed count that can separate gives up (no level a spec may ask for needs more)."""


def smallest_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided p-value the comparison test can give with n_a against n_b seeds."""
    return brunnermunzel.smallest_p(n_a, n_b)


def pairs_of(groups: int) -> int:
    """The pairs a report compares among `groups`: the family its error is held over."""
    return groups * (groups - 1) // 2


@dataclass(frozen=True)
class FixedReach:
    """What `seeds` seeds a group can show among `pairs` pairs at family-wise error `alpha`."""

    seeds: int
    pairs: int
    alpha: float
    smallest: float
    """The smallest p-value `seeds` vs `seeds` can give."""
    fewest: int
    """The fewest seeds a group needs for any pair to be separable."""

    @property
    def level(self) -> float:
        """What the smallest p-value must reach: Holm's first step, alpha over every pair."""
        return self.alpha / self.pairs

    @property
    def can_separate(self) -> bool:
        return self.smallest <= self.level + 1e-12


def fixed_reach(seeds: int, groups: int, confidence: float) -> FixedReach | None:
    """None with fewer than two groups: nothing is compared."""
    if groups < 2:
        return None
    pairs, alpha = pairs_of(groups), 1.0 - confidence
    fewest = next(n for n in range(1, MOST_SEEDS + 1) if smallest_p(n, n) <= alpha / pairs + 1e-12)
    return FixedReach(seeds, pairs, alpha, smallest_p(seeds, seeds), fewest)


@dataclass(frozen=True)
class AdaptiveReach:
    """Where adaptive seeds (min to max each) can first separate a pair among `pairs` at error `alpha`."""

    min: int
    max: int
    pairs: int
    alpha: float
    first_look: int | None
    """The seeds each at the first look where a complete separation crosses its boundary; None: no look can."""
    fewest_max: int
    """The smallest max (with this min) for which some look can."""


def adaptive_reach(least: int, most: int, groups: int, confidence: float) -> AdaptiveReach | None:
    """None with fewer than two groups. A pair's first separation is tested at alpha / pairs (Holm's first
    step); a look at n seeds each can separate only when the test's smallest p-value there is within the error
    the group-sequential design may have spent by then and the boundary there is one a complete separation
    reaches (results/sequential.py's first_boundary, which decides every look until the first that can cross:
    its t guard is taken at the boundary's own permutation chance, which can put it beyond every |T|)."""
    if groups < 2:
        return None
    pairs, alpha = pairs_of(groups), 1.0 - confidence
    first = _first_look(least, most, alpha / pairs)
    fewest = most if first is not None else \
        next(m for m in range(most + 1, MOST_SEEDS + 1) if _first_look(least, m, alpha / pairs) is not None)
    return AdaptiveReach(least, most, pairs, alpha, first, fewest)


def _first_look(least: int, most: int, level: float) -> int | None:
    for n in range(least, most + 1):
        share = sequential.spent(level, sequential.information(n, n, most))
        if smallest_p(n, n) <= share + 1e-12 and math.isfinite(sequential.first_boundary(n, n, share)):
            return n
    return None


def warning(reach: FixedReach | AdaptiveReach | None) -> str | None:
    """The one line that says a design cannot separate anything, and the seeds that could; None when it can."""
    if isinstance(reach, FixedReach) and not reach.can_separate:
        return (f"{reach.seeds} seeds a group cannot separate {_pairs(reach.pairs)} at "
                f"{1 - reach.alpha:.0%}: the smallest p-value {reach.seeds} vs {reach.seeds} seeds can give is "
                f"{reach.smallest:.2g}, above the {_level(reach.alpha, reach.pairs)}; {reach.fewest} seeds each "
                f"can (seeds: {reach.fewest})")
    if isinstance(reach, AdaptiveReach) and reach.first_look is None:
        return (f"adaptive seeds up to max {reach.max} cannot separate {_pairs(reach.pairs)} at "
                f"{1 - reach.alpha:.0%}: at no look from {reach.min} to {reach.max} seeds each can the smallest "
                f"p-value reach the error spent by then at the {_level(reach.alpha, reach.pairs)}; "
                f"max: {reach.fewest_max} can")
    return None


def first_look_words(reach: AdaptiveReach) -> str:
    """When adaptive seeds can first separate a pair, for the dry run."""
    if reach.first_look is None:
        return f"no look up to max {reach.max} can separate a pair (max: {reach.fewest_max} can)"
    return (f"a separation first becomes possible at the look with {reach.first_look} seeds each "
            f"({_level(reach.alpha, reach.pairs)})")


def _pairs(pairs: int) -> str:
    """What is compared: 'the two groups', or 'any of the 6 pairs of groups'."""
    return "the two groups" if pairs == 1 else f"any of the {pairs} pairs of groups"


def _level(alpha: float, pairs: int) -> str:
    """The level a first separation is tested at: alpha, or alpha over the pairs (Holm's first step)."""
    if pairs == 1:
        return f"level {alpha:.2g}"
    return f"level {alpha:.2g} / {pairs} pairs = {alpha / pairs:.2g} (Holm's first step)"
