"""A population-based training sweep's lineage read back (`Sweep.lineage()`): each population's members, the
copies between them generation by generation, and the best member's schedule."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..sweepdir.files import SweepDir
    from ..sweepdir.lineage import SegmentRecord


@dataclass(frozen=True)
class Copy:
    """A member that took another's checkpoint (exploit) at the start of a generation."""

    generation: int
    member: int
    copied_from: int
    explored: dict[str, str]
    """How each explored value changed on the copy: "x1.25" (a factor) or "resampled"."""


@dataclass(frozen=True)
class Lineage:
    """One population (a variant and grid point): its members, every segment as pbt.jsonl wrote it, the
    copies, and the last generation's best member with the hyperparameters it trained with generation by
    generation along its chain of parents (None before any segment of the last generation succeeded)."""

    population: str
    members: list[int]
    generations: int
    segments: list[SegmentRecord]
    copies: list[Copy]
    best_member: int | None
    best_score: float | None
    best_schedule: list[dict[str, float]]


def lineages(folder: SweepDir) -> list[Lineage]:
    """Every population of the sweep folder, in the order pbt.jsonl first names them."""
    from ..search.pbtreport import best, populations

    out = []
    for population, lines in populations(folder).items():
        found = best(folder, population, lines)
        copies = [Copy(line.generation, line.member, line.copied_from, dict(line.explored))
                  for line in lines if line.copied_from is not None]
        out.append(Lineage(population, sorted({line.member for line in lines}),
                           1 + max(line.generation for line in lines), lines, copies,
                           found.member if found else None, found.score if found else None,
                           found.schedule() if found else []))
    return out
