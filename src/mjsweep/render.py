"""Everything the CLI prints: tables, progress lines and summaries (rich; NO_COLOR is respected)."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from .report import GroupRow
    from .results import ResultRow
    from .scheduler import Event, SweepOutcome
    from .sweep import PlannedRun, SweepPlan


def make_console(stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    # Off a terminal (CI logs, files), do not wrap tables at 80 columns.
    return Console(stderr=stderr, width=None if stream.isatty() else 200, highlight=False)


def error(message: str) -> None:
    """One line on stderr, never wrapped, so scripts and people can grep it."""
    print(f"error: {message}", file=sys.stderr, flush=True)


def _grid_text(grid: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in grid.items()) or "-"


def plan_table(out: Console, plan: SweepPlan, planned: list[PlannedRun]) -> None:
    table = Table(title=f"sweep {plan.spec.name}: {len(planned)} runs -> {plan.sweep_dir.path}")
    for col in ("run id", "variant", "grid", "seed", "action"):
        table.add_column(col, overflow="fold")
    for item in planned:
        action = item.action.value + (f" ({item.note})" if item.note else "")
        table.add_row(item.run.run_id, item.run.variant, _grid_text(item.run.grid), str(item.run.seed), action)
    out.print(table)
    counts = {a: sum(1 for p in planned if p.action.value == a) for a in ("start", "resume", "skip")}
    out.print(f"dry run: {counts['start']} to start, {counts['resume']} to resume, "
              f"{counts['skip']} to skip; nothing started")


def variant_table(out: Console, plan: SweepPlan) -> None:
    table = Table(title=f"sweep {plan.spec.name}: env {plan.spec.env}, {len(plan.runs)} runs")
    for col in ("variant", "xml", "bodies", "joints", "actuators", "mass", "obs", "act", "verdict"):
        table.add_column(col, overflow="fold")
    for check in plan.checks:
        s = check.stats
        table.add_row(check.variant.name, str(check.variant.xml), str(s.bodies), str(s.joints), str(s.actuators),
                      f"{s.total_mass:.2f}", _shape(check.probe.obs_shape), _shape(check.probe.act_shape), "ok")
    out.print(table)


def _shape(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) or "-"


def report_table(out: Console, groups: list[GroupRow], rows: list[ResultRow]) -> None:
    table = Table(title="eval return over seeds, best first")
    for col in ("variant", "grid", "runs ok", "failed", "mean", "std", "mean fps"):
        table.add_column(col, overflow="fold")
    for g in groups:
        table.add_row(g.variant, _grid_text(g.grid), f"{g.succeeded}/{g.runs}", str(g.failed),
                      _f(g.mean_return), _f(g.std_return), _f(g.mean_fps, 0))
    out.print(table)
    for row in rows:
        for problem in row.problems:
            out.print(f"warning: {problem}")


def _f(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


class PlainProgress:
    """One line per state change, for logs and scripts; the end summary comes from outcome_summary."""

    def __init__(self, out: Console, quiet: bool = False):
        self.out, self.quiet = out, quiet
        self.started = time.monotonic()

    def planned(self, planned: list[PlannedRun]) -> None:
        if self.quiet:
            return
        todo = sum(1 for p in planned if p.action.value != "skip")
        self.out.print(f"{len(planned)} runs: {todo} to run, {len(planned) - todo} already succeeded")

    def event(self, event: Event) -> None:
        if self.quiet:
            return
        elapsed = time.monotonic() - self.started
        subject = event.run_id or "sweep"
        self.out.print(f"[{elapsed:7.1f}s] {event.kind.value:<11} {subject}"
                       + (f": {event.message}" if event.message else ""))


def outcome_summary(out: Console, plan: SweepPlan, outcome: SweepOutcome) -> None:
    out.print(f"sweep {plan.spec.name}: {len(outcome.succeeded)} succeeded, {len(outcome.failed)} failed, "
              f"{len(outcome.interrupted)} interrupted -> {plan.sweep_dir.path}")
    for run_id in outcome.failed:
        out.print(f"  failed: {run_id} (see {plan.sweep_dir.path / run_id / 'log.txt'})")
