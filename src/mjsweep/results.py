"""Reading a sweep dir back: one ResultRow per run folder; a missing or corrupt file is a row, not a crash."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .plan import RunSpec
from .rundir import CorruptFileError, RunDir, RunStatus, SweepDir


@dataclass(frozen=True)
class ResultRow:
    run_id: str
    variant: str
    grid: dict[str, Any]
    seed: int
    group: str
    state: str
    """status.json's state, or 'unknown' when it is missing or corrupt."""
    status: RunStatus | None
    result: dict[str, Any] | None
    problems: list[str] = field(default_factory=list)
    """Files that could not be read, each with why."""
    xml: str | None = None
    """spec.json's model path, for the model statistics in a report."""

    @property
    def ok(self) -> bool:
        return self.state == "succeeded" and self.result is not None and "eval_mean_return" in self.result


def collect(sweep_dir: SweepDir | Path) -> list[ResultRow]:
    sweep_dir = sweep_dir if isinstance(sweep_dir, SweepDir) else SweepDir(Path(sweep_dir))
    rows = []
    for run_dir in sweep_dir.run_dirs():
        row = read_row(run_dir)
        if row is not None:
            rows.append(row)
    return rows


def read_row(run_dir: RunDir) -> ResultRow | None:
    problems = []
    try:
        spec = RunSpec.model_validate_json(run_dir.spec_json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return ResultRow(run_dir.run_id, "?", {}, -1, "?", "unknown", None, None,
                         [f"{run_dir.spec_json}: corrupt ({first})"])
    status = result = None
    try:
        status = run_dir.read_status()
    except CorruptFileError as exc:
        problems.append(str(exc))
    try:
        result = run_dir.read_result()
    except CorruptFileError as exc:
        problems.append(str(exc))
    state = status.state.value if status else ("unknown" if problems else "pending")
    return ResultRow(spec.run_id, spec.variant, spec.grid, spec.seed, spec.group, state, status, result, problems,
                     spec.xml)


def training_fps(result: dict[str, Any]) -> float | None:
    """Environment steps per second of training (rollout + update) in a result.json of any version.

    Files without `training_s` were written when fps also counted saving and the final evaluation; their
    fps is recomputed from rollout_s + train_s where they have those, so old and new runs compare.
    """
    if "training_s" not in result:
        seconds = _number(result.get("rollout_s"), 0.0) + _number(result.get("train_s"), 0.0)
        timesteps = _number(result.get("timesteps"), 0.0)
        if seconds > 0 and timesteps > 0:
            return round(timesteps / seconds, 1)
    return _number(result.get("fps"), None)


def _number(value: Any, default: float | None) -> float | None:
    try:
        return float(value) if value not in (None, "") else default
    except (TypeError, ValueError):
        return default
