"""A sweep folder read as `sweep report` reads it: the last plan's runs (or every spec's), their groups over
seeds, each group's final returns, adaptive seeds' decisions, and the comparisons of groups. `sweep report`
renders it and the Python API (mjsweep.load) returns it, so that both say the same."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..sweepdir import journal
from ..sweepdir.files import SweepDir
from ..sweepdir.models import SeedRound
from . import compare as comparelib
from . import experiments, seeding
from . import report as reportlib
from .rows import ResultRow, collect


@dataclass(frozen=True)
class SweepReport:
    folder: SweepDir
    rows: list[ResultRow]
    """The runs reported: the last plan's, or with all_specs every run (earlier experiments labelled apart)."""
    left_out: str | None
    """The line that says which runs of an earlier spec were left out; None when none were."""
    groups: list[reportlib.GroupRow]
    """Best first, as the report ranks them."""
    rounds: list[SeedRound]
    """Adaptive seeds' decisions as they stand; empty for fixed seeds."""

    @property
    def returns(self) -> dict[str, list[float]]:
        """Each group's seeds' final returns, the groups in the report's order (best first)."""
        out: dict[str, list[float]] = {g.group: [] for g in self.groups}
        for row in self.rows:
            if row.final_return is not None:
                out[row.group].append(row.final_return)
        return out

    @property
    def sequential(self) -> dict[frozenset[str], comparelib.SequentialVerdict] | None:
        """Adaptive seeds' verdict for every pair, which decide in place of a one-look test; None without."""
        return seeding.verdicts(self.rounds) if self.rounds else None

    def compare(self, names: list[str] | None = None) -> list[comparelib.Comparison]:
        """Every pair of groups compared over their seeds' final returns, or the two `names` (a group as the
        report names it, or a variant with one group). InputError for a name that matches no one group."""
        returns = self.returns
        try:
            pairs = comparelib.pick(names or [], list(returns), {g.group: g.variant for g in self.groups})
        except ValueError as exc:
            raise InputError(str(exc)) from None
        return comparelib.compare(returns, pairs, sequential=self.sequential)


def read(folder: SweepDir, all_specs: bool = False, rank: str = "final") -> SweepReport:
    """The report of `folder`. InputError when it holds no run folders or `rank` is not one of RANKINGS."""
    rows, left_out = experiments.plan_rows(folder, collect(folder), all_specs)
    if not rows:
        raise InputError(f"{folder.path}: no run folders here (is it <runs_dir>/<sweep name>?)")
    if rank not in reportlib.RANKINGS:
        raise InputError(f"--rank {rank!r}: choose one of {', '.join(reportlib.RANKINGS)}")
    groups = reportlib.aggregate(rows, reportlib.model_stats(folder, rows), reportlib.eval_aucs(folder, rows), rank)
    return SweepReport(folder, rows, left_out, groups, seed_rounds(folder))


def seed_rounds(folder: SweepDir) -> list[SeedRound]:
    """Adaptive seeds' decisions as they stand (seeds.jsonl); none for fixed seeds."""
    return seeding.standing(journal.seed_rounds(folder).lines())
