"""Copying a run dir between the launcher and a node that shares no filesystem with it.

The node sends back only what changed since its last shipment: a whole file, or for a log that only
grew, the bytes after what was already sent. The launcher applies shipments in order, so its run dir
is always a consistent copy of the node's (checkpoint.json last, after the model file it names).
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from ..sweepdir.files import IN_RUN, RunDir, write_bytes_atomic
from ..sweepdir.models import WarmSource
from .base import OomFacts

APPEND_ONLY = (".csv", ".txt", ".jsonl")
"""Logs that workers only append to (or truncate on resume; draws.jsonl too): these may travel as tails."""
CHECKPOINTS = IN_RUN.checkpoints.as_posix()
BEST = IN_RUN.best.as_posix()
_TAIL_CHECK = 256  # bytes before the old end that must be unchanged for a file to count as grown


@dataclass(frozen=True)
class FileChunk:
    path: str
    """Relative to the run dir, with '/' separators."""
    offset: int
    """0: the whole file. Otherwise the file grew and `data` is everything from this offset on."""
    data: bytes


@dataclass(frozen=True)
class Shipment:
    chunks: tuple[FileChunk, ...] = ()
    checkpoint_files: tuple[str, ...] | None = None
    """Every file now under checkpoints/ on the node (old checkpoints are deleted there), if any."""
    best_files: tuple[str, ...] | None = None
    """Every file now under best/ on the node (earlier best models are deleted there), if any."""
    exit_code: int | None = None
    """The worker's exit code, once it has ended: the last shipment of a run."""
    oom: OomFacts | None = None
    """Set with a SIGKILL's exit code when the node's OOM killer sent it (its memory cgroup or kernel counted it)."""


@dataclass
class _Sent:
    size: int
    mtime_ns: int
    tail_crc: int


@dataclass
class ChangeTracker:
    """Remembers what has been shipped of each file under `root`; changes() gives only what is new."""

    root: Path
    skip: frozenset[str] = frozenset()
    _sent: dict[str, _Sent] = field(default_factory=dict)

    def mark_sent(self) -> None:
        """Count every file now present as already shipped (the files the node was given)."""
        for rel, path in run_files(self.root, self.skip):
            data = path.read_bytes()
            st = path.stat()
            self._sent[rel] = _Sent(len(data), st.st_mtime_ns, _tail_crc(data, len(data)))

    def changes(self, exit_code: int | None = None) -> Shipment:
        found = (self._chunk(rel, path) for rel, path in run_files(self.root, self.skip))
        chunks = sorted((c for c in found if c is not None), key=_apply_order)
        return Shipment(tuple(chunks), checkpoint_files=_files_in(self.root / CHECKPOINTS),
                        best_files=_files_in(self.root / BEST), exit_code=exit_code)

    def _chunk(self, rel: str, path: Path) -> FileChunk | None:
        try:
            st = path.stat()
            old = self._sent.get(rel)
            if old and (old.size, old.mtime_ns) == (st.st_size, st.st_mtime_ns):
                return None
            data = path.read_bytes()
        except FileNotFoundError:  # replaced or deleted while we looked: the next round sees it
            return None
        self._sent[rel] = _Sent(len(data), st.st_mtime_ns, _tail_crc(data, len(data)))
        if old is not None and old.size and rel.endswith(APPEND_ONLY) and len(data) >= old.size \
                and _tail_crc(data, old.size) == old.tail_crc:
            return FileChunk(rel, old.size, data[old.size:])  # the file grew: only what it gained travels
        return FileChunk(rel, 0, data)


def apply(run_path: Path, shipment: Shipment) -> None:
    """Write a shipment into the launcher's copy of the run dir."""
    for chunk in shipment.chunks:
        target = run_path / chunk.path
        target.parent.mkdir(parents=True, exist_ok=True)
        if chunk.offset == 0:
            write_bytes_atomic(target, chunk.data)
        else:
            with open(target, "r+b" if target.exists() else "wb") as fh:
                fh.truncate(chunk.offset)
                fh.seek(chunk.offset)
                fh.write(chunk.data)
    for folder, kept in ((CHECKPOINTS, shipment.checkpoint_files), (BEST, shipment.best_files)):
        if kept is None:
            continue
        for old in (run_path / folder).glob("*"):
            if old.is_file() and old.name not in kept and not old.name.startswith("."):
                old.unlink(missing_ok=True)


def _files_in(folder: Path) -> tuple[str, ...] | None:
    return tuple(sorted(p.name for p in folder.iterdir() if p.is_file())) if folder.is_dir() else None


def run_files(root: Path, skip: frozenset[str] = frozenset()) -> list[tuple[str, Path]]:
    """(relative name, path) of every file under root but `skip` and dot files (writers' temp files)."""
    found = []
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if not name.startswith(".") and rel not in skip:
                found.append((rel, path))
    return found


@dataclass(frozen=True)
class ModelFiles:
    """A MuJoCo model as bytes: the XML and every file it includes or loads, by their paths relative
    to the folder that holds them all, so relative includes and mesh paths still resolve."""

    files: dict[str, bytes]
    xml: str
    """The main XML's key in files."""


def pack_model(xml: Path) -> ModelFiles:
    from ..robots.modelfiles import model_files

    paths = model_files(xml)
    base = Path(os.path.commonpath([p.parent for p in paths]))
    return ModelFiles({p.relative_to(base).as_posix(): p.read_bytes() for p in paths},
                      paths[0].relative_to(base).as_posix())


def pack_warm_source(source: WarmSource) -> dict[str, bytes]:
    """The files a warm start loads from its source (model.zip, the normalization statistics, and where asked
    the last checkpoint's replay buffer), keyed by their place under the warm run's warm_source/, for a node
    that cannot read the source's folder."""
    run = RunDir(Path(source.run_dir))
    files = [run.model_zip, *([run.vecnormalize] if run.vecnormalize.is_file() else [])]
    if source.replay_buffer:
        checkpoint = run.read_checkpoint()
        buffer = checkpoint.replay_buffer_file if checkpoint is not None else None
        if buffer is not None:
            files += [run.checkpoint_json, run.checkpoints / buffer]
    return {(IN_RUN.warm_source / path.relative_to(run.path)).as_posix(): path.read_bytes() for path in files}


def local_run_dir(root: Path, spec: dict, files: dict[str, bytes], model: ModelFiles) -> Path:
    """Recreate a run dir under root: its files, and spec.json pointing at a model this node can read.

    The spec's XML path is kept where this node sees the same model (a shared filesystem); otherwise
    the shipped copy of the model is written under root and used.
    """
    run_path = root / spec["run_id"]
    _write_tree(run_path, files)
    run_path.mkdir(parents=True, exist_ok=True)
    if not _same_model(Path(spec["xml"]), spec["xml_sha256"]):
        _write_tree(root / "model", model.files)
        spec = {**spec, "xml": str(root / "model" / model.xml)}
    RunDir(run_path).spec_json.write_text(json.dumps(spec, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return run_path


def _write_tree(folder: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)


def _same_model(xml: Path, sha256: str) -> bool:
    from ..robots.modelfiles import model_sha256

    try:
        return xml.is_file() and model_sha256(xml) == sha256
    except (OSError, ValueError):
        return False


def _apply_order(chunk: FileChunk) -> tuple[int, str]:
    # A model file before the checkpoint.json or best.json naming it; result.json after everything.
    last = {IN_RUN.checkpoint_json.as_posix(): 1, IN_RUN.best_json.as_posix(): 1, IN_RUN.result_json.as_posix(): 2}
    return last.get(chunk.path, 0), chunk.path


def _tail_crc(data: bytes, end: int) -> int:
    return zlib.crc32(data[max(0, end - _TAIL_CHECK):end])
