"""A search read back from its sweep folder: trials ranked by objective, with each seed's value recomputed from
the run files, and the best trial's parameters as a block to paste into a spec."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from typing import Any

import yaml

from ..errors import InputError
from ..results.sections import Block, Code, Section, Table, Text
from ..results.sections import to_markdown as to_section_markdown
from ..spec.algos import ALGO_NAMES
from ..spec.searchspace import SearchSpec
from ..spec.sweepspec import SweepSpec
from ..sweepdir.files import SweepDir
from ..sweepdir.models import TrialRecord, TrialState
from . import pareto as paretolib
from .journal import replay
from .objective import confidence, run_value
from .studies import run_succeeded

STATE_RANK = {TrialState.COMPLETE: 0, TrialState.PRUNED: 1, TrialState.RUNNING: 2, TrialState.FAILED: 3}


@dataclass(frozen=True)
class TrialRow:
    record: TrialRecord
    seeds_done: int
    """Seeds with a value (succeeded runs)."""
    seeds: int
    ci: tuple[float, float] | None
    """The first objective's 95% interval over seeds (objective.confidence)."""
    pareto_rank: int | None = None
    """A complete trial's front within its study, 0 for the Pareto front (multi-objective searches)."""
    cpu_s: float | None = None
    """What the trial cost: its succeeded seeds' CPU seconds and env steps, summed (None for CPU seconds when
    a seed's result.json predates them)."""
    env_steps: float | None = None

    @property
    def value(self) -> float | None:
        return self.record.value

    @property
    def on_front(self) -> bool:
        return self.pareto_rank == 0


def read_search(sweep_dir: SweepDir) -> SearchSpec | None:
    """The search section of the sweep's resolved spec (sweep.yaml); None for a grid sweep."""
    try:
        data = yaml.safe_load(sweep_dir.sweep_yaml.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return None
    search = data.get("search") if isinstance(data, dict) else None
    return SearchSpec.model_validate(search) if search else None


def searched(sweep_dir: SweepDir) -> SearchSpec | None:
    """The search of a sweep that has trials to show; None for a grid sweep or a search before its first."""
    return read_search(sweep_dir) if sweep_dir.trials_jsonl.exists() else None


def search_of(sweep_dir: SweepDir, asked: str) -> SearchSpec:
    """The sweep's search; InputError saying `asked` is for a search where the sweep is not one."""
    search = read_search(sweep_dir)
    if search is None:
        raise InputError(f"{sweep_dir.path}: {asked}")
    return search


def trials_of(sweep_dir: SweepDir) -> tuple[list[TrialRow], SearchSpec] | None:
    """A search's trials, ranked, and its search; None for another kind, or a search before its first trial."""
    search = searched(sweep_dir)
    return (ranked(sweep_dir, search), search) if search is not None else None


def ranked(sweep_dir: SweepDir, search: SearchSpec) -> list[TrialRow]:
    """Complete trials best first (for several objectives: the Pareto front first, each front by the first
    objective), then pruned, running and failed ones."""
    rows = []
    for rec in replay(sweep_dir.trials_jsonl):
        values = [v for run_id in rec.runs if (v := run_value(sweep_dir.run(run_id), search.metric)) is not None]
        rows.append(TrialRow(rec, len(values), len(rec.runs), confidence(values, search.metric),
                             cpu_s=_cost(sweep_dir, rec, "cpu_seconds"), env_steps=_cost(sweep_dir, rec, "env_steps")))
    if search.multi:
        rows = _with_fronts(rows, [o.maximize for o in search.objective])
    sign = -1.0 if search.maximize else 1.0
    return sorted(rows, key=lambda r: (STATE_RANK[r.record.state], r.pareto_rank or 0,
                                       sign * r.value if r.value is not None else 0.0, r.record.study,
                                       r.record.number))


def _cost(sweep_dir: SweepDir, rec: TrialRecord, metric: str) -> float | None:
    """The trial's succeeded seeds' cost, summed; None without one, or with one that lacks it."""
    costs = [run_value(sweep_dir.run(run_id), metric) for run_id in rec.runs if run_succeeded(sweep_dir, run_id)]
    return sum(c for c in costs if c is not None) if costs and None not in costs else None


def _with_fronts(rows: list[TrialRow], maximize: list[bool]) -> list[TrialRow]:
    """Each complete trial with its Pareto rank among the complete trials of its study."""
    out = [r for r in rows if r.record.state is not TrialState.COMPLETE or r.record.values is None]
    for study in dict.fromkeys(r.record.study for r in rows):
        done = [r for r in rows if r.record.study == study and r.record.state is TrialState.COMPLETE
                and r.record.values is not None]
        points = [list(r.record.values or []) for r in done]
        out += [replace(r, pareto_rank=rank) for r, rank in zip(done, paretolib.ranks(points, maximize), strict=True)]
    return out


def front(rows: list[TrialRow]) -> list[TrialRow]:
    """The trials on their study's Pareto front, in ranking order."""
    return [r for r in rows if r.on_front]


def best_block(row: TrialRow) -> str:
    """The trial's parameters as spec YAML: the algorithm's section (ppo, sac, ...) and env_kwargs mappings,
    top keys, and each searched edit label as the one value of its edit_grid axis."""
    data: dict[str, Any] = {}
    for key, value in row.record.params.items():
        head, _, rest = key.partition(".")
        if head in (*ALGO_NAMES, "env_kwargs"):
            data.setdefault(head, {})[rest] = value
        elif head == "edits":
            data.setdefault("edit_grid", {})[rest] = [value]
        else:
            data[key] = value
    text = yaml.safe_dump(data, sort_keys=False)
    if "edit_grid" in data:
        text = text.replace("edit_grid:", "edit_grid:  # under the variant, in place of the searched axes", 1)
    return text


def space_lines(spec: SweepSpec) -> list[str]:
    search = spec.search
    assert search is not None
    lines = [f"search: {search.method}, {search.trials} trials x {search.seeds_per_trial} seeds per study, "
             f"seed {search.seed}, {objectives_text(search)}"]
    if search.prune:
        lines.append(f"prune: {search.prune.method} after {search.prune.after} timesteps")
    for key, dim in search.space.items():
        lines.append(f"  {key}: {dim.kind} {dim.numbers()}")
    return lines


def objectives_text(search: SearchSpec) -> str:
    """'objective eval_iqm (maximize)', or 'objectives eval_iqm (maximize), mass (minimize)'."""
    return ("objectives " if search.multi else "objective ") + \
        ", ".join(f"{o.metric} ({o.direction})" for o in search.objective)


def objective_cells(row: TrialRow, search: SearchSpec) -> list[str]:
    """The trial's value of each objective, as the tables show them ('-' where it has none)."""
    if not search.multi:
        return [f"{row.value:.2f}" if row.value is not None else "-"]
    return [f"{v:.4g}" for v in row.record.values] if row.record.values else ["-"] * len(search.objective)


def front_title(row: TrialRow, search: SearchSpec) -> str:
    """'trial 3 of walker: eval_iqm 12.34, mass 4.2'."""
    cells = objective_cells(row, search)
    values = ", ".join(f"{o.metric} {cell}" for o, cell in zip(search.objective, cells, strict=True))
    return f"trial {row.record.number} of {row.record.study}: {values}"


def trials_sections(rows: list[TrialRow], search: SearchSpec) -> list[Section]:
    """The ranked trials as a report's section: each one's objective (for one objective, with its 95% interval
    over seeds; for several, its Pareto front), seeds and parameters, then the best trial's block to paste;
    warm against cold starts after it where the search warm started."""
    metrics = [o.metric for o in search.objective]
    if search.multi:
        title = f"trials by Pareto front ({objectives_text(search)}), front first"
        head = ("rank", "study", "trial", "state", "front", *metrics, "seeds", "parameters")
    else:
        title = f"trials by {search.metric}, best first"
        head = ("rank", "study", "trial", "state", search.metric, "95% CI", "seeds", "parameters")
    table = []
    for rank, row in enumerate(rows, 1):
        rec = row.record
        if search.multi:
            middle = ["yes" if row.on_front else "", *objective_cells(row, search)]
        else:
            middle = [*objective_cells(row, search), f"[{row.ci[0]:.2f}, {row.ci[1]:.2f}]" if row.ci else "-"]
        table.append((str(rank), rec.study, str(rec.number), rec.state.value, *middle,
                      f"{row.seeds_done}/{row.seeds}", " ".join(f"{k}={v}" for k, v in rec.params.items())))
    blocks: list[Block] = [Table(head, tuple(table), "trials")]
    best = next((r for r in rows if r.record.state is TrialState.COMPLETE), None)
    if best is not None and not search.multi:
        blocks.append(Code(best_block(best), f"Best: trial {best.record.number} of {best.record.study}"))
    return [Section(title, tuple(blocks)), *start_sections(rows, search)]


def to_markdown(rows: list[TrialRow], search: SearchSpec, figure: str | None = None) -> str:
    """The ranked trials as report.md's sections, and for several objectives the Pareto front: `figure` (its
    file name beside report.md) and every point's block."""
    text = to_section_markdown(trials_sections(rows, search))
    points = front(rows) if search.multi else []
    if not points:
        return text
    lines = ["## Pareto front", ""]
    if figure is not None:
        lines += [f"![Pareto front]({figure})", ""]
    lines.append("Each point's parameters as spec keys to paste:")
    for row in points:
        lines += ["", f"**{front_title(row, search)}**", "", "```yaml", best_block(row).rstrip(), "```"]
    return text + "\n".join(lines) + "\n"


def start_sections(rows: list[TrialRow], search: SearchSpec) -> list[Section]:
    """warm_start: nearest: the complete warm and cold trials side by side (count, mean of each objective);
    nothing for a search that did not warm start."""
    starts = [s for s in ("warm", "cold") if any(r.record.start == s for r in rows)]
    if not starts:
        return []
    metrics = [o.metric for o in search.objective]
    table = []
    for start in starts:
        done = [r.record.objectives for r in rows if r.record.start == start
                and r.record.state is TrialState.COMPLETE and r.record.objectives]
        means = [f"{statistics.fmean(column):.4g}" for column in zip(*done, strict=True)] if done else \
            ["-"] * len(metrics)
        table.append((start, str(len(done)), *means))
    return [Section("warm against cold starts", (
        Text("Complete trials that started from the nearest finished design (warm) or from scratch (cold)."),
        Table(("start", "trials", *(f"mean {m}" for m in metrics)), tuple(table), "starts")))]


def to_dicts(rows: list[TrialRow]) -> list[dict[str, Any]]:
    """The ranked trials for `sweep report --format json`."""
    return [{**row.record.model_dump(mode="json", by_alias=True), "rank": rank, "seeds_done": row.seeds_done,
             "ci_low": row.ci[0] if row.ci else None, "ci_high": row.ci[1] if row.ci else None,
             "cpu_seconds": row.cpu_s, "env_steps": row.env_steps,
             **({"pareto_rank": row.pareto_rank} if row.pareto_rank is not None else {})}
            for rank, row in enumerate(rows, 1)]
