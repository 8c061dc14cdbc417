"""A sweep's kind as a type: everything the engine, the API and the command line need that differs from one
kind to another (which runs it opens and when, its dry run's plan and price, its disk need, the reach of its
seeds), behind one interface. The kind is chosen once, by `kinds.kind_of(spec)`; the callers never ask which
kind it is. Each kind's journal (trials.jsonl, seeds.jsonl, ...) is a `sweepdir.journal.Journal` its source
keeps, and its report section is data (results/sections.py) its own module builds."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from ..api.planning import DiskCheck, Pricing, Reevaluation
    from ..engine.sweep import RunsOpener, SweepPlan
    from ..plan.cost import BenchSpeed
    from ..plan.order import Order
    from ..plan.planned import PlannedRun
    from ..results.reach import AdaptiveReach, FixedReach
    from ..results.sections import Table, Text
    from ..spec.sweepspec import SweepSpec


@dataclass(frozen=True)
class DryRun:
    """What `sweep run --dry-run` shows of a kind, as data the command line prints: the plan's runs, what the
    kind says of itself, the price and the disk."""

    pricing: Pricing
    disk: DiskCheck | None
    """None: not weighed before it runs (a search makes its runs as it goes)."""
    planned: list[PlannedRun] = field(default_factory=list)
    """The plan table's runs in start order (a grid's; adaptive seeds' granted so far); none for a kind whose
    runs come as it runs."""
    blocks: list[Text | Table] = field(default_factory=list)
    """What the kind says of itself after the plan table (adaptive seeds' design, a population's segments, a
    search's space and first proposals)."""
    skipped: int = 0
    note: str = ""
    """The cost line's note."""
    at_most: bool = False
    """The price is a ceiling (a search's budget: pruning and failures only end trials sooner)."""
    reevaluation: Reevaluation | None = None
    job_array: bool = False
    """Whether SLURM would queue `planned` as one job array (a grid)."""


class SweepKind(ABC):
    """One kind of sweep: a grid, adaptive seeds, a search, population-based training."""

    name: ClassVar[str]
    plans_runs: ClassVar[bool] = True
    """Whether the spec fixes its runs before it starts (a grid; adaptive seeds at most): `validate` counts them,
    plan.json records them, `sweep run` ends with the answer. A search's trials and a population's segments are
    made as it runs."""
    says_workers: ClassVar[bool] = True
    """Whether `sweep run` notes where its default worker count came from (a search does not)."""

    def __init__(self, spec: SweepSpec):
        self.spec = spec

    @abstractmethod
    def open_runs(self, plan: SweepPlan, order: Order, backend: str) -> RunsOpener:
        """What `engine.sweep.execute` runs, opened under the lock: a fixed list, or a source that hands the
        scheduler runs as results come in. InputError for a backend it cannot run on."""

    @abstractmethod
    def dry_run(self, plan: SweepPlan, order: Order, slots: int | None, backend: str,
                bench: BenchSpeed | None) -> DryRun:
        """Its plan and price on `slots` at once (None: a cluster that sizes itself), from this folder's measured
        speeds or `bench`; writes nothing."""

    def planned(self, plan: SweepPlan) -> list[PlannedRun]:
        """What `sweep run` would do now with each run the spec plans."""
        from ..engine.sweep import decide

        return decide(plan, extend=False)

    def disk_check(self, plan: SweepPlan, slots: int | None) -> DiskCheck | None:
        """The disk its runs need at their peak against the free space; None when that cannot be known before
        it runs."""
        from ..api.planning import check_disk, to_run

        return check_disk(plan, to_run(self.planned(plan)), slots)

    def run_counts(self, plan: SweepPlan) -> tuple[int, int]:
        """The runs the spec plans and, of those, the runs a `sweep run` would start or resume now (the others
        have succeeded); (0, 0) where they are made as it runs."""
        from ..plan.planned import Action

        if not self.plans_runs:
            return 0, 0
        return len(plan.runs), sum(1 for p in self.planned(plan) if p.action is not Action.SKIP)

    def reach(self, groups: int) -> FixedReach | AdaptiveReach | None:
        """Whether its seeds can separate any pair of `groups` (results/reach.py); None where it ranks trials
        or members rather than testing pairs of groups."""
        return None


def local_only(what: str, backend: str) -> None:
    """InputError for SLURM, which queues every run before the first starts, when a kind makes runs as results
    come in (`what` says how)."""
    from ..errors import InputError

    if backend == "slurm":
        raise InputError(f"{what}: use --backend local or ray, not slurm")
