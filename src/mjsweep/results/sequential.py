"""A group-sequential Brunner-Munzel test: one pair's studentized statistic looked at after every round of
adaptive seeds, with the error spent over the looks so that the chance of ever separating two groups with
P(A > B) = 1/2 stays at or below the level however many looks come.

At a look with n_a and n_b returns, the statistic is |T|, T the Brunner-Munzel statistic of
results/brunnermunzel.py (P(A > B) - 1/2 over its own standard error, each group's spread entering apart). Where
both groups' returns come from one continuous distribution, the ranks of all their seeds are a uniformly random
order, so the joint law of |T| over the looks depends on the looks' sizes alone: it is simulated once per
sequence of sizes (each seed's draws from a generator seeded by its index, so the same looks always give the
same boundaries, and a look's boundary does not change as later looks are added) and every sweep with those
sizes reuses it. Where only P(A > B) = 1/2 holds and the spreads differ, T at each look tends to the same
standard normal, and its increments over the looks to the same independent ones (T is asymptotically a
standardized sum), so the boundaries hold the level asymptotically; `sweep bench --stats` measures it at the
seed counts adaptive seeds use (docs/statistics.md).

Error spending (Lan and DeMets 1983), Pocock type: by the look whose information fraction is t, the chance of
having crossed is at most `level * ln(1 + (e - 1) t)`. The information of a two-sample comparison grows as
n_a n_b / (n_a + n_b) (the inverse of the variance of a difference of means, and the scale of P's spread), so
t is that over its value at the most seeds the design may train, max / 2 at max seeds each. Pocock-type
spending gives early looks a large share of the error, which is what a design that should stop early
wants (Jennison and Turnbull 2000, ch. 7): most of the seeds it saves, it saves where a difference is large.
Each look's boundary is the smallest |T| whose crossing, added to what earlier looks spent, stays within that.
Until some look has a boundary, nothing has crossed, so the first look that spends anything is counted
from |T|'s permutation distribution (results/brunnermunzel.py); later looks are counted on the simulated paths,
less two standard errors of the simulated count (so that the simulation's own error cannot carry the true
chance above the level). What a look could not spend (few seeds make |T| coarse) is left to the later ones.
A boundary is then raised, where needed, to the fixed test's t guard at the same nominal level (the chance of
the boundary or more at that look alone): a small, wide group's heavy tails are guarded at each look as in the
fixed test. Stopping early, a group that leaves, or a sweep cut short only drop looks, which never adds to the
chance of a crossing.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import brunnermunzel

PATHS = 60_000
"""Simulated null paths per sequence of sizes: the crossing chance at 0.05 / 15 (six groups' first Holm step)
is then known to about 7% of itself."""
SPENDING = "alpha * ln(1 + (e - 1) t)"
"""The spending function in words, as seeds.jsonl records it."""
NEVER = math.inf
"""A boundary no |T| reaches: this look cannot separate anything at its share of the error."""


def spent(level: float, fraction: float) -> float:
    """The error the design may have spent by a look at this information fraction (Pocock type)."""
    return level * math.log1p((math.e - 1.0) * min(1.0, max(0.0, fraction)))


def information(n_a: int, n_b: int, max_seeds: int) -> float:
    """The information fraction of a look at n_a vs n_b seeds, against max_seeds each."""
    return (n_a * n_b / (n_a + n_b)) / (max_seeds / 2)


def _tails(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The values |T| takes above 0 (|T| = 0 is no difference at all), ascending, and at each the paths with |T|
    at that value or more. Values within 1e-9 of each other are one (float sums of the same ranks)."""
    ordered = np.sort(sizes)
    starts = np.concatenate([[0], np.nonzero(np.diff(ordered) > 1e-9)[0] + 1])
    values, tail = ordered[starts], len(ordered) - starts
    keep = values > 1e-9
    return values[keep], tail[keep]


def _exact_tail(n_a: int, n_b: int) -> tuple[np.ndarray, np.ndarray]:
    """|T|'s values (ascending, above 0) at n_a vs n_b seeds without ties, and the permutation chance of each
    value or more."""
    null = brunnermunzel.untied_null(n_a, n_b)
    values, tail = _tails(null)
    return values, tail / len(null)


def nominal(n_a: int, n_b: int, boundary: float) -> float:
    """The chance of |T| at the boundary or more at this look alone, without ties: its one-look p-value."""
    null = brunnermunzel.untied_null(n_a, n_b)
    return brunnermunzel.tail(null, boundary, brunnermunzel.exhaustive(n_a, n_b))


def _guarded(boundary: float, n_a: int, n_b: int) -> float:
    """The boundary, raised where the t guard at its nominal level asks for more; NEVER above a complete
    separation's |T| (brunnermunzel.largest), which no look can pass."""
    if not math.isfinite(boundary):
        return NEVER
    from scipy.special import stdtrit  # Student's t quantile: scipy.stats.t.ppf without its checks

    level = nominal(n_a, n_b, boundary)
    raised = max(boundary, float(-stdtrit(brunnermunzel.guard_df(n_a, n_b), level / 2)))
    return raised if raised <= brunnermunzel.largest(n_a, n_b) + 1e-9 else NEVER


def first_boundary(n_a: int, n_b: int, share: float) -> float:
    """The boundary of a look that no earlier look could cross, with `share` of the error spent by it: the
    smallest |T| whose permutation chance is within the share, guarded; NEVER where none is."""
    values, chance = _exact_tail(n_a, n_b)
    fits = values[chance <= share]
    return _guarded(float(fits[0]) if len(fits) else NEVER, n_a, n_b)


@lru_cache(maxsize=256)
def _column(side: str, index: int) -> np.ndarray:
    """One seed's return on every simulated path, drawn from a generator of its own: a look's |T| then depends
    only on the seeds it holds, so the boundaries of a sequence of looks are those of its every prefix."""
    rng = np.random.default_rng(zlib.crc32(f"{side}{index}".encode()))
    return rng.random(PATHS, dtype=np.float32)


def t_sizes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|T| of each row's returns (rows x n_a against rows x n_b, no ties)."""
    n_a, n_b = a.shape[1], b.shape[1]
    above = a[:, :, None] > b[:, None, :]
    place_a = above.sum(axis=2, dtype=np.float64)  # B's seeds below each seed of A
    place_b = n_a - above.sum(axis=1, dtype=np.float64)  # A's seeds below each seed of B
    variance = n_a * place_a.var(axis=1, ddof=1) + n_b * place_b.var(axis=1, ddof=1)
    floor = brunnermunzel.variance_floor(n_a, n_b)
    t = (place_a.sum(axis=1) - n_a * n_b / 2) / np.sqrt(np.maximum(variance, floor))
    return np.abs(t)


@lru_cache(maxsize=1024)
def _look(n_a: int, n_b: int) -> np.ndarray:
    """|T| at a look of n_a vs n_b seeds on every simulated path: seeds 0..n_a - 1 and 0..n_b - 1 of their
    columns, so the same for every sequence of looks through this one."""
    a = np.stack([_column("a", c) for c in range(n_a)], axis=1)
    b = np.stack([_column("b", c) for c in range(n_b)], axis=1)
    out = t_sizes(a, b)
    out.flags.writeable = False
    return out


def _null_paths(sizes: tuple[tuple[int, int], ...]) -> np.ndarray:
    """PATHS x looks: |T| at each look for returns drawn from one distribution, looks of the given sizes (each
    no smaller than the one before on both sides)."""
    return np.stack([_look(i, j) for i, j in sizes], axis=1)


@lru_cache(maxsize=4096)
def boundaries(sizes: tuple[tuple[int, int], ...], level: float, max_seeds: int) -> tuple[float, ...]:
    """The boundary of |T| at each look: a pair is separated at the first look where |T| reaches it."""
    paths = _null_paths(sizes)
    alive = np.ones(PATHS, dtype=bool)
    crossed = 0
    out: list[float] = []
    for k, (i, j) in enumerate(sizes):
        share = spent(level, information(i, j, max_seeds))
        if not any(math.isfinite(b) for b in out) and brunnermunzel.exhaustive(i, j):
            # No earlier look could cross: this look's chance is |T|'s permutation tail.
            out.append(first_boundary(i, j, share))
        else:
            # Two standard errors of the simulated count below the spend: the simulation's own error does not
            # carry the true crossing chance above it.
            budget = share * PATHS
            allowed = budget - 2 * math.sqrt(budget) - crossed
            values, tail = _tails(paths[alive, k])  # tail[v]: alive paths with |T| >= values[v]
            fits = values[tail <= allowed]
            out.append(_guarded(float(fits[0]) if len(fits) else NEVER, i, j))
        boundary = out[-1]
        if math.isfinite(boundary):
            newly = alive & (paths[:, k] >= boundary - 1e-9)
            crossed += int(newly.sum())
            alive &= ~newly
    return tuple(out)


@dataclass(frozen=True)
class Path:
    """One pair's looks: the returns each side had at each (each a prefix of the next), and |T| at each."""

    sizes: tuple[tuple[int, int], ...]
    t: tuple[float, ...]
    last: tuple[tuple[float, ...], tuple[float, ...]]
    """The returns at the last look."""

    def crossed(self, level: float, max_seeds: int) -> bool:
        """Whether |T| reached its boundary at any look, the error spent at `level`."""
        bounds = boundaries(self.sizes, level, max_seeds)
        return any(reaches(t, bound) for t, bound in zip(self.t, bounds, strict=True))


def reaches(size: float, boundary: float) -> bool:
    """|T| at or beyond the boundary (float sums of the same ranks differ in their last bits)."""
    return size >= boundary - 1e-9


def path(a_looks: Sequence[Sequence[float]], b_looks: Sequence[Sequence[float]]) -> Path:
    """The path of a pair whose groups had a_looks[k] and b_looks[k] returns at look k (2 or more each)."""
    sizes = tuple((len(x), len(y)) for x, y in zip(a_looks, b_looks, strict=True))
    t = tuple(_size(tuple(x), tuple(y)) for x, y in zip(a_looks, b_looks, strict=True))
    return Path(sizes, t, (tuple(a_looks[-1]), tuple(b_looks[-1])))


@lru_cache(maxsize=65536)
def _size(x: tuple[float, ...], y: tuple[float, ...]) -> float:
    """|T| of a look, kept: every round looks again at the earlier looks of every pair."""
    return abs(brunnermunzel.statistic(x, y))


def within(x: Sequence[float], y: Sequence[float], margin: float, boundary: float) -> bool:
    """Whether every shift d that this look does not rule out lies strictly inside (-margin, margin): the test
    of "P(A - d > B) = 1/2" crosses the boundary, A - d below B, at every d from margin up, and A - d above B
    at every d from -margin down. T is not monotone in d, so it is checked at every d where it can change (a
    difference of two returns) and between them. The d with P(A - d > B) = 1/2 is the median of the difference
    between a seed of A and a seed of B; the shifts never ruled out cover it with the design's confidence at
    every look at once, whatever the groups' spreads, so "equal within the margin" errs no more often than a
    separation does."""
    if not math.isfinite(boundary):
        return False
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    steps = np.unique(np.subtract.outer(a, b))
    gaps = np.diff(steps)
    between = steps[:-1] + gaps / 2
    above = np.concatenate([[margin], steps[steps >= margin], between[between >= margin]])
    below = np.concatenate([[-margin], steps[steps <= -margin], between[between <= -margin]])
    # Beyond every difference, A - d lies wholly below (or above) B: a complete separation, which crosses.
    return (all(reaches(-brunnermunzel.statistic(a - d, b), boundary) for d in above)
            and all(reaches(brunnermunzel.statistic(a - d, b), boundary) for d in below))
