"""The studentized permutation Brunner-Munzel test (Neubert and Brunner 2007) behind every verdict.

"A > B" claims stochastic superiority: P(A > B) > 1/2, a seed of A more likely than not to end above a seed of
B (ties half). The rank test of ranktest.py is exact for "both groups' returns come from one distribution",
not for "P(A > B) = 1/2": two groups with P = 1/2 and different spreads are separated by it more often than its
level. This test studentizes the estimate of P by its own standard error, which each group's spread enters
apart (Brunner and Munzel 2000), so its null is P(A > B) = 1/2 whatever the spreads and shapes:

    T = (P_hat - 1/2) / sqrt(S_a / (n_a n_b^2) + S_b / (n_b n_a^2)) = n_a n_b (P_hat - 1/2) / sqrt(n_a S_a + n_b S_b)

S_a being the sample variance of A's placements (for each seed of A, the seeds of B below it, ties half), and
S_b that of B's. Where that variance term is above variance_floor (below), T is
scipy.stats.brunnermunzel(b, a)'s statistic (scipy's counts B over A: the opposite sign).

The p-value is the share of the splits of the pooled returns into n_a and n_b whose |T| is at least the one
seen, T computed afresh for each split (Neubert and Brunner's studentized permutation distribution): every split
when there are at most EXACT_SPLITS of them (up to 10 vs 10 seeds), else SAMPLED_SPLITS random splits from a
generator seeded by the seed counts, so the same returns always give the same p. Where both groups' returns come
from one distribution, every split is equally likely and the test is exact at every seed count; where only
P(A > B) = 1/2 holds, T's permutation distribution tends to the same standard normal as T itself, so the test
holds its level asymptotically, and `sweep bench --stats` measures it at 2-20 seeds (docs/statistics.md).
At few seeds, where the group with fewer seeds is also the wider, T's tails are heavier than its permutation
distribution's; the p-value is then guard_p's (Student's t with min(n_a, n_b) - 1 degrees of freedom) where
that is larger. Where one group's seeds either all land above or all below the other's with chance 2^(1 - n)
(the other group's returns nearly one value), no test that separates a complete order can hold 5% with n <= 5
seeds on that side (docs/statistics.md); with the floor below, this test separates no complete order of n vs n
seeds below 6 each, nor of 4 seeds against fewer than 28.

T is a function of the pooled ranks' split alone, so without ties its permutation distribution depends on the
seed counts only, and is computed once per pair of counts.

The variance term n_a S_a + n_b S_b is taken as at least n_a n_b (n_a + n_b + 1) / 12 (variance_floor): what
n_a^2 n_b^2 Var(P_hat) is where both groups come from one distribution, the rank test's variance. Placements
estimate their own spread worst exactly where T matters: where A's few seeds all land near one end of B's, their
placements barely vary and the unfloored T grows without bound (4 seeds of a wide group against 12 of a narrow
one were separated 9.5% of the time at 5%), though a wide group's next seed could land anywhere. Floored, T is
at most the rank test's z (largest: a complete separation, still the most extreme split), and near a complete
order it is that z; elsewhere it is Brunner and Munzel's. The t guard then bounds what few seeds on the smaller
side can claim: a complete separation of n vs n seeds passes 5% only from 6 seeds each (p = 0.035; 5 vs 5 gives
0.059), and Holm's first step over 15 pairs (6 groups) only from 11 (smallest_p, seeds_to_reach). Every tied
return gives T = 0.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

NAME = "bounded Brunner-Munzel"
"""The test's name, as verdicts and seeds.jsonl say it. "Brunner-Munzel" in seeds.jsonl is this test before its
variance was floored (variance_floor): T unbounded at a complete order, the t guard the same."""
EXACT_SPLITS = 200_000
"""Splits up to which every one is counted (10 vs 10 has 184,756); above, SAMPLED_SPLITS are drawn."""
SAMPLED_SPLITS = 20_000
_CHUNK = 20_000
"""Splits whose T is computed at once (memory: a few MB)."""


def variance_floor(n_a: int, n_b: int) -> float:
    """The least n_a S_a + n_b S_b is taken as: n_a^2 n_b^2 times P_hat's variance where both groups come from one
    distribution, (n_a + n_b + 1) / (12 n_a n_b) (see the module's docstring)."""
    return n_a * n_b * (n_a + n_b + 1) / 12


def largest(n_a: int, n_b: int) -> float:
    """|T| of a complete separation, the largest |T| n_a vs n_b seeds can give."""
    return n_a * n_b / 2 / math.sqrt(variance_floor(n_a, n_b))


def guard_df(n_a: int, n_b: int) -> int:
    """The t guard's degrees of freedom: the smaller group's seeds less one (Hsu's choice for Welch's test)."""
    return min(n_a, n_b) - 1


def _studentized(members: np.ndarray, group_of: np.ndarray, tie_counts: np.ndarray) -> np.ndarray:
    """T of A over B for each split: `members` splits x N, True for a seed in A; `group_of[i]` the tie group
    (ascending by value) of pooled return i; `tie_counts` each tie group's size."""
    n_a = int(members[0].sum())
    n_b = members.shape[1] - n_a
    onehot = np.zeros((members.shape[1], len(tie_counts)))
    onehot[np.arange(members.shape[1]), group_of] = 1.0
    in_a = members.astype(float) @ onehot  # splits x tie groups: A's seeds in each
    in_b = tie_counts[None, :] - in_a
    # A seed's placement: the other side's seeds below it, ties half.
    place_a = np.cumsum(in_b, axis=1) - in_b / 2
    place_b = np.cumsum(in_a, axis=1) - in_a / 2
    sum_a = (in_a * place_a).sum(axis=1)
    sum_b = (in_b * place_b).sum(axis=1)
    s_a = ((in_a * place_a ** 2).sum(axis=1) - sum_a ** 2 / n_a) / (n_a - 1)
    s_b = ((in_b * place_b ** 2).sum(axis=1) - sum_b ** 2 / n_b) / (n_b - 1)
    variance = np.maximum(n_a * np.maximum(s_a, 0.0) + n_b * np.maximum(s_b, 0.0), variance_floor(n_a, n_b))
    return (sum_a - n_a * n_b / 2) / np.sqrt(variance)


def _ties(pooled: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    _, group_of, tie_counts = np.unique(pooled, return_inverse=True, return_counts=True)
    return group_of.ravel(), tie_counts.astype(float)


def statistic(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """T of A over B (positive where A tends higher); both sides need 2 seeds or more."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n_a, n_b = len(x), len(y)
    if n_a < 2 or n_b < 2:
        raise ValueError("the Brunner-Munzel test needs at least two values on each side")
    # Pair by pair (a few hundred pairs at most): each seed's placement among the other side's seeds.
    wins = (x[:, None] > y[None, :]) + 0.5 * (x[:, None] == y[None, :])
    place_a, place_b = wins.sum(axis=1), n_a - wins.sum(axis=0)
    variance = n_a * place_a.var(ddof=1) + n_b * place_b.var(ddof=1)
    return float((place_a.sum() - n_a * n_b / 2) / math.sqrt(max(variance, variance_floor(n_a, n_b))))


def exhaustive(n_a: int, n_b: int) -> bool:
    """Whether every split of n_a vs n_b seeds is counted (else SAMPLED_SPLITS are drawn)."""
    return math.comb(n_a + n_b, n_a) <= EXACT_SPLITS


@lru_cache(maxsize=64)
def _splits(n_a: int, n_b: int) -> np.ndarray:
    """The splits the p-value counts, splits x (n_a + n_b), True for a seed in A: every one, or SAMPLED_SPLITS
    drawn from a generator seeded by the seed counts."""
    total = n_a + n_b
    chosen: np.ndarray
    if exhaustive(n_a, n_b):
        chosen = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(total), n_a)),
                             dtype=np.int16).reshape(-1, n_a)
    else:
        rng = np.random.default_rng([n_a, n_b])
        chosen = np.argsort(rng.random((SAMPLED_SPLITS, total)), axis=1)[:, :n_a]
    members = np.zeros((len(chosen), total), dtype=bool)
    np.put_along_axis(members, chosen.astype(np.intp), True, axis=1)
    members.flags.writeable = False
    return members


def _null_sizes(pooled: np.ndarray, n_a: int) -> np.ndarray:
    """|T| over the splits, ascending."""
    group_of, tie_counts = _ties(pooled)
    members = _splits(n_a, len(pooled) - n_a)
    out = np.concatenate([np.abs(_studentized(members[i:i + _CHUNK], group_of, tie_counts))
                          for i in range(0, len(members), _CHUNK)])
    return np.sort(out)


@lru_cache(maxsize=1024)
def untied_null(n_a: int, n_b: int) -> np.ndarray:
    """|T| over the splits of n_a vs n_b returns without ties, ascending: the same for every such sample."""
    out = _null_sizes(np.arange(n_a + n_b, dtype=float), n_a)
    out.flags.writeable = False
    return out


def null_sizes(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> np.ndarray:
    """|T| over the splits of these returns, ascending (cached where they have no ties)."""
    pooled = np.concatenate([np.asarray(a, dtype=float), np.asarray(b, dtype=float)])
    if len(np.unique(pooled)) == len(pooled):
        return untied_null(len(a), len(pooled) - len(a))
    return _null_sizes(pooled, len(a))


def tail(null: np.ndarray, size: float, exact: bool) -> float:
    """The p-value of |T| = size against the sorted null |T|s: the share at least as large; sampled splits
    count the returns' own split too ((1 + k) / (1 + M)), which keeps the p-value valid."""
    at_least = len(null) - int(np.searchsorted(null, size * (1 - 1e-12) - 1e-12, side="left"))
    return at_least / len(null) if exact else (1 + at_least) / (1 + len(null))


def guard_p(size: float, n_a: int, n_b: int) -> float:
    """The two-sided p-value of |T| = size from Student's t with min(n_a, n_b) - 1 degrees of freedom (Hsu's
    conservative choice for Welch's test): where the group with fewer seeds is also the wider, its few
    placements estimate its spread badly, T's tails are heavier than its permutation distribution's, and this
    is the larger p."""
    from scipy.special import stdtr  # Student's t distribution function: scipy.stats.t.cdf without its checks

    return float(2 * stdtr(guard_df(n_a, n_b), -size))


def p_value(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """The two-sided p-value of "P(A > B) = 1/2": the studentized permutation p-value (see the module's
    docstring), or guard_p's where that is larger."""
    size = abs(statistic(a, b))
    return max(tail(null_sizes(a, b), size, exhaustive(len(a), len(b))), guard_p(size, len(a), len(b)))


def smallest_p(n_a: int, n_b: int) -> float:
    """The smallest p-value n_a vs n_b seeds can give: a complete separation (|T| = largest), 2 of the
    C(n_a + n_b, n_a) splits, or with sampled splits 1 / (1 + SAMPLED_SPLITS) at best, or its t guard's p."""
    splits = math.comb(n_a + n_b, n_a)
    permuted = min(1.0, 2 / splits) if splits <= EXACT_SPLITS else max(2 / splits, 1 / (1 + SAMPLED_SPLITS))
    return max(permuted, guard_p(largest(n_a, n_b), n_a, n_b))


def seeds_to_reach(level: float) -> int:
    """The fewest seeds each side that can give a p-value at or below `level`."""
    n = 2
    while smallest_p(n, n) > level:
        n += 1
    return n
