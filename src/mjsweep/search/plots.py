"""A search's figures: the objective against each searched parameter and over the trials in the order asked;
for several objectives, the trials in objective space with each study's Pareto front."""

from __future__ import annotations

import itertools
from pathlib import Path

from ..spec.searchspace import SearchSpec
from ..sweepdir.files import SweepDir
from ..sweepdir.models import TrialState
from .journal import replay
from .ranking import TrialRow


def plot_searched(folder: SweepDir, output: Path) -> list[Path]:
    """A search's figures beside `output` (its trials; a multi-objective search's Pareto front as
    <name>_pareto.png); none for another kind of sweep."""
    from . import ranking

    search = ranking.searched(folder)
    if search is None:
        return []
    written = plot_search(folder, search, output)
    pareto = output.with_name(f"{output.stem}_pareto.png")
    if search.multi and plot_pareto(ranking.ranked(folder, search), search, pareto):
        written.append(pareto)
    return written


def plot_search(sweep_dir: SweepDir, search: SearchSpec, output: Path) -> list[Path]:
    """<name>_search.png beside `output`: one panel per parameter and one over trials (the first objective's
    value); [] without a value."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False  # names and grid values are user text: drawn, never parsed as math
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator, NullFormatter

    done = [r for r in replay(sweep_dir.trials_jsonl) if r.state is TrialState.COMPLETE and r.value is not None]
    if not done:
        return []
    keys = list(search.space)
    fig, axes = plt.subplots(1, len(keys) + 1, figsize=(4 * (len(keys) + 1), 3.5), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=False):
        dim = search.space[key]
        xs = [r.params.get(key) for r in done]
        if dim.choice is not None:
            labels = [str(c) for c in dim.choice]
            ax.scatter([labels.index(str(x)) if str(x) in labels else -1 for x in xs], [r.value for r in done])
            ax.set_xticks(range(len(labels)), labels, rotation=30)
        else:
            ax.scatter(xs, [r.value for r in done])
            if dim.kind == "log_uniform":
                ax.set_xscale("log")
                ax.xaxis.set_minor_formatter(NullFormatter())  # the decade labels only: minor ones overlap
            ax.set_xlim(*dim.bounds)  # the whole searched range, so that unexplored parts show
        ax.set_xlabel(key)
        ax.set_ylabel(search.metric)
    over = axes[0][-1]
    for study in dict.fromkeys(r.study for r in done):  # each study's trials and its best so far
        order = sorted((r for r in done if r.study == study), key=lambda r: r.number)
        values = [float(r.value or 0.0) for r in order]
        best = [max(values[: i + 1]) if search.maximize else min(values[: i + 1]) for i in range(len(values))]
        points = over.plot([r.number for r in order], values, "o")[0]
        over.plot([r.number for r in order], best, "-", color=points.get_color(), label=f"{study}: best so far")
    over.set_xlabel("trial")
    over.xaxis.set_major_locator(MaxNLocator(integer=True))
    over.set_ylabel(search.metric)
    over.legend()
    fig.tight_layout()
    path = output.with_name(f"{output.stem}_search.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


def plot_pareto(rows: list[TrialRow], search: SearchSpec, path: Path) -> bool:
    """The complete trials in objective space, each study's Pareto front filled, labelled with its trial numbers
    and (for two objectives) joined by a line. With more objectives, one panel per pair of objectives;
    the front is that of all objectives, so a point may look dominated in one pair. False, and nothing
    written, without a complete trial."""
    done = [r for r in rows if r.pareto_rank is not None and r.record.values is not None]
    if not done:
        return False
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False  # names and grid values are user text: drawn, never parsed as math
    import matplotlib.pyplot as plt

    pairs = list(itertools.combinations(range(len(search.objective)), 2))
    fig, axes = plt.subplots(1, len(pairs), figsize=(5 * len(pairs), 4), squeeze=False)
    for ax, (i, j) in zip(axes[0], pairs, strict=True):
        for study in dict.fromkeys(r.record.study for r in done):
            mine = [r for r in done if r.record.study == study]
            on = sorted((r for r in mine if r.on_front), key=lambda r: _at(r, i))
            off = [r for r in mine if not r.on_front]
            shown = ax.scatter([_at(r, i) for r in on], [_at(r, j) for r in on], label=f"{study}: Pareto front")
            color = shown.get_facecolor()[0]
            ax.scatter([_at(r, i) for r in off], [_at(r, j) for r in off], facecolors="none", edgecolors=[color],
                       label=f"{study}: dominated")
            if len(pairs) == 1:
                ax.plot([_at(r, i) for r in on], [_at(r, j) for r in on], color=color, alpha=0.5)
            for r in on:
                ax.annotate(str(r.record.number), (_at(r, i), _at(r, j)), textcoords="offset points",
                            xytext=(4, 4), fontsize=8)
        ax.set_xlabel(_label(search, i))
        ax.set_ylabel(_label(search, j))
        ax.legend(fontsize=8)
    fig.suptitle("Pareto front (trial numbers on its points)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def _at(row: TrialRow, k: int) -> float:
    assert row.record.values is not None
    return row.record.values[k]


def _label(search: SearchSpec, k: int) -> str:
    objective = search.objective[k]
    return f"{objective.metric} ({'higher' if objective.maximize else 'lower'} is better)"
