"""Reading a sweep dir back: one ResultRow per run folder; a missing or corrupt file is a row, not a crash."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .plan import RunSpec
from .rundir import CorruptFileError, RunDir, RunStatus, SweepDir, succeeded
from .schemas import RunResult


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
    result: RunResult | None
    problems: list[str] = field(default_factory=list)
    """Files that could not be read, each with why."""
    xml: str | None = None
    """spec.json's model path, for the model statistics in a report."""

    @property
    def ok(self) -> bool:
        return succeeded(self.status, self.result)

    @property
    def final_return(self) -> float | None:
        """The final evaluation's mean return of a run that succeeded."""
        return self.result.eval_mean_return if self.ok and self.result else None


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
