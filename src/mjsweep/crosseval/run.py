"""`sweep evaluate --cross`: the pairs still to evaluate run (evaljobs.py: through engine/scheduler, at most
`workers` at once), then the matrix written: matrix.csv and its heatmap (matrix.svg)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import svgplot
from ..errors import InputError
from ..sweepdir.files import SweepDir, write_text_atomic
from ..sweepdir.trust import Trust, granted, require
from .evaljobs import run_jobs
from .pairs import Cell, jobs, matrix, to_csv, trained_runs


class NothingToEvaluate(InputError):
    """The sweep folder has no trained policy."""


@dataclass
class CrossOutcome:
    cells: list[Cell]
    csv: Path
    heatmap: Path | None
    evaluated: int
    """Policies evaluated by this invocation (the others had every result already)."""
    failed: list[str]
    """Run ids whose evaluation process failed, each with its last output line."""


def evaluate_cross(sweep: SweepDir, episodes: int, workers: int, deterministic: bool = True,
                   say: Callable[[str], None] = print, trust: Trust = ()) -> CrossOutcome:
    """UntrustedFolderError before anything is unpickled or written when a policy's files lie in a sweep
    folder no one trusted."""
    sweep = SweepDir(sweep.path.resolve())  # the evaluation processes run in a folder of their own
    trained, every = trained_runs(sweep)
    if not trained:
        raise NothingToEvaluate(f"{sweep.path}: no succeeded run with a model.zip to evaluate")
    trust = list(trust)
    for run in trained:
        run_dir = sweep.run(run.run_id)
        for file in (run_dir.model_zip, run_dir.vecnormalize):
            require(file, sweep.path, trust)
    todo = jobs(sweep, trained, every, episodes)
    say(f"cross: {len(trained)} policies x {len({r.variant for r in every})} variants, "
        f"{sum(len(j.targets) for j in todo)} pairs to evaluate, {workers} at once")
    with granted(trust):  # the evaluation processes check again
        failed = run_jobs(todo, episodes, deterministic, workers, say) if todo else []
    cells = matrix(sweep, trained)
    sweep.cross.mkdir(parents=True, exist_ok=True)
    csv, heatmap = sweep.cross_matrix_csv, sweep.cross_matrix_svg
    write_text_atomic(csv, to_csv(cells))
    sweep.cross_matrix_png.unlink(missing_ok=True)
    return CrossOutcome(cells, csv, heatmap if _heatmap(cells, sweep.path.name, heatmap) else None, len(todo),
                        failed)


def _heatmap(cells: list[Cell], title: str, output: Path) -> bool:
    """Train group x test variant, coloured by mean return (viridis), each cell written out; False, and nothing
    written, without numbers."""
    means = [c.mean for c in cells if c.mean is not None]
    if not means:
        return False
    low, high = min(means), max(means)
    trains, tests = sorted({c.train for c in cells}), sorted({c.test for c in cells})
    grid: list[list[svgplot.Cell | None]] = [[None] * len(tests) for _ in trains]
    for c in cells:
        grid[trains.index(c.train)][tests.index(c.test)] = _cell(c, low, high)
    figure = svgplot.heatmap(f"{title}: mean return over seeds of each trained group on each variant",
                             [f"{title}: mean return over seeds, 95% t interval"], trains, tests, grid,
                             xlabel="evaluated on", ylabel="trained on", colorbar=("mean return", svgplot.sequential),
                             colorbar_limits=(low, high), ids="cross")
    write_text_atomic(output, figure.document(standalone=True))
    return True


def _cell(cell: Cell, low: float, high: float) -> svgplot.Cell:
    """A pair's mean and interval on its colour; "skipped", hatched, where the spaces do not match."""
    if cell.mean is None:
        return svgplot.Cell(None, ("skipped",))
    share = 0.5 if high == low else (cell.mean - low) / (high - low)
    interval = (f"[{cell.ci_low:.1f}, {cell.ci_high:.1f}]",) if cell.ci_low is not None and cell.ci_high is not None \
        else ()
    # viridis turns yellow towards its top: dark text there
    return svgplot.Cell(svgplot.sequential(share), (f"{cell.mean:.1f}", *interval),
                        text_fill=svgplot.TEXT if share > 0.6 else "#ffffff")
