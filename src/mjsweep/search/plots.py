"""A search's figures: the objective against each searched parameter, and over the trials in the order asked."""

from __future__ import annotations

from pathlib import Path

from ..spec.searchspace import SearchSpec
from ..sweepdir.files import SweepDir
from ..sweepdir.models import TrialState
from .record import replay


def plot_search(sweep_dir: SweepDir, search: SearchSpec, output: Path) -> list[Path]:
    """<name>_search.png beside `output`: one panel per parameter and one over trials; [] without a value."""
    import matplotlib

    matplotlib.use("Agg")
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
        ax.set_ylabel(search.objective.metric)
    over = axes[0][-1]
    for study in dict.fromkeys(r.study for r in done):  # each study's trials and its best so far
        order = sorted((r for r in done if r.study == study), key=lambda r: r.number)
        values = [float(r.value or 0.0) for r in order]
        best = [max(values[: i + 1]) if search.maximize else min(values[: i + 1]) for i in range(len(values))]
        points = over.plot([r.number for r in order], values, "o")[0]
        over.plot([r.number for r in order], best, "-", color=points.get_color(), label=f"{study}: best so far")
    over.set_xlabel("trial")
    over.xaxis.set_major_locator(MaxNLocator(integer=True))
    over.set_ylabel(search.objective.metric)
    over.legend()
    fig.tight_layout()
    path = output.with_name(f"{output.stem}_search.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]
