"""Sweep kinds as types (base.py's `SweepKind`): a grid (grid.py), adaptive seeds (adaptive.py), a search
(search.py), population-based training (pbt.py). `kind_of` is the one place that asks which one a spec is."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..spec.sweepspec import SweepSpec
    from .base import SweepKind


def kind_of(spec: SweepSpec) -> SweepKind:
    """The spec's kind, asked in the order the engine has always asked it: a search, else a population, else
    adaptive seeds, else a grid."""
    if spec.search is not None:
        from .search import SearchKind

        return SearchKind(spec, spec.search)
    if spec.pbt is not None:
        from .pbt import Population

        return Population(spec, spec.pbt)
    if spec.adaptive_seeds is not None:
        from .adaptive import AdaptiveSeedsKind

        return AdaptiveSeedsKind(spec, spec.adaptive_seeds)
    from .grid import Grid

    return Grid(spec)
