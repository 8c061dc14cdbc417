"""Aggregation over seeds: one row per variant x grid point, as a table, CSV, Markdown or JSON."""

from __future__ import annotations

import json
import statistics
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..robots.variants import ModelStats
from ..sweepdir.csvfiles import ReportRow, csv_text_extended, read_evaluations
from ..sweepdir.files import SweepDir, read_or_none
from ..sweepdir.models import DisplayState
from . import stats
from .rows import ResultRow


@dataclass(frozen=True)
class GroupRow:
    group: str
    variant: str
    grid: dict[str, Any]
    runs: int
    succeeded: int
    failed: int
    mean_return: float | None
    std_return: float | None
    """Sample standard deviation over seeds (0 with a single seed)."""
    mean_fps: float | None
    """Mean over succeeded runs of env steps per second of training (rollout + update)."""
    iqm_return: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    """Student's t 95% interval of the mean return over seeds (stats.mean_interval); None under two seeds,
    where no spread is known (never [x, x])."""
    iqm_ci_low: float | None = None
    iqm_ci_high: float | None = None
    """95% interval of the IQM over seeds (stats.iqm_t_interval: Tukey and McLaughlin's trimmed-mean t); None
    under two seeds."""
    model: ModelStats | None = None
    """Total mass, bodies, joints, actuators of the variant's compiled model; None if it does not compile."""
    mean_eval_s: float | None = None
    """Mean seconds of the final evaluation over succeeded runs (None for results written before eval_s)."""
    mean_best_return: float | None = None
    """Mean over seeds of each run's best periodic evaluation (eval.every); None without them."""
    mean_eval_auc: float | None = None
    """Mean over seeds of the area under each run's evaluation curve divided by its timestep span (eval_auc)."""
    mean_checkpoint_s: float | None = None
    """Mean seconds each run's last checkpoint took to write (model, statistics, replay buffer)."""
    mean_checkpoint_mb: float | None = None
    """Mean size of each run's last checkpoint on disk, MiB: what a SAC or TD3 replay buffer costs."""
    cpu_s: float | None = None
    """CPU seconds the group's succeeded runs spent, summed (None if one ran before result.json had cpu_s)."""
    env_steps: int | None = None
    """Env steps the group's succeeded runs trained, summed."""
    edits: dict[str, Any] = field(default_factory=dict)
    """The edit values its variant was generated from (an edit_grid point, a design trial's), label: value."""


RANKINGS = ("final", "best")
"""What `aggregate` ranks groups by: the final evaluation's mean return, or the best periodic evaluation's."""


def aggregate(rows: list[ResultRow], models: dict[str, ModelStats | None] | None = None,
              aucs: dict[str, float] | None = None, rank: str = "final") -> list[GroupRow]:
    """Group runs that differ only by seed; best mean return first (rank "final": of the final evaluation,
    "best": of each run's best periodic evaluation), groups without one last.

    `models` maps a variant's name to its model statistics (see model_stats); `aucs` a run id to the area
    under its evaluation curve (eval_aucs).
    """
    groups: dict[str, list[ResultRow]] = {}
    for row in rows:
        groups.setdefault(row.group, []).append(row)
    out = [_group_row(name, members, (models or {}).get(members[0].variant), aucs or {})
           for name, members in groups.items()]

    def score(g: GroupRow) -> float | None:
        return g.mean_best_return if rank == "best" else g.mean_return

    return sorted(out, key=lambda g: (score(g) is None, -(score(g) or 0.0), g.group))


def eval_auc(path: Path) -> float | None:
    """The area under a run's evaluation curve (evaluations.csv: mean return against timesteps, trapezoids)
    divided by its timestep span: the mean evaluation return over training. None without evaluations."""
    evaluations = read_evaluations(path)
    return stats.mean_over_span([e.timesteps for e in evaluations], [e.mean_return for e in evaluations])


def eval_aucs(sweep_dir: SweepDir, rows: list[ResultRow]) -> dict[str, float]:
    """eval_auc of every succeeded run that has evaluations.csv."""
    out = {}
    for row in rows:
        if row.ok and (auc := eval_auc(sweep_dir.run(row.run_id).evaluations_csv)) is not None:
            out[row.run_id] = auc
    return out


def _group_row(name: str, members: list[ResultRow], model: ModelStats | None,
               aucs: dict[str, float] | None = None) -> GroupRow:
    returns = [m.final_return for m in members if m.final_return is not None]
    ok = [m.result for m in members if m.ok and m.result]
    fps = [f for f in (r.training_fps for r in ok) if f is not None]
    eval_s = [r.eval_s for r in ok if r.eval_s is not None]
    best = [r.best_eval_mean_return for r in ok if r.best_eval_mean_return is not None]
    auc = [(aucs or {})[m.run_id] for m in members if m.run_id in (aucs or {})]
    checkpoint_s = [r.checkpoint_save_s for r in ok if r.checkpoint_save_s is not None]
    checkpoint_mb = [r.checkpoint_bytes / 2**20 for r in ok if r.checkpoint_bytes is not None]
    cpu_s = [r.cpu_s for r in ok]
    steps = [r.timesteps for r in ok]
    summary = stats.summarize(returns) if returns else None
    # One seed has no spread: no interval, rather than [x, x].
    ci = (summary.ci_low, summary.ci_high) if summary is not None and summary.n >= 2 else None
    iqm_ci = stats.iqm_t_interval(returns) if ci is not None else None
    return GroupRow(
        group=name, variant=members[0].variant, grid=members[0].grid, edits=members[0].edits, runs=len(members),
        succeeded=len(returns), failed=sum(1 for m in members if m.state == DisplayState.FAILED),
        mean_return=summary.mean if summary else None, std_return=summary.std if summary else None,
        mean_fps=statistics.fmean(fps) if fps else None, iqm_return=summary.iqm if summary else None,
        ci_low=ci[0] if ci else None, ci_high=ci[1] if ci else None, model=model,
        iqm_ci_low=iqm_ci[0] if iqm_ci else None, iqm_ci_high=iqm_ci[1] if iqm_ci else None,
        mean_eval_s=statistics.fmean(eval_s) if eval_s else None,
        mean_best_return=statistics.fmean(best) if best else None,
        mean_eval_auc=statistics.fmean(auc) if auc else None,
        mean_checkpoint_s=statistics.fmean(checkpoint_s) if checkpoint_s else None,
        mean_checkpoint_mb=statistics.fmean(checkpoint_mb) if checkpoint_mb else None,
        cpu_s=_total(cpu_s), env_steps=_total(steps),
    )


def _total(values: list[Any]) -> Any:
    """The sum of every succeeded run's figure; None with no run, or with one that lacks it."""
    return sum(values) if values and None not in values else None


def model_stats(sweep_dir: SweepDir, rows: list[ResultRow]) -> dict[str, ModelStats | None]:
    """Each variant's model statistics, from variants.json as the launcher wrote it; a variant it does not
    list (a sweep from before variants.json) is compiled from its runs' XML, None if that fails."""
    written = read_or_none(sweep_dir.read_variants)
    listed = written.variants if written else []
    out: dict[str, ModelStats | None] = {v.name: ModelStats(v.bodies, v.joints, v.actuators, v.total_mass)
                                         for v in listed}
    for row in rows:
        if row.variant not in out and row.xml:
            out[row.variant] = _compiled_stats(Path(row.xml))
    return out


def _compiled_stats(xml: Path) -> ModelStats | None:
    """Compiles the model (imports mujoco); a missing or broken XML gives None."""
    from ..robots.variants import compile_model, model_stats

    try:
        return model_stats(compile_model(xml)) if xml.is_file() else None
    except ValueError:
        return None


def report_rows(groups: list[GroupRow]) -> list[ReportRow]:
    """report.csv's row of each group."""
    out = []
    for g in groups:
        m = g.model
        out.append(ReportRow(
            g.variant, grid_text(g.grid), g.runs, g.succeeded, g.failed, g.mean_return, g.std_return, g.iqm_return,
            g.ci_low, g.ci_high, g.iqm_ci_low, g.iqm_ci_high, g.mean_fps, g.mean_eval_s,
            m.total_mass if m else None, m.bodies if m else None, m.joints if m else None,
            m.actuators if m else None, g.mean_best_return, g.mean_eval_auc, g.mean_checkpoint_s,
            g.mean_checkpoint_mb, g.cpu_s, g.env_steps or None))
    return out


def to_csv(groups: list[GroupRow], more: dict[str, dict[str, Any]] | None = None) -> str:
    """report.csv: ReportRow's columns, then each grid key's and edit label's value, a column each, then the
    columns of `more` (group -> column -> value: held-out physics), empty for a group it lacks."""
    grid_names, edit_names = value_columns([g.grid for g in groups], [g.edits for g in groups], ReportRow.columns())
    more = more or {}
    more_names = list(dict.fromkeys(column for values in more.values() for column in values))
    rows = [(row, [g.grid.get(k) for k in grid_names] + [g.edits.get(k) for k in edit_names]
             + [more.get(g.group, {}).get(k) for k in more_names])
            for g, row in zip(groups, report_rows(groups), strict=True)]
    return csv_text_extended(ReportRow, rows, [*grid_names.values(), *edit_names.values(), *more_names])


def value_columns(grids: list[dict[str, Any]], edits: list[dict[str, Any]],
                  taken: Collection[str]) -> tuple[dict[str, str], dict[str, str]]:
    """The column of each grid key and of each edit label, in first-seen order: the key itself, or grid_<key>
    (edit_<label>) where a fixed column, or a grid key for a label, has that name already."""
    grid_keys = list(dict.fromkeys(k for g in grids for k in g))
    labels = list(dict.fromkeys(k for e in edits for k in e))
    grid_names = {k: f"grid_{k}" if k in taken else k for k in grid_keys}
    edit_names = {k: f"edit_{k}" if k in taken or k in grid_names else k for k in labels}
    return grid_names, edit_names


def failed_runs(rows: list[ResultRow]) -> list[tuple[str, str]]:
    """Each failed run and why it ended (status.json's cause; its error tail's last line in older files)."""
    return [(row.run_id, row.cause or "no cause recorded") for row in rows if row.state == DisplayState.FAILED]


def to_markdown(groups: list[GroupRow], title: str, warnings: list[str],
                failed: list[tuple[str, str]] | None = None, no_groups: str | None = None) -> str:
    """report.md's head: the groups' table, or `no_groups` in its place (a population's sweep), the failed runs
    and the warnings."""
    lines = [f"# {title}", ""]
    if no_groups is not None:
        lines.append(no_groups)
    else:
        lines += ["Final evaluation return over seeds, best first (95% CI: Student's t interval of the mean; IQM "
                  "95% CI: trimmed-mean t interval).", "",
                  "| " + " | ".join(ReportRow.columns()) + " |", "|" + "---|" * len(ReportRow.columns())]
        lines += ["| " + " | ".join(c.replace("|", "\\|") or "-" for c in cells) + " |" for cells in
                  (row.cells() for row in report_rows(groups))]
    if failed:
        lines += ["", "## Failed runs", "", *(f"- `{run_id}`: {cause}" for run_id, cause in failed)]
    if warnings:
        lines += ["", "## Warnings", "", *(f"- {w}" for w in warnings)]
    return "\n".join(lines) + "\n"


def to_json(groups: list[GroupRow], warnings: list[str], problems: list[str],
            comparisons: list[dict[str, Any]] | None = None, matrix: dict[str, Any] | None = None,
            performance_profile: dict[str, Any] | None = None, seed_rounds: list[dict[str, Any]] | None = None,
            failed: list[tuple[str, str]] | None = None, search: dict[str, Any] | None = None) -> str:
    """The report as JSON; what `--compare` adds (comparisons, the matrix, the profiles), adaptive seeds'
    decisions and a search's keys (its trials, their confirmations) only when given."""
    data: dict[str, Any] = {"groups": [asdict(g) for g in groups], "warnings": warnings, "problems": problems,
                            "failed_runs": [{"run_id": run_id, "cause": cause} for run_id, cause in failed or []]}
    extra = {"comparisons": comparisons, "matrix": matrix, "performance_profile": performance_profile,
             "seed_rounds": seed_rounds}
    data.update({key: value for key, value in extra.items() if value is not None})
    data.update(search or {})
    return json.dumps(data, indent=2) + "\n"


def grid_text(grid: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in grid.items())
