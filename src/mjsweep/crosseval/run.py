"""`sweep evaluate --cross`: the pairs still to evaluate run (evaljobs.py: through engine/scheduler, at most
`workers` at once), then the matrix written: matrix.csv and its heatmap."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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
    csv, heatmap = sweep.cross_matrix_csv, sweep.cross_matrix_png
    write_text_atomic(csv, to_csv(cells))
    return CrossOutcome(cells, csv, heatmap if _heatmap(cells, sweep.path.name, heatmap) else None, len(todo),
                        failed)


def _heatmap(cells: list[Cell], title: str, output: Path) -> bool:
    """Train group x test variant, coloured by mean return, each cell written out; False without numbers."""
    if not any(c.mean is not None for c in cells):
        return False
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False  # names and grid values are user text: drawn, never parsed as math
    import matplotlib.pyplot as plt
    import numpy as np

    trains, tests = sorted({c.train for c in cells}), sorted({c.test for c in cells})
    grid = np.full((len(trains), len(tests)), np.nan)
    for c in cells:
        if c.mean is not None:
            grid[trains.index(c.train), tests.index(c.test)] = c.mean
    fig, ax = plt.subplots(figsize=(1.6 * len(tests) + 3, 0.6 * len(trains) + 2))
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", aspect="auto")
    low, high = float(np.nanmin(grid)), float(np.nanmax(grid))
    for c in cells:
        text = "skipped" if c.mean is None else f"{c.mean:.1f}" + (
            f"\n[{c.ci_low:.1f}, {c.ci_high:.1f}]" if c.ci_low is not None and c.ci_high is not None else "")
        # viridis turns yellow towards its top: dark text there
        bright = c.mean is None or high == low or (c.mean - low) / (high - low) > 0.6
        ax.text(tests.index(c.test), trains.index(c.train), text, ha="center", va="center", fontsize=8,
                color="black" if bright else "white")
    ax.set_xticks(range(len(tests)), tests, rotation=30, ha="right")
    ax.set_yticks(range(len(trains)), trains)
    ax.set(xlabel="evaluated on", ylabel="trained on", title=f"{title}: mean return over seeds, 95% t interval")
    fig.colorbar(image, ax=ax, label="mean return")
    fig.savefig(output, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return True
