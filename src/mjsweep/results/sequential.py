"""A group-sequential rank test: one pair's U looked at after every round of adaptive seeds, with the error
spent over the looks so that the chance of ever separating two groups that do not differ stays at or below
the level however many looks come.

At a look with n_a and n_b returns, the statistic is D = |2U - n_a n_b| (U: Mann-Whitney, results/ranktest.py).
Where both groups' returns come from one continuous distribution, the ranks of all their seeds are a uniformly
random order, so the joint law of D over the looks depends on the looks' sizes alone, not on the
distribution: it is simulated once per sequence of sizes (each seed's draws from a generator seeded by its
index, so the same looks always give the same boundaries, and a look's boundary does not change as later
looks are added) and every sweep with those sizes reuses it.

Error spending (Lan and DeMets 1983), Pocock type: by the look whose information fraction is t, the chance of
having crossed is at most `level * ln(1 + (e - 1) t)`. The information of a two-sample comparison grows as
n_a n_b / (n_a + n_b) (the inverse of the variance of a difference of means, and the scale of U's spread), so
t is that over its value at the most seeds the design may train, max / 2 at max seeds each. Pocock-type
spending gives early looks a large share of the error, which is what a design that should stop early
wants (Jennison and Turnbull 2000, ch. 7): most of the seeds it saves, it saves where a difference is large.
Each look's boundary is the smallest D whose crossing, added to what earlier looks spent, stays within that.
Until some look has a boundary, nothing has crossed, so the first look that spends anything is counted
exactly from D's null distribution (results/ranktest.py); later looks are counted on the simulated paths,
less two standard errors of the simulated count (so that the simulation's own error cannot carry the true
chance above the level). What a look could not spend (few seeds make D coarse) is left to the later ones.
Stopping early, a group that leaves, or a sweep cut short only drop looks, which never adds to the chance of
a crossing.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import ranktest
from .ranktest import u_statistic

PATHS = 60_000
"""Simulated null paths per sequence of sizes: the crossing chance at 0.05 / 15 (six groups' first Holm step)
is then known to about 7% of itself."""
SPENDING = "alpha * ln(1 + (e - 1) t)"
"""The spending function in words, as seeds.jsonl records it."""
NEVER = math.inf
"""A boundary no D reaches: this look cannot separate anything at its share of the error."""


def spent(level: float, fraction: float) -> float:
    """The error the design may have spent by a look at this information fraction (Pocock type)."""
    return level * math.log1p((math.e - 1.0) * min(1.0, max(0.0, fraction)))


def information(n_a: int, n_b: int, max_seeds: int) -> float:
    """The information fraction of a look at n_a vs n_b seeds, against max_seeds each."""
    return (n_a * n_b / (n_a + n_b)) / (max_seeds / 2)


def _tails(d: np.ndarray, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The values D takes above 0 (D = 0 is no difference at all), ascending, and at each the weight of D at
    that value or more: paths counted, or with `weights` each D's own (a count of splits)."""
    values, inverse = np.unique(d, return_inverse=True)
    at = np.bincount(inverse, weights)
    tail = np.cumsum(at[::-1])[::-1]
    keep = (values > 0) & (at > 0)
    return values[keep], tail[keep]


@lru_cache(maxsize=1024)
def _exact_tail(n_a: int, n_b: int) -> tuple[np.ndarray, np.ndarray]:
    """D's values (ascending, D > 0) at n_a vs n_b seeds without ties, and the exact null chance of each value
    or more."""
    counts = ranktest.untied_sums(n_a, n_b)  # doubled rank sums of A: 2U + n_a (n_a + 1)
    values, tail = _tails(np.abs(np.arange(len(counts)) - n_a * (n_a + 1) - n_a * n_b), counts)
    return values, tail / counts.sum()


@lru_cache(maxsize=256)
def _column(side: str, index: int) -> np.ndarray:
    """One seed's return on every simulated path, drawn from a generator of its own: a look's D then depends
    only on the seeds it holds, so the boundaries of a sequence of looks are those of its every prefix."""
    rng = np.random.default_rng(zlib.crc32(f"{side}{index}".encode()))
    return rng.random(PATHS, dtype=np.float32)


@lru_cache(maxsize=256)
def _null_paths(sizes: tuple[tuple[int, int], ...]) -> np.ndarray:
    """PATHS x looks: D at each look for returns drawn from one distribution, looks of the given sizes (each
    no smaller than the one before on both sides)."""
    n_a, n_b = sizes[-1]
    a = np.stack([_column("a", c) for c in range(n_a)], axis=1)
    b = np.stack([_column("b", c) for c in range(n_b)], axis=1)
    out = np.empty((PATHS, len(sizes)), dtype=np.int32)
    for k, (i, j) in enumerate(sizes):
        u2 = 2 * (a[:, :i, None] > b[:, None, :j]).sum(axis=(1, 2), dtype=np.int32)
        out[:, k] = np.abs(u2 - i * j)
    return out


@lru_cache(maxsize=4096)
def boundaries(sizes: tuple[tuple[int, int], ...], level: float, max_seeds: int) -> tuple[float, ...]:
    """The boundary of D at each look: a pair is separated at the first look where D reaches it."""
    paths = _null_paths(sizes)
    alive = np.ones(PATHS, dtype=bool)
    crossed = 0
    out: list[float] = []
    for k, (i, j) in enumerate(sizes):
        share = spent(level, information(i, j, max_seeds))
        if not any(math.isfinite(b) for b in out):
            # No earlier look could cross: this look's chance is D's exact tail.
            values, chance = _exact_tail(i, j)
            fits = values[chance <= share]
            boundary = float(fits[0]) if len(fits) else NEVER
        else:
            # Two standard errors of the simulated count below the spend: the simulation's own error does not
            # carry the true crossing chance above it.
            budget = share * PATHS
            allowed = budget - 2 * math.sqrt(budget) - crossed
            values, tail = _tails(paths[alive, k])  # tail[v]: alive paths with D >= values[v]
            fits = values[tail <= allowed]
            boundary = float(fits[0]) if len(fits) else NEVER
        out.append(boundary)
        if math.isfinite(boundary):
            newly = alive & (paths[:, k] >= boundary)
            crossed += int(newly.sum())
            alive &= ~newly
    return tuple(out)


@dataclass(frozen=True)
class Path:
    """One pair's looks: the returns each side had at each (each a prefix of the next), and D at each."""

    sizes: tuple[tuple[int, int], ...]
    d: tuple[float, ...]
    last: tuple[tuple[float, ...], tuple[float, ...]]
    """The returns at the last look."""

    def crossed(self, level: float, max_seeds: int) -> bool:
        """Whether D reached its boundary at any look, the error spent at `level`."""
        bounds = boundaries(self.sizes, level, max_seeds)
        return any(d >= bound for d, bound in zip(self.d, bounds, strict=True))


def path(a_looks: Sequence[Sequence[float]], b_looks: Sequence[Sequence[float]]) -> Path:
    """The path of a pair whose groups had a_looks[k] and b_looks[k] returns at look k."""
    sizes = tuple((len(x), len(y)) for x, y in zip(a_looks, b_looks, strict=True))
    d = tuple(abs(2 * u_statistic(x, y) - len(x) * len(y)) for x, y in zip(a_looks, b_looks, strict=True))
    return Path(sizes, d, (tuple(a_looks[-1]), tuple(b_looks[-1])))


def within(x: Sequence[float], y: Sequence[float], margin: float, boundary: float) -> bool:
    """Whether every shift of A against B that this look does not rule out lies strictly inside
    (-margin, margin): the test of "A - d against B" crosses the boundary at d = margin and at d = -margin, and so
    at every shift beyond. Under a shift model (A's returns are B's moved by d) the shifts never ruled out
    cover the true one with the design's confidence at every look at once, so "equal within the margin" errs
    no more often than a separation does."""
    if not math.isfinite(boundary):
        return False
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    total = len(a) * len(b)
    return 2 * u_statistic(a - margin, b) <= total - boundary and 2 * u_statistic(a + margin, b) >= total + boundary
