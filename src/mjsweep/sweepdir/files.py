"""The one place that knows the file names of a sweep and run directory.

Every JSON file is written atomically (temp file in the same folder, fsync, os.replace), so a reader
sees the old content or the new, never half of one, whatever is killed when.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from ..errors import InputError
from .models import (
    CheckpointRecord,
    FileModel,
    PhysicsEval,
    ResumeRecord,
    RunResult,
    RunSpec,
    RunStatus,
    SweepVariants,
)

M = TypeVar("M", bound=FileModel)
T = TypeVar("T")


class CorruptFileError(Exception):
    """A run file exists but cannot be read as what it should be."""


def read_or_none(read: Callable[[], T | None], problems: list[str] | None = None) -> T | None:
    """The one rule for a corrupt file where the reader can go on without it: it reads as no file. What is
    wrong with it goes into `problems` where the caller shows or records it (a row's problems, the reasons a
    resume fell back); readers that must act on a corrupt file (decide: restart the run) catch
    CorruptFileError themselves."""
    try:
        return read()
    except CorruptFileError as exc:
        if problems is not None:
            problems.append(str(exc))
        return None


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def write_json_atomic(path: Path, data: Any) -> None:
    text = json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"
    write_text_atomic(path, text)


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide results from other users of a shared runs dir
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json(path: Path) -> dict[str, Any] | None:
    """The file's object, None if it does not exist; CorruptFileError if it is not a JSON object."""
    raw = _read_if_exists(path)
    return None if raw is None else _json_object(path, raw)


def read_model(path: Path, model: type[M]) -> M | None:
    """The file as `model`, None if it does not exist; CorruptFileError if it is not one."""
    raw = _read_if_exists(path)
    if raw is None:
        return None
    try:
        return model.from_json(raw)  # parsed and checked in one pass: `sweep status` reads 10,000 of these
    except ValidationError:
        pass
    data = _json_object(path, raw)  # raises with what is wrong with the JSON itself, if anything
    try:
        return model.from_file(data)
    except ValidationError as exc:
        raise CorruptFileError(f"{path}: not a valid {path.name} ({exc.error_count()} errors)") from None


def _read_if_exists(path: Path) -> bytes | None:
    try:
        return read_bytes(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CorruptFileError(f"{path}: unreadable: {exc}") from None


def _json_object(path: Path, raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CorruptFileError(f"{path}: unreadable: {exc}") from None
    except json.JSONDecodeError as exc:
        raise CorruptFileError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise CorruptFileError(f"{path}: expected a JSON object")
    return data


def write_model(path: Path, record: FileModel) -> None:
    write_json_atomic(path, record.to_file())


def append_line(path: Path, record: FileModel) -> None:
    """One line more of an append-only record (trials.jsonl, seeds.jsonl), synced before it returns."""
    line = json.dumps(record.to_file()) + "\n"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def read_lines(path: Path, model: type[M]) -> list[M]:
    """Every line of an append-only record, in order; a line cut short by a kill mid-write is skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        try:
            out.append(model.from_json(line))
        except (ValueError, ValidationError):
            continue
    return out


def read_bytes(path: Path) -> bytes:
    """The whole file."""
    # os-level calls: `sweep status` reads three of these per run, for 10,000 runs, and pathlib's
    # read_text costs several times as much per small file.
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


SPEC_JSON = "spec.json"
"""The file that makes a folder a run folder."""
SNAPSHOTS = "snapshots"
"""The sweep folder's copy of every file its runs' models read."""
SNAPSHOT_FILES = "files"
"""In the sweep folder's snapshots/: each distinct model file once, named by its sha256 (robots/snapshot.py)."""
SNAPSHOT_MODELS = "models"
"""In snapshots/: a folder per model, named by its hash, holding its files as they lie around its XML."""
CONTACT_SHEET_PNG = "contact_sheet.png"
"""The picture of every variant: written by the render process, kept in the sweep folder's pictures/."""


class RunDir:
    """<sweep>/<run_id>/: one run's files."""

    def __init__(self, path: Path):
        self.path = path if isinstance(path, Path) else Path(path)  # Path(a Path) costs: 10,000 runs

    @property
    def run_id(self) -> str:
        return self.path.name

    spec_json = property(lambda self: self.path / SPEC_JSON)
    status_json = property(lambda self: self.path / "status.json")
    result_json = property(lambda self: self.path / "result.json")
    log = property(lambda self: self.path / "log.txt")
    monitor_csv = property(lambda self: self.path / "monitor.csv")
    draws_jsonl = property(lambda self: self.path / "draws.jsonl")
    progress_csv = property(lambda self: self.path / "progress.csv")
    evaluations_csv = property(lambda self: self.path / "evaluations.csv")
    physics_eval_json = property(lambda self: self.path / "physics_eval.json")
    model_zip = property(lambda self: self.path / "model.zip")
    vecnormalize = property(lambda self: self.path / "vecnormalize.pkl")
    best_model_zip = property(lambda self: self.path / "best_model.zip")
    best_vecnormalize = property(lambda self: self.path / "best_vecnormalize.pkl")
    best = property(lambda self: self.path / "best")
    best_json = property(lambda self: self.path / "best" / "best.json")
    checkpoints = property(lambda self: self.path / "checkpoints")
    checkpoint_json = property(lambda self: self.path / "checkpoints" / "checkpoint.json")
    resume_json = property(lambda self: self.path / "resume.json")
    tensorboard = property(lambda self: self.path / "tensorboard")
    warm_source = property(lambda self: self.path / "warm_source")
    """A copy of a warm start's source files, laid out as its run folder, where a Ray node sees no source."""

    def model_xml(self, spec: RunSpec) -> Path:
        """The XML the run's model loads: spec.json's, or, where the sweep folder has moved since spec.json was
        written, the same file in the snapshot of the folder the run is in now."""
        recorded = Path(spec.xml)
        marker = f"{os.sep}{SNAPSHOTS}{os.sep}{SNAPSHOT_MODELS}{os.sep}"
        at = spec.xml.rfind(marker)
        if at < 0 or recorded.exists():
            return recorded
        moved = self.path.parent / SNAPSHOTS / SNAPSHOT_MODELS / spec.xml[at + len(marker):]
        return moved if moved.is_file() else recorded

    def checkpoint_model(self, timesteps: int) -> Path:
        """Where the checkpoint taken at `timesteps` keeps its model."""
        return self.checkpoints / f"model_{timesteps}.zip"

    def checkpoint_models(self) -> list[Path]:
        return list(self.checkpoints.glob("model_*.zip"))

    def checkpoint_vecnormalize(self, timesteps: int) -> Path:
        """Where the checkpoint taken at `timesteps` keeps its normalization statistics."""
        return self.checkpoints / f"vecnormalize_{timesteps}.pkl"

    def checkpoint_vecnormalizes(self) -> list[Path]:
        return list(self.checkpoints.glob("vecnormalize_*.pkl"))

    def best_model(self, timesteps: int) -> Path:
        """Where the evaluation at `timesteps` keeps its model while it is (or a checkpoint's) best."""
        return self.best / f"model_{timesteps}.zip"

    def best_vecnormalize_at(self, timesteps: int) -> Path:
        return self.best / f"vecnormalize_{timesteps}.pkl"

    def best_files(self) -> list[Path]:
        return [*self.best.glob("model_*.zip"), *self.best.glob("vecnormalize_*.pkl")]

    def checkpoint_replay_buffer(self, timesteps: int) -> Path:
        """Where the checkpoint taken at `timesteps` keeps an off-policy run's replay buffer."""
        return self.checkpoints / f"replay_buffer_{timesteps}.pkl"

    def checkpoint_replay_buffers(self) -> list[Path]:
        return list(self.checkpoints.glob("replay_buffer_*.pkl"))

    def checkpoint_exact(self, timesteps: int) -> Path:
        """Where the checkpoint taken at `timesteps` keeps the state an exact resume puts back (earlier
        versions wrote exact_<t>.pkl, a pickle, which checkpoint.json names as it names this)."""
        return self.checkpoints / f"exact_{timesteps}.npz"

    def read_status(self) -> RunStatus | None:
        return read_model(self.status_json, RunStatus)

    def write_status(self, status: RunStatus) -> None:
        write_model(self.status_json, status)

    def read_result(self) -> RunResult | None:
        return read_model(self.result_json, RunResult)

    def read_physics_eval(self) -> PhysicsEval | None:
        return read_model(self.physics_eval_json, PhysicsEval)

    def has_complete_result(self) -> bool:
        """result.json holds the final evaluation (a corrupt one does not)."""
        result = read_or_none(self.read_result)
        return result is not None and result.complete

    def read_checkpoint(self) -> CheckpointRecord | None:
        return read_model(self.checkpoint_json, CheckpointRecord)

    def checkpoint_files(self) -> list[Path]:
        """Every checkpoint's files in checkpoints/, and the temporary files of a save a kill cut short."""
        return [*self.checkpoint_models(), *self.checkpoint_vecnormalizes(), *self.checkpoint_replay_buffers(),
                *self.checkpoints.glob("exact_*.npz"), *self.checkpoints.glob("exact_*.pkl"),
                *self.checkpoints.glob(".*.tmp")]

    def keep_final_checkpoint(self) -> None:
        """Once the run has succeeded: its newest checkpoint only, which is all that extending it, a PBT
        segment resuming from it or a warm start's replay buffer read (`sweep verify` trains from scratch, and a
        succeeded run is never resumed). checkpoint.json is written first, so no file it names is ever missing;
        an unreadable one is left as it is."""
        checkpoint = read_or_none(self.read_checkpoint)
        if checkpoint is None:
            return
        if checkpoint.earlier:
            write_model(self.checkpoint_json, checkpoint.model_copy(update={"earlier": []}))
        for path in self.checkpoint_files():
            if path.name not in checkpoint.files():
                path.unlink(missing_ok=True)

    def read_resume(self) -> ResumeRecord | None:
        return read_model(self.resume_json, ResumeRecord)

    def fell_back(self) -> str | None:
        """resume.json's line (why an attempt did not resume from the newest checkpoint, and from which it
        did), or what is wrong with the file; None when the run never fell back."""
        problems: list[str] = []
        record = read_or_none(self.read_resume, problems)
        return record.text if record else (problems[0] if problems else None)

    def error_tail(self, lines: int = 20) -> str:
        """The end of log.txt, where a traceback's last line is."""
        try:
            with open(self.log, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - 16_384))
                text = fh.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


IN_RUN = RunDir(Path())
"""A run folder's file names as relative paths, for code that ships a run's files between machines."""


_RUNS_LOOKED_AT = 20
"""Run folders whose spec.json is read to tell a sweep folder made before sweep.yaml from a user's folder."""


class SweepDir:
    """<runs_dir>/<sweep>/: the sweep's resolved spec, its lock and one folder per run."""

    def __init__(self, path: Path):
        self.path = Path(path)

    sweep_yaml = property(lambda self: self.path / "sweep.yaml")
    lock_file = property(lambda self: self.path / "sweep.lock")
    snapshots = property(lambda self: self.path / SNAPSHOTS)
    """Every file the runs' models read, stored once by content (robots/snapshot.py)."""
    index_jsonl = property(lambda self: self.path / "index.jsonl")
    trials_jsonl = property(lambda self: self.path / "trials.jsonl")
    confirm_jsonl = property(lambda self: self.path / "confirm.jsonl")
    seeds_jsonl = property(lambda self: self.path / "seeds.jsonl")
    pbt_jsonl = property(lambda self: self.path / "pbt.jsonl")
    pbt_best_yaml = property(lambda self: self.path / "pbt_best.yaml")
    variants_json = property(lambda self: self.path / "variants.json")
    plan_json = property(lambda self: self.path / "plan.json")
    report_csv = property(lambda self: self.path / "report.csv")
    report_html = property(lambda self: self.path / "report.html")
    pictures = property(lambda self: self.path / "pictures")
    contact_sheet = property(lambda self: self.path / "pictures" / CONTACT_SHEET_PNG)
    videos = property(lambda self: self.path / "videos")
    report_md = property(lambda self: self.path / "report.md")
    report_matrix_svg = property(lambda self: self.path / "report_matrix.svg")
    report_profile_svg = property(lambda self: self.path / "report_profile.svg")
    report_matrix_png = property(lambda self: self.path / "report_matrix.png")
    report_profile_png = property(lambda self: self.path / "report_profile.png")
    """The decision figures as versions before the SVG ones drew them: no longer written, removed when the
    figures are decided again."""
    report_pareto_svg = property(lambda self: self.path / "report_pareto.svg")
    report_pareto_png = property(lambda self: self.path / "report_pareto.png")
    """The Pareto front as versions before the SVG one drew it: no longer written, removed when drawn again."""
    cross = property(lambda self: self.path / "cross")
    cross_matrix_csv = property(lambda self: self.path / "cross" / "matrix.csv")
    cross_matrix_svg = property(lambda self: self.path / "cross" / "matrix.svg")
    cross_matrix_png = property(lambda self: self.path / "cross" / "matrix.png")
    """The heatmap as versions before the SVG one drew it: no longer written, removed when drawn again."""
    pbt_curves_svg = property(lambda self: self.path / "pbt_curves.svg")
    pbt_curves_png = property(lambda self: self.path / "pbt_curves.png")
    """The curves as versions before the SVG one drew them: no longer written, removed when drawn again."""
    slurm = property(lambda self: self.path / "slurm")
    """Each SLURM array's script and run list, and SLURM's own output per task."""

    def cross_results(self, run_id: str) -> Path:
        """The folder of one trained run's cross-evaluations: a <variant>.json each."""
        return self.cross / run_id

    def cross_result(self, run_id: str, variant: str) -> Path:
        return self.cross_results(run_id) / f"{variant}.json"

    def cross_result_files(self, run_id: str) -> list[Path]:
        """One trained run's cross-evaluations, in name order."""
        folder = self.cross_results(run_id)
        return sorted(folder.glob("*.json")) if folder.is_dir() else []

    def read_variants(self) -> SweepVariants | None:
        return read_model(self.variants_json, SweepVariants)

    def run(self, run_id: str) -> RunDir:
        return RunDir(self.path / run_id)

    def check_is_folder(self) -> None:
        """InputError (exit 2, nothing read or written) when the path a reading command was given is a file or
        nothing at all: it cannot be a sweep folder."""
        if self.path.is_dir():
            return
        what = "not a sweep folder but a file" if os.path.lexists(self.path) else "no such folder"
        raise InputError(f"{self.path}: {what}; give the folder a sweep writes: <runs_dir>/<sweep name>")

    def has_runs(self) -> bool:
        """Whether any subfolder is a run folder (stops at the first)."""
        try:
            with os.scandir(self.path) as entries:
                return any(e.is_dir() and os.path.exists(os.path.join(e.path, SPEC_JSON)) for e in entries)
        except (FileNotFoundError, NotADirectoryError):
            return False

    def is_sweep(self) -> bool:
        """Whether a launcher made this folder: it holds sweep.yaml or index.jsonl, or a run folder whose
        spec.json is a run's naming that folder (as every version wrote them). A folder of the user's that
        happens to hold some spec.json is none, and commands that write into a sweep folder leave it alone."""
        if self.sweep_yaml.is_file() or self.index_jsonl.is_file():
            return True
        for run in self.run_dirs()[:_RUNS_LOOKED_AT]:
            spec = read_or_none(partial(read_model, run.spec_json, RunSpec))
            if spec is not None and spec.run_id == run.path.name:
                return True
        return False

    def run_dirs(self) -> list[RunDir]:
        """Every run folder, in name order: those with a spec.json."""
        base = str(self.path)
        return [self.run(n) for n in self.folder_names() if os.path.exists(os.path.join(base, n, SPEC_JSON))]

    def folder_names(self) -> list[str]:
        """The names of the sweep folder's subfolders, sorted; [] if there is no sweep folder."""
        # Names as strings and os.scandir: a sweep may hold 10,000 runs, and pathlib costs a lot per call.
        try:
            return sorted(e.name for e in os.scandir(self.path) if e.is_dir())
        except (FileNotFoundError, NotADirectoryError):
            return []
