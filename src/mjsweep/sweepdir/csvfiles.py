"""The sweep folder's CSV files: a row type per file the package writes (progress, evaluations, report, cross
matrix), the one writer they all go through, and one tolerant reader per file that every reader uses (monitor.csv
too, which SB3's Monitor writes in its own format: a '#{json}' line, then return, length and time per episode).

The one rule for a bad row: it is skipped. A row cut short by a kill, a value that is not a number or a row
of another width reads as no row, never as an error and never as the end of the file; a missing or
unreadable file reads as no rows. Imports nothing heavy: `sweep status` reads these for 10,000 runs.
"""

from __future__ import annotations

import csv
import io
import os
import statistics
from collections.abc import Iterable
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import ClassVar


class CsvRow:
    """A row of one CSV file: a frozen dataclass whose fields are the file's columns, in order.

    Every CSV the package writes goes through `csv_text` or `csv_line` with a row type, so a column can
    neither move nor go unquoted."""

    LINE_END: ClassVar[str] = "\n"

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))  # type: ignore[arg-type]

    def cells(self) -> list[str]:
        return [_cell(getattr(self, f.name)) for f in fields(self)]  # type: ignore[arg-type]


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, tuple):
        return " ".join(_cell(v) for v in value)
    return str(value)


def _short(value: float | None) -> str:
    """A number as the report's tables show it: six significant digits, '' for none."""
    return "" if value is None else f"{value:.6g}"


def csv_header(row_type: type[CsvRow]) -> str:
    """The first line of a new file of `row_type` rows."""
    return _line(list(row_type.columns()), row_type.LINE_END)


def csv_line(row: CsvRow) -> str:
    """One row as written: a whole line, appended in one write."""
    return _line(row.cells(), row.LINE_END)


def csv_text(row_type: type[CsvRow], rows: Iterable[CsvRow]) -> str:
    """A whole file: the header, then every row."""
    return csv_header(row_type) + "".join(csv_line(row) for row in rows)


def csv_text_extended(row_type: type[CsvRow], rows: Iterable[tuple[CsvRow, list[object]]],
                      extra: list[str]) -> str:
    """A whole file whose row type's columns are followed by columns known only when it is written (report.csv:
    a column per grid key and edit label); each row is its CsvRow and its values of those columns."""
    header = _line([*row_type.columns(), *extra], row_type.LINE_END)
    return header + "".join(_line([*row.cells(), *(_cell(v) for v in values)], row_type.LINE_END)
                            for row, values in rows)


def _line(cells: list[str], line_end: str) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator=line_end).writerow(cells)
    return buf.getvalue()


@dataclass(frozen=True)
class ProgressRow(CsvRow):
    """A row of progress.csv: a training iteration (a PPO rollout + update; an off-policy run's log interval)."""

    LINE_END: ClassVar[str] = "\r\n"
    """csv.writer's default, as every version of the worker wrote this file."""

    iteration: int
    timesteps: int
    wall_s: float
    fps: float
    ep_rew_mean: float | None
    """None (an empty cell) until an episode has ended."""
    ep_len_mean: float | None
    rollout_s: float
    train_s: float


@dataclass(frozen=True)
class EvaluationRow(CsvRow):
    """A row of evaluations.csv: one periodic evaluation (eval.every)."""

    timesteps: int
    mean_return: float
    std_return: float
    returns: tuple[float, ...]
    """Each episode's return, space-separated in the file."""
    lengths: tuple[int, ...]
    wall_s: float
    """Seconds into the training, written to the millisecond."""

    def cells(self) -> list[str]:
        return [*super().cells()[:-1], f"{self.wall_s:.3f}"]


@dataclass(frozen=True)
class ReportRow(CsvRow):
    """A row of report.csv (and report.md's table): a group of seeds, written by `sweep report`. report.csv adds
    a column per grid key and edit label after these (results/report.py's value_columns)."""

    variant: str
    grid: str
    runs: int
    succeeded: int
    failed: int
    mean_return: float | None
    std_return: float | None
    iqm_return: float | None
    ci95_low: float | None
    ci95_high: float | None
    iqm_ci95_low: float | None
    iqm_ci95_high: float | None
    mean_fps: float | None
    mean_eval_s: float | None
    total_mass: float | None
    bodies: int | None
    joints: int | None
    actuators: int | None
    mean_best_return: float | None
    mean_eval_auc: float | None
    mean_checkpoint_s: float | None
    mean_checkpoint_mb: float | None
    cpu_s: float | None
    env_steps: int | None

    def cells(self) -> list[str]:
        return [_short(v) if isinstance(v, float) else _cell(v) for v in astuple(self)]


@dataclass(frozen=True)
class CrossMatrixRow(CsvRow):
    """A row of cross/matrix.csv: a trained group and a variant it was evaluated on (`sweep evaluate --cross`)."""

    train: str
    test: str
    seeds: int
    mean: float | None
    ci95_low: float | None
    ci95_high: float | None
    skipped: str

    def cells(self) -> list[str]:
        return [_short(v) if isinstance(v, float) else _cell(v) for v in astuple(self)]


EARLY_ROWS = 3
"""Progress rows that define a run's early fps."""
_HEAD_BYTES = 8192
_TAIL_BYTES = 8192


@dataclass(frozen=True)
class Evaluation:
    """One row of evaluations.csv, as readers use it."""

    timesteps: int
    mean_return: float


def read_evaluations(path: Path) -> list[Evaluation]:
    """Every periodic evaluation written so far, in file order."""
    out = []
    for row in _rows(path):
        try:
            out.append(Evaluation(int(row["timesteps"]), float(row["mean_return"])))
        except (KeyError, TypeError, ValueError):
            continue
    return out


def read_evaluation_cells(path: Path) -> list[dict[str, str]]:
    """Every evaluations.csv row as written, but its wall-clock column: what two trainings of one run that
    reproduce each other share."""
    return [{k: v for k, v in row.items() if k != "wall_s"} for row in _rows(path)]


def read_monitor_cells(path: Path) -> list[tuple[str, str]]:
    """monitor.csv's (return, length) per episode as written, but its wall-clock column."""
    return [(row.get("r") or "", row.get("l") or "") for row in _rows(path, skip_first_line=True)]


def read_progress_points(path: Path) -> list[tuple[float, float]]:
    """(timesteps, ep_rew_mean) of every progress row that has an episode mean yet."""
    return _points(_rows(path), "timesteps", "ep_rew_mean")


def read_progress_spans(path: Path) -> list[tuple[int, float, float]]:
    """(timesteps, rollout_s, train_s) of every progress row: where a resumed run's row under way began, and the
    seconds the rows before it counted."""
    spans = []
    for row in _rows(path):
        timesteps = _float(row.get("timesteps"))
        if timesteps is not None:
            spans.append((int(timesteps), _float(row.get("rollout_s")) or 0.0, _float(row.get("train_s")) or 0.0))
    return spans


def short_last_row(data: bytes, at: int, row_steps: int) -> int | None:
    """Where progress.csv's bytes `data` end without their last row, when that row is a finished run's last, short
    one: written at `at` timesteps, fewer than `row_steps` after the row before (a run's last iteration writes its
    row however few timesteps it counts, where a longer run writes none). None otherwise."""
    lines = data.splitlines(keepends=True)
    if len(lines) < 2:
        return None
    header = next(csv.reader([lines[0].decode("utf-8", errors="replace")]))
    rows = [_row(header, line.decode("utf-8", errors="replace").rstrip("\r\n")) for line in lines[-2:]]
    last = _float(rows[-1].get("timesteps")) if rows[-1] else None
    before = 0.0 if len(lines) == 2 else _float(rows[0].get("timesteps")) if rows[0] else None
    if last != at or before is None or last - before >= row_steps:
        return None
    return len(data) - len(lines[-1])


def read_monitor_episodes(path: Path) -> list[tuple[float, float]]:
    """(return, length) of every episode monitor.csv records."""
    return _points(_rows(path, skip_first_line=True), "r", "l")


def _points(rows: list[dict[str, str]], x: str, y: str) -> list[tuple[float, float]]:
    out = []
    for row in rows:
        a, b = _float(row.get(x)), _float(row.get(y))
        if a is not None and b is not None:
            out.append((a, b))
    return out


def _rows(path: Path, skip_first_line: bool = False) -> list[dict[str, str]]:
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as fh:
            if skip_first_line:
                fh.readline()
            return list(csv.DictReader(fh))
    except OSError:
        return []


@dataclass(frozen=True)
class Progress:
    """What progress.csv says: its last row, and the median fps of its first rows."""

    timesteps: int
    fps: float | None
    ep_rew_mean: float | None
    early_fps: float | None
    """None until the file has more rows than EARLY_ROWS (too early to judge a drop)."""


def read_progress(path: Path) -> Progress | None:
    """progress.csv's last complete row and early fps, reading at most its first and last 8 KiB."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD_BYTES).decode("utf-8", errors="replace")
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - _TAIL_BYTES))
            tail = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    head_lines = head.splitlines()
    if len(head_lines) < 2 or "\n" not in tail:
        return None
    header = next(csv.reader([head_lines[0]]))
    # A row still being written has no newline yet: only complete lines count.
    last_line = next((ln for ln in reversed(tail[:tail.rfind("\n")].splitlines()) if ln.strip()), "")
    last = _row(header, last_line)
    if last is None or "timesteps" not in last:
        return None
    # The early rows are the first that trained: the rows of an off-policy run's warm-up (learning_starts,
    # no updates: train_s 0) run at a pace training never has.
    warmup = 0
    for line in head_lines[1:]:
        if (row := _row(header, line)) is None or _float(row.get("train_s")) != 0.0:
            break
        warmup += 1
    # Judge a drop only once the last row is past the early ones.
    past_early = len(head_lines) - warmup > EARLY_ROWS + 2 or size > _HEAD_BYTES
    rows = (_row(header, line) for line in head_lines[1 + warmup:EARLY_ROWS + 1 + warmup])
    early = [fps for r in rows if r and (fps := _float(r.get("fps")))]
    return Progress(
        timesteps=int(_float(last["timesteps"]) or 0), fps=_float(last.get("fps")),
        ep_rew_mean=_float(last.get("ep_rew_mean")),
        early_fps=statistics.median(early) if past_early and len(early) == EARLY_ROWS else None)


def _row(header: list[str], line: str) -> dict[str, str] | None:
    values = next(csv.reader(io.StringIO(line)), None)
    if not values or len(values) != len(header) or values == header:
        return None
    return dict(zip(header, values, strict=True))


def _float(value: str | float | None) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None
