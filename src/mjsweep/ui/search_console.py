"""How a search prints: the dry run's space and proposals, the ranked trials and the best block (rich)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from ..naming import format_value
from ..search.ranking import TrialRow, best_block, front, front_title, objective_cells, objectives_text
from ..spec.searchspace import SearchSpec
from ..sweepdir.models import TrialState
from .console_tables import fixed


def _params(params: dict) -> str:
    return " ".join(f"{k}={format_value(v)}" for k, v in params.items())


def trials_table(out: Console, rows: list[TrialRow], search: SearchSpec, figure: Path | None = None) -> None:
    """The ranked trials and the best trial's spec keys; for several objectives, the Pareto front's trials
    with each one's spec keys, and `figure` (the front drawn) when there is one."""
    if search.multi:
        _front_table(out, rows, search, figure)
        return
    metric = search.metric
    table = Table(title=f"trials by {metric}, best first")
    for col in ("rank", "study", "trial", "state", metric, "95% CI", "seeds", "parameters"):
        table.add_column(col, overflow="fold")
    for rank, row in enumerate(rows, 1):
        rec = row.record
        ci = f"[{fixed(row.ci[0])}, {fixed(row.ci[1])}]" if row.ci else "-"
        table.add_row(str(rank), rec.study, str(rec.number), rec.state.value, fixed(row.value), ci,
                      f"{row.seeds_done}/{row.seeds}", _params(rec.params))
    out.print(table)
    best = next((r for r in rows if r.record.state is TrialState.COMPLETE), None)
    if best is not None:
        out.print(f"best: trial {best.record.number} of {best.record.study}; its parameters as spec keys:",
                  markup=False, highlight=False)
        out.print(best_block(best).rstrip(), markup=False, highlight=False)


def _front_table(out: Console, rows: list[TrialRow], search: SearchSpec, figure: Path | None) -> None:
    metrics = [o.metric for o in search.objective]
    table = Table(title=f"trials by Pareto front ({objectives_text(search)}), front first")
    for col in ("rank", "study", "trial", "state", "front", *metrics, "seeds", "parameters"):
        table.add_column(col, overflow="fold")
    for rank, row in enumerate(rows, 1):
        rec = row.record
        table.add_row(str(rank), rec.study, str(rec.number), rec.state.value, "yes" if row.on_front else "",
                      *objective_cells(row, search), f"{row.seeds_done}/{row.seeds}", _params(rec.params))
    out.print(table)
    points = front(rows)
    if points:
        out.print(f"Pareto front: {len(points)} trials; each one's parameters as spec keys:", markup=False,
                  highlight=False)
    for row in points:
        out.print(f"{front_title(row, search)}", markup=False, highlight=False)
        out.print(best_block(row).rstrip(), markup=False, highlight=False)
    if figure is not None:
        out.print(f"figure: {figure}", markup=False, highlight=False)
