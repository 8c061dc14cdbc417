"""Reading a sweep dir back: one ResultRow per run folder; a missing or corrupt file is a row, not a crash.

A ResultRow is the one read model of a run's files (its spec, status and result): `sweep report` and
`sweep plot` use it as it is, and `sweep status`, the live view and the index summarize it as a RunView
(runview.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..sweepdir.files import RunDir, SweepDir, read_bytes, read_or_none
from ..sweepdir.models import DisplayState, RunResult, RunSpec, RunState, RunStatus, succeeded


@dataclass(frozen=True)
class ResultRow:
    run_id: str
    spec: RunSpec | None
    """None when spec.json cannot be read; the status and result are not read then."""
    status: RunStatus | None
    result: RunResult | None
    problems: tuple[str, ...] = ()
    """Files that could not be read, each with why."""
    label: str | None = None
    """The group this row is counted in when it is not its spec's (a run of an earlier spec, shown apart)."""

    @property
    def variant(self) -> str:
        return self.spec.variant if self.spec else "?"

    @property
    def grid(self) -> dict[str, Any]:
        return self.spec.grid if self.spec else {}

    @property
    def edits(self) -> dict[str, Any]:
        """The edit values its variant was generated from (RunSpec.edits)."""
        return self.spec.edits if self.spec else {}

    @property
    def seed(self) -> int:
        return self.spec.seed if self.spec else -1

    @property
    def group(self) -> str:
        if self.label is not None:
            return self.label
        return self.spec.group if self.spec else "?"

    @property
    def xml(self) -> str | None:
        """spec.json's model path, for the model statistics in a report."""
        return self.spec.xml if self.spec else None

    @property
    def state(self) -> DisplayState:
        """status.json's state; pending without one, unknown when a file could not be read."""
        if self.status:
            return DisplayState.of(self.status.state)
        return DisplayState.UNKNOWN if self.problems else DisplayState.PENDING

    @property
    def ok(self) -> bool:
        return succeeded(self.status, self.result)

    @property
    def cause(self) -> str | None:
        """Why a run that did not succeed ended: status.json's cause, or in files written before it, the last
        line of its error tail; None for a run that succeeded, runs or has not run."""
        status = self.status
        if status is None or status.state in (RunState.SUCCEEDED, RunState.RUNNING, RunState.PENDING):
            return None
        if status.cause:
            return status.cause
        lines = (status.error_tail or "").strip().splitlines()
        return lines[-1] if lines else None

    @property
    def final_return(self) -> float | None:
        """The final evaluation's mean return of a run that succeeded."""
        return self.result.eval_mean_return if self.ok and self.result else None


def collect(sweep_dir: SweepDir | Path) -> list[ResultRow]:
    sweep_dir = sweep_dir if isinstance(sweep_dir, SweepDir) else SweepDir(Path(sweep_dir))
    return [read_row(run_dir) for run_dir in sweep_dir.run_dirs()]


def read_row(run_dir: RunDir) -> ResultRow:
    try:
        spec = RunSpec.model_validate_json(read_bytes(run_dir.spec_json))
    except (OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return ResultRow(run_dir.run_id, None, None, None, (f"{run_dir.spec_json}: corrupt ({first})",))
    problems: list[str] = []
    status = read_or_none(run_dir.read_status, problems)
    result = read_or_none(run_dir.read_result, problems)
    return ResultRow(spec.run_id, spec, status, result, tuple(problems))
