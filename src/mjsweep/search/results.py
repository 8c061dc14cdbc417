"""A search read back from its sweep folder: trials ranked by objective, with each seed's value recomputed from
the run files, and the best trial's parameters as a block to paste into a spec."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from ..spec.algos import ALGO_NAMES
from ..spec.searchspace import SearchSpec
from ..spec.sweepspec import SweepSpec
from ..sweepdir.files import SweepDir
from ..sweepdir.models import TrialRecord, TrialState
from .objective import confidence, run_value
from .record import replay

STATE_RANK = {TrialState.COMPLETE: 0, TrialState.PRUNED: 1, TrialState.RUNNING: 2, TrialState.FAILED: 3}


@dataclass(frozen=True)
class TrialRow:
    record: TrialRecord
    seeds_done: int
    """Seeds with a value (succeeded runs)."""
    seeds: int
    ci: tuple[float, float] | None

    @property
    def value(self) -> float | None:
        return self.record.value


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


def ranked(sweep_dir: SweepDir, search: SearchSpec) -> list[TrialRow]:
    """Complete trials best first, then pruned, running and failed ones."""
    rows = []
    for rec in replay(sweep_dir.trials_jsonl):
        values = [v for run_id in rec.runs
                  if (v := run_value(sweep_dir.run(run_id), search.objective.metric)) is not None]
        rows.append(TrialRow(rec, len(values), len(rec.runs), confidence(values)))
    sign = -1.0 if search.maximize else 1.0
    return sorted(rows, key=lambda r: (STATE_RANK[r.record.state],
                                       sign * r.value if r.value is not None else 0.0, r.record.study,
                                       r.record.number))


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
             f"seed {search.seed}, objective {search.objective.metric} ({search.objective.direction})"]
    if search.prune:
        lines.append(f"prune: {search.prune.method} after {search.prune.after} timesteps")
    for key, dim in search.space.items():
        lines.append(f"  {key}: {dim.kind} {dim.numbers()}")
    return lines


def to_markdown(rows: list[TrialRow], metric: str) -> str:
    """The ranked trials as a Markdown section, with the best block, for report.md."""
    lines = [f"## Trials by {metric}, best first", "",
             f"| rank | study | trial | state | {metric} | 95% CI | seeds | parameters |", "|---" * 8 + "|"]
    for rank, row in enumerate(rows, 1):
        rec = row.record
        value = f"{row.value:.2f}" if row.value is not None else "-"
        ci = f"[{row.ci[0]:.2f}, {row.ci[1]:.2f}]" if row.ci else "-"
        params = " ".join(f"`{k}={v}`" for k, v in rec.params.items())
        lines.append(f"| {rank} | {rec.study} | {rec.number} | {rec.state.value} | {value} | {ci} | "
                     f"{row.seeds_done}/{row.seeds} | {params} |")
    best = next((r for r in rows if r.record.state is TrialState.COMPLETE), None)
    if best is not None:
        lines += ["", f"Best: trial {best.record.number} of {best.record.study}:", "", "```yaml",
                  best_block(best).rstrip(), "```"]
    return "\n".join(lines) + "\n"


def to_dicts(rows: list[TrialRow]) -> list[dict[str, Any]]:
    """The ranked trials for `sweep report --format json`."""
    return [{**row.record.model_dump(mode="json", by_alias=True), "rank": rank, "seeds_done": row.seeds_done,
             "ci_low": row.ci[0] if row.ci else None, "ci_high": row.ci[1] if row.ci else None}
            for rank, row in enumerate(rows, 1)]
