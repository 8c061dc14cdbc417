"""Rendering of a sweep's runs, shared by `sweep status` and the live view: the overall progress bar,
the run table (rich, or plain lines for thousands of runs), counts and summary lines."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from ..results.runview import RunView
from ..sweepdir.models import DisplayState
from .console_tables import PLAIN_ROWS, PlainLines, fixed, plain_table
from .status import STATE_ORDER, Contention, SweepView, totals

RUN_COLUMNS = ("run", "state", "timesteps", "fps", "ETA", "return", "eval", "attempts")
MAX_LISTED = 20  # ended runs listed by name in the compact table; the rest are counted
BAR_WIDTH = 40
MIN_RUN_WIDTH = 20


def status_renderable(view: SweepView) -> RenderableType:
    """`sweep status`: who runs the sweep, counts by state, every run, warnings."""
    who = (f"launcher running (pid {view.launcher_pid})" if view.launcher_pid is not None
           else "no launcher running")
    lines = [Text(f"sweep {view.path.name} ({view.path}): {who}")]
    stale = view.counts.get(DisplayState.STALE, 0)
    if stale:
        lines.append(Text(f"{stale} run(s) stale: marked running, but their launcher or process is gone; "
                          "`sweep run` on the same spec resumes them", style="yellow"))
    if view.earlier:
        lines.append(Text(f"{view.earlier} run(s) of an earlier spec not shown: the last `sweep run` did not plan "
                          "them (`sweep report --all-specs` shows them)"))
    return Group(*lines, sweep_renderable(view.runs, view.warnings, compact=False))


def watch(out: Console, make: Callable[[], RenderableType], interval: float) -> None:
    """Redraw make() every `interval` seconds until Ctrl-C; off a terminal, print it each time."""
    if not out.is_terminal:
        while True:
            out.print(make())
            time.sleep(interval)
    with Live(console=out, get_renderable=make, refresh_per_second=1 / interval):
        while True:
            time.sleep(interval)


def sweep_renderable(runs: list[RunView], warnings: Iterable[Contention], compact: bool,
                     width: int | None = None) -> RenderableType:
    """Overall bar, the run table (compact: active and unsuccessful runs by name, others counted), warnings.

    With a terminal `width`, the bar and long run ids shrink so that each run stays on one line.
    """
    parts = [progress_bar(runs, width)]
    if not compact and len(runs) > PLAIN_ROWS:  # thousands of runs: plain rows, drawn in milliseconds
        parts.append(PlainLines(plain_table(RUN_COLUMNS, [run_cells(r, None) for r in runs])))
    elif (table := runs_table(runs, compact, width)).row_count:
        parts.append(table)
    if compact:
        parts.append(Text(ended_counts(runs)))
    parts += [Text(f"warning: {w}", style="yellow") for w in warnings]
    parts += [Text(f"{r.run_id}: {r.fell_back}", style="yellow") for r in runs if r.fell_back]
    parts += [Text(f"{r.run_id}: {r.state}: {r.cause}", style="red") for r in runs
              if r.cause and r.state == DisplayState.FAILED]
    return Group(*parts)


def progress_bar(runs: list[RunView], width: int | None = None) -> RenderableType:
    t = totals(runs)
    pct = 100.0 * t.done / t.total if t.total else 0.0
    text = (f"{pct:5.1f}%  {steps(t.done)}/{steps(t.total)} steps  {t.fps:.0f} fps  "
            f"ETA {duration(t.eta_s)}  | {counts_text(runs)}")
    bar = BAR_WIDTH if width is None else min(BAR_WIDTH, width - len(text) - 1)
    if bar < 10:  # a narrow terminal: the bar on its own line, the numbers under it
        return Group(ProgressBar(total=max(t.total, 1), completed=t.done, width=min(BAR_WIDTH, width or BAR_WIDTH)),
                     Text(text))
    grid = Table.grid(padding=(0, 1))
    grid.add_row(ProgressBar(total=max(t.total, 1), completed=t.done, width=bar), text)
    return grid


def runs_table(runs: list[RunView], compact: bool, width: int | None = None) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in RUN_COLUMNS:
        table.add_column(col, no_wrap=col != "run", overflow="fold")
    shown = [r for r in runs if r.state not in (DisplayState.PENDING, DisplayState.SUCCEEDED)] if compact else runs
    if compact and len(shown) > MAX_LISTED:
        shown = [r for r in shown if r.active] + [r for r in shown if not r.active][-MAX_LISTED:]
    rows = [run_cells(r, None) for r in shown]
    if width is not None and rows:  # the run column gets what the other columns leave of the terminal
        others = sum(max(len(col), *(len(row[i]) for row in rows)) + 2 for i, col in enumerate(RUN_COLUMNS) if i)
        rows = [(fit(row[0], max(MIN_RUN_WIDTH, width - others)), *row[1:]) for row in rows]
    for row in rows:
        table.add_row(*row)
    return table


def run_cells(r: RunView, run_width: int | None) -> tuple[str, ...]:
    return (fit(r.run_id, run_width), r.state, f"{steps(r.done_timesteps)}/{steps(r.total_timesteps)}",
            fixed(r.fps, 0), duration(r.eta_s), fixed(r.ep_rew_mean), fixed(r.final_return), str(r.attempts))


def fit(text: str, width: int | None) -> str:
    """Shorten a run id to `width`: first drop its hash, then cut the middle, keeping more of the end (seed)."""
    if width is None or len(text) <= width:
        return text
    text = re.sub(r"_[0-9a-f]{8}$", "", text)  # the variant, grid point and seed tell runs apart on screen
    if len(text) <= width:
        return text
    tail = (width - 1) * 2 // 3
    return text[:width - 1 - tail] + "…" + text[-tail:]


def counts_text(runs: list[RunView]) -> str:
    counts = {state: sum(1 for r in runs if r.state == state) for state in STATE_ORDER}
    return ", ".join(f"{n} {state}" for state, n in counts.items() if n) or "no runs"


def ended_counts(runs: list[RunView]) -> str:
    ok = [r for r in runs if r.state == DisplayState.SUCCEEDED]
    pending = sum(1 for r in runs if r.state == DisplayState.PENDING)
    returns = [r.final_return for r in ok if r.final_return is not None]
    best = f" (best eval return {max(returns):.2f})" if returns else ""
    return f"{len(ok)} succeeded{best}, {pending} pending"


def summary_text(runs: list[RunView]) -> str:
    t = totals(runs)
    pct = 100.0 * t.done / t.total if t.total else 0.0
    return (f"{counts_text(runs)} | {steps(t.done)}/{steps(t.total)} steps ({pct:.0f}%), "
            f"{t.fps:.0f} fps, ETA {duration(t.eta_s)}")


def steps(n: int) -> str:
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return str(n)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
