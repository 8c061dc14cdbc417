"""`sweep plot`: learning curves (mean over seeds with a 95% band) and final returns per variant x grid point,
as the SVG files of report.html's figures (ui/report_figures.py); a search's figures beside them."""

from __future__ import annotations

from pathlib import Path

from .. import svgplot
from ..results.report import aggregate
from ..results.rows import ResultRow
from ..sweepdir.files import SweepDir, write_text_atomic
from . import report_figures
from .curves import sweep_curves


def plot_sweep(sweep_dir: Path, rows: list[ResultRow], output: Path) -> list[Path]:
    """Write the learning curves to `output` and the final returns to <stem>_final.svg; both paths."""
    folder = SweepDir(sweep_dir)
    curves = sweep_curves(folder, rows)
    output.parent.mkdir(parents=True, exist_ok=True)
    colors = {g: svgplot.color(i, len(curves.bands)) for i, g in enumerate(curves.bands)}
    write_text_atomic(output, report_figures.curves_svg(curves, colors, folder.path.name).document(standalone=True))
    final = report_figures.final_svg(aggregate(rows), rows, colors, folder.path.name)
    if final is None:
        return [output]
    final_path = output.with_name(f"{output.stem}_final.svg")
    write_text_atomic(final_path, final.document(standalone=True))
    return [output, final_path]
