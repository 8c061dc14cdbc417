"""Pareto fronts of a multi-objective search: pure decisions over the trials' objective values.

A point dominates another when it is no worse in every objective and better in at least one (each objective
in its own direction). The front is the points no other dominates: two equal points are both on it.
"""

from __future__ import annotations


def dominates(a: list[float], b: list[float], maximize: list[bool]) -> bool:
    better = [(x > y) if up else (x < y) for x, y, up in zip(a, b, maximize, strict=True)]
    worse = [(x < y) if up else (x > y) for x, y, up in zip(a, b, maximize, strict=True)]
    return any(better) and not any(worse)


def front(points: list[list[float]], maximize: list[bool]) -> list[int]:
    """The indices of the points no other point dominates, in their order."""
    return [i for i, p in enumerate(points)
            if not any(dominates(q, p, maximize) for j, q in enumerate(points) if j != i)]


def ranks(points: list[list[float]], maximize: list[bool]) -> list[int]:
    """Each point's front: 0 for the Pareto front, 1 for the front once it is removed, and so on."""
    out = [-1] * len(points)
    left = list(range(len(points)))
    rank = 0
    while left:
        for k in front([points[i] for i in left], maximize):
            out[left[k]] = rank
        left = [i for i in left if out[i] < 0]
        rank += 1
    return out
