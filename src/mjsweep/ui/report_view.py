"""How `sweep report` shows a report (api/report.Report): the table on a terminal, report.html, or the text of
a format on stdout."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from . import console_tables as tables

if TYPE_CHECKING:
    from ..api.report_object import Report
    from .status import SweepView


def show(report: Report, fmt: str, view: SweepView) -> None:
    """`--format FMT`: table, html (written to SWEEP_DIR/report.html, its path printed), csv, md or json."""
    if fmt == "table":
        _table(report)
    elif fmt == "html":
        _html(report, view)
    else:
        sys.stdout.write({"csv": report.csv, "md": report.markdown, "json": report.json}[fmt]())


def _table(report: Report) -> None:
    read = report.read
    if (line := answer_line(report)) is not None:
        print(line)
    if report.no_groups is not None:
        print(report.no_groups)
    tables.report_table(tables.make_console(), report.groups, read.rows, report.warnings, report.failed)
    for comparison in report.comparisons or []:
        print(comparison.verdict())
    figures = report.figures
    if figures is not None:
        folder = report.folder
        print(f"figures: {folder.report_matrix_svg}, {folder.report_profile_svg}" if figures.drawn
              else f"no figures: {figures.why_no_figures}")
    if read.rounds:
        from ..results.rounds_section import section
        from ..results.seeding import explain
        from .report_sections import show

        show(tables.make_console(), [section(read.rounds)])
        print(f"adaptive seeds, as decided: {explain(read.rounds[-1])}")
    if report.trials is not None:
        from .search_console import trials_table

        trials_table(tables.make_console(), *report.trials, report.pareto)
    if report.confirmed:
        from ..search.confirm import summary_lines

        for line in summary_lines(report.confirmed):
            print(f"confirmed on fresh seeds: {line}")
    if report.physics is not None:
        from .report_sections import show

        show(tables.make_console(), [report.physics.section()])
    if report.pbt:
        from .report_sections import show

        show(tables.make_console(), report.pbt)


def answer_line(report: Report) -> str | None:
    """Which group leads and whether it is separated, for a grid's report; a search ranks its trials and a
    population its members instead (their own sections)."""
    if report.trials is not None or report.pbt:
        return None
    from ..results.answer import of_report

    return of_report(report.read)


def _html(report: Report, view: SweepView) -> None:
    from ..sweepdir.files import write_text_atomic
    from .html_report import build, sweep_state

    read = report.read
    # While a launcher runs the sweep, the page says so (under its title: how far it got).
    write_text_atomic(report.folder.report_html, build(report.folder, report.groups, read.rows, report.warnings,
                                                       report.figures, sweep_state(view), report.trials,
                                                       report.pareto, report.sections(), answer_line(report),
                                                       report.no_groups))
    print(report.folder.report_html)
