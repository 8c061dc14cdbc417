"""`sweep report`'s decision figures, drawn from results/compare.py's numbers as SVG (ui/svgplot.py): P(row >
column) for every ordered pair of groups (report_matrix.svg) and each group's performance profile
(report_profile.svg). report.md links the files; report.html holds the same figures inline.

Both are drawn only when at least two groups have at least 2 seeds each; otherwise the files are removed,
so that no figure of an earlier report is left to contradict this one. The PNGs that earlier versions drew
(report_matrix.png, report_profile.png) are removed whenever the figures are decided again.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import svgplot
from ..results import compare as comparelib
from ..sweepdir.files import SweepDir, write_text_atomic

INTERVALS_UP_TO = 10
"""Groups up to which a matrix cell shows its interval under P; beyond, P alone."""
VALUES_UP_TO = 24
"""Groups up to which a matrix cell shows P at all; beyond, the colours alone."""
MATRIX_CAPTION = "P(row > column) over seeds, with its 95% interval"
PROFILE_CAPTION = "performance profiles: the fraction of each group's runs above each return, 95% band"


@dataclass(frozen=True)
class Decisions:
    """What `sweep report` compares of every group, and whether its figures are in the sweep folder."""

    matrix: comparelib.Matrix
    profiles: comparelib.Profiles
    why_no_figures: str | None
    """None when both figures were drawn; else the sentence that says why not."""
    matrix_svg: str = ""
    profile_svg: str = ""
    """The figures as inline <svg> elements for report.html; "" when not drawn."""

    @property
    def drawn(self) -> bool:
        return self.why_no_figures is None

    def seeds_sentence(self) -> str:
        """How many seeds each group has, and which groups are left out for having too few."""
        counted = ", ".join(f"{g} {seeds_text(n)}" for g, n in zip(self.matrix.groups, self.matrix.seeds,
                                                                      strict=True))
        return f"Seeds per group: {counted}; a group with fewer than {comparelib.MIN_SEEDS} is not compared."

    def markdown(self, folder: SweepDir) -> str:
        lines = ["## Which group beats which", ""]
        if self.drawn:
            lines += [f"![{MATRIX_CAPTION}]({folder.report_matrix_svg.name})", "",
                      f"![{PROFILE_CAPTION}]({folder.report_profile_svg.name})", "",
                      f"{folder.report_matrix_svg.name}: P(row > column) with its 95% interval, a bold, outlined "
                      "cell when the pair's test separates it (the family-wise error held at 5%); "
                      f"{folder.report_profile_svg.name}: the fraction of each group's runs whose final return is "
                      "above tau, with its exact (Clopper-Pearson) 95% band."]
        else:
            lines.append(f"No figures: {self.why_no_figures}.")
        return "\n".join(lines + ["", self.seeds_sentence()]) + "\n"


def seeds_text(n: int) -> str:
    return f"{n} seed{'' if n == 1 else 's'}"


def label(group: str, seeds: int) -> str:
    return f"{group} ({seeds_text(seeds)})"


def decide(folder: SweepDir, returns: dict[str, list[float]], title: str,
           sequential: dict[frozenset[str], comparelib.SequentialVerdict] | None = None) -> Decisions:
    """The matrix and the profiles of `returns` (group -> final returns, in the report's order), drawn into
    the sweep folder when there is something to compare. `sequential`: adaptive seeds' verdicts, which decide
    which cells are separated."""
    matrix = comparelib.matrix(returns, sequential=sequential)
    profiles = comparelib.profiles(returns)
    comparable = len(matrix.comparable)
    for stale in (folder.report_matrix_png, folder.report_profile_png):  # earlier versions' figures
        stale.unlink(missing_ok=True)
    if comparable < 2:
        for stale in (folder.report_matrix_svg, folder.report_profile_svg):
            stale.unlink(missing_ok=True)
        why = (f"they need at least two groups with at least {comparelib.MIN_SEEDS} seeds each, and "
               f"{'only one group has' if comparable == 1 else 'no group has'} that many")
        return Decisions(matrix, profiles, why)
    drawn = matrix_svg(matrix, title), profile_svg(profiles, title)
    # The files first: report.md, written after, never names a figure that is not there.
    for path, figure in zip((folder.report_matrix_svg, folder.report_profile_svg), drawn, strict=True):
        write_text_atomic(path, figure.document(standalone=True))
    return Decisions(matrix, profiles, None, *(figure.document() for figure in drawn))


def matrix_svg(matrix: comparelib.Matrix, title: str) -> svgplot.Svg:
    """P(row > column) as a heat map centred on 0.5 (a coin toss): blue, the row wins; red, the column. A
    separated cell is outlined and its text bold; a pair with too few seeds is hatched grey, n/a."""
    n = len(matrix.groups)
    cells: list[list[svgplot.Cell | None]] = []
    for row in matrix.cells:
        cells.append([None if cell is None else _matrix_cell(cell, n) for cell in row])  # the diagonal stays blank
    labels = [label(g, s) for g, s in zip(matrix.groups, matrix.seeds, strict=True)]
    heading = [f"{title}: P(row > column) over seeds, 95% interval",
               f"bold and outlined: separated by the test at {matrix.confidence:.0%}, family-wise; "
               f"n/a: fewer than {comparelib.MIN_SEEDS} seeds"]
    return svgplot.heatmap(MATRIX_CAPTION, heading, labels, labels, cells, xlabel="column", ylabel="row",
                           colorbar=("P(row > column)", svgplot.diverging), ids="matrix")


def _matrix_cell(cell: comparelib.Comparison, n: int) -> svgplot.Cell:
    if cell.p is None or cell.low is None or cell.high is None:
        return svgplot.Cell(None, ("n/a",) if n <= VALUES_UP_TO else (), text_fill="#595959")
    lines: tuple[str, ...] = ()
    if n <= VALUES_UP_TO:
        lines = (f"{cell.p:.2f}",) + ((f"[{cell.low:.2f},{cell.high:.2f}]",) if n <= INTERVALS_UP_TO else ())
    dark = abs(cell.p - 0.5) > 0.3  # the dark ends of the scale take white text
    return svgplot.Cell(svgplot.diverging(cell.p), lines, bold=cell.separated, outlined=cell.separated,
                        text_fill="#ffffff" if dark else svgplot.TEXT)


def profile_svg(profiles: comparelib.Profiles, title: str) -> svgplot.Svg:
    """Each group's fraction of runs above tau as a step line, with its Clopper-Pearson band."""
    count = len(profiles.groups)
    legend = [(label(p.group, p.seeds), svgplot.color(k, count)) for k, p in enumerate(profiles.groups)]
    axes = svgplot.chart(PROFILE_CAPTION, [f"{title}: performance profiles, exact 95% band"],
                         svgplot.Scale.numeric(profiles.taus), svgplot.Scale.numeric([], limits=(-0.02, 1.02)),
                         "final evaluation return τ", "fraction of runs with a return above τ", legend=legend,
                         ids="profile")
    for k, profile in enumerate(profiles.groups):
        axes.band(profiles.taus, profile.low, profile.high, svgplot.color(k, count), profile.group, stepped=True)
    for k, profile in enumerate(profiles.groups):
        axes.step(profiles.taus, profile.fraction, svgplot.color(k, count), profile.group)
    return axes.svg
