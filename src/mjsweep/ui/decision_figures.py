"""`sweep report`'s decision figures, drawn from results/compare.py's numbers: P(row > column) for every
ordered pair of groups (report_matrix.png) and each group's performance profile (report_profile.png).

Both are drawn only when at least two groups have at least 2 seeds each; otherwise the files are removed,
so that no figure of an earlier report is left to contradict this one. matplotlib (Agg) is imported only
while drawing, so `sweep --help` stays fast.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..results import compare as comparelib
from ..sweepdir.files import SweepDir, write_bytes_atomic

if TYPE_CHECKING:
    from matplotlib.figure import Figure

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
            lines += [f"![{MATRIX_CAPTION}]({folder.report_matrix_png.name})", "",
                      f"![{PROFILE_CAPTION}]({folder.report_profile_png.name})", "",
                      f"{folder.report_matrix_png.name}: P(row > column) with its 95% interval, a bold, outlined "
                      "cell when the pair's test separates it (the family-wise error held at 5%); "
                      f"{folder.report_profile_png.name}: the fraction of each group's runs whose final return is "
                      "above tau, with a 95% stratified-bootstrap band."]
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
    if comparable < 2:
        for stale in (folder.report_matrix_png, folder.report_profile_png):
            stale.unlink(missing_ok=True)
        why = (f"they need at least two groups with at least {comparelib.MIN_SEEDS} seeds each, and "
               f"{'only one group has' if comparable == 1 else 'no group has'} that many")
        return Decisions(matrix, profiles, why)
    # The PNGs first: report.md, written after, never names a figure that is not there.
    write_bytes_atomic(folder.report_matrix_png, matrix_png(matrix, title))
    write_bytes_atomic(folder.report_profile_png, profile_png(profiles, title))
    return Decisions(matrix, profiles, None)


def matrix_png(matrix: comparelib.Matrix, title: str) -> bytes:
    """P(row > column) as a heat map centred on 0.5 (a coin toss): blue, the row wins; red, the column."""
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    n = len(matrix.groups)
    values = np.full((n, n), np.nan)
    for i, row in enumerate(matrix.cells):
        for j, cell in enumerate(row):
            if cell is not None and cell.p is not None:
                values[i, j] = cell.p
    side = 2.5 + 0.9 * n
    matplotlib.rcParams["text.parse_math"] = False  # group names are user text: drawn, never parsed as math
    fig = Figure(figsize=(side + 2.0, side))
    ax = fig.subplots()
    colors = matplotlib.colormaps["RdBu"].with_extremes(bad="white")  # the diagonal stays blank
    image = ax.imshow(np.ma.masked_invalid(values), cmap=colors, vmin=0.0, vmax=1.0)
    font = 8 if n <= 6 else 7
    for i, row in enumerate(matrix.cells):
        for j, cell in enumerate(row):
            if cell is None:
                continue
            if cell.p is None or cell.low is None or cell.high is None:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="0.9", edgecolor="0.65", hatch="//",
                                       linewidth=0))
                if n <= VALUES_UP_TO:
                    ax.text(j, i, "n/a", ha="center", va="center", fontsize=font, color="0.35")
                continue
            if cell.separated:
                ax.add_patch(Rectangle((j - 0.46, i - 0.46), 0.92, 0.92, fill=False, edgecolor="black",
                                       linewidth=2))
            if n <= VALUES_UP_TO:
                text = f"{cell.p:.2f}" + (f"\n[{cell.low:.2f},{cell.high:.2f}]" if n <= INTERVALS_UP_TO else "")
                ax.text(j, i, text, ha="center", va="center", fontsize=font,
                        fontweight="bold" if cell.separated else "normal",
                        color="white" if abs(cell.p - 0.5) > 0.3 else "black")  # dark ends take white text
    labels = [label(g, s) for g, s in zip(matrix.groups, matrix.seeds, strict=True)]
    ax.set_xticks(range(n), labels, rotation=40, ha="right", rotation_mode="anchor")
    ax.set_yticks(range(n), labels)
    ax.set(xlabel="column", ylabel="row",
           title=f"{title}: P(row > column) over seeds, 95% interval\n"
                 f"bold and outlined: separated by the test at {matrix.confidence:.0%}, family-wise; n/a: fewer than "
                 f"{comparelib.MIN_SEEDS} seeds")
    ax.title.set_fontsize(9)
    fig.colorbar(image, ax=ax, label="P(row > column)", fraction=0.046, pad=0.04)
    return _png(fig)


def profile_png(profiles: comparelib.Profiles, title: str) -> bytes:
    """Each group's fraction of runs above tau as a step curve, with its stratified-bootstrap band."""
    import matplotlib
    from matplotlib.figure import Figure

    matplotlib.rcParams["text.parse_math"] = False  # group names are user text: drawn, never parsed as math
    fig = Figure(figsize=(9, 5.5))
    ax = fig.subplots()
    cycle = matplotlib.colormaps["tab10" if len(profiles.groups) <= 10 else "tab20"]
    for k, profile in enumerate(profiles.groups):
        color = cycle(k % cycle.N)
        ax.step(profiles.taus, profile.fraction, where="post", color=color, linewidth=2,
                label=label(profile.group, profile.seeds))
        ax.fill_between(profiles.taus, profile.low, profile.high, step="post", color=color, alpha=0.2, linewidth=0)
    ax.set(xlabel="final evaluation return τ", ylabel="fraction of runs with a return above τ",
           ylim=(-0.02, 1.02), title=f"{title}: performance profiles, 95% stratified-bootstrap band")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    return _png(fig)


def _png(fig: Figure) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)  # Agg, whatever backend the environment names: no display is needed
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    return buffer.getvalue()
