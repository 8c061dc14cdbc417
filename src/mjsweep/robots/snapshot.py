"""A sweep's own copy of every file its runs' models read, so that a run trains the model its id names even when
the XML, a file it includes or a mesh is edited while the sweep runs.

In the sweep folder's snapshots/:
- files/<sha256>: each distinct file once, named by its content's hash, read-only;
- models/<model sha256>/...: per model, its files laid out as they lie around its XML (so that includes, meshdir
  and texturedir resolve as they did), each a hard link to its file in files/ (a copy where the filesystem
  makes no hard link). A generated variant's tree holds its edited XML beside its base's files. An XML file that
  gives a path as absolute is stored with that path made relative (modelfiles.portable_xmls), as the model's hash
  covers it, so that the tree reads none of the user's files.

A run's spec.json names the XML in its model's tree. Every file is written under a temp name and renamed, and
what is stored is checked against the hash the run ids were made from before any of it is written.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..sweepdir.files import SNAPSHOT_FILES as FILES
from ..sweepdir.files import SNAPSHOT_MODELS as MODELS
from ..sweepdir.files import write_bytes_atomic
from .modelfiles import asset_files, hash_of_parts, model_files, portable_xmls
from .variants import Variant


@dataclass(frozen=True)
class Layout:
    """Where a model's files go in its tree: paths relative to the tree's root, '/' separators."""

    xml: str
    files: dict[str, Path | bytes]
    """Every file, the XML first: the user's file it is copied from, or the bytes of a generated XML."""
    hashed: tuple[str, ...]
    """The other files in the order the model's hash covers them (variants.resolve, edits.generate)."""


@dataclass(frozen=True)
class Hashed:
    """A model's files as they are now: each one's content hash and size by its path in the tree, and the XML's
    bytes (hashed whole into the model's hash)."""

    layout: Layout
    sha256: dict[str, str]
    size: dict[str, int]
    xml: bytes


_stored: dict[tuple[str, str, str], Path] = {}
"""What this process has stored already: (snapshots folder, variant, model hash) -> the XML in its tree."""
_file_hashes: dict[tuple[str, int, int], str] = {}
"""(path, size, mtime in ns) -> sha256: a robot's meshes, shared by many variants, are read and hashed once for
the disk check and once more only where they are stored."""


def store(snapshots: Path, variant: Variant) -> Path:
    """The variant's XML in the sweep's snapshot, its files stored first where they are not yet. InputError when
    the files no longer hash as the variant did when the sweep was planned (edited since)."""
    key = (str(snapshots), variant.name, variant.sha256)
    known = _stored.get(key)
    if known is not None and known.is_file():
        return known
    found = _hash(variant)
    names = [(_relative_to_xml(found.layout, path), found.sha256[path]) for path in found.layout.hashed]
    if hash_of_parts(found.xml, names) != variant.sha256:
        raise _changed(variant)
    tree = snapshots / MODELS / variant.sha256
    for path, source in found.layout.files.items():
        blob = snapshots / FILES / found.sha256[path]
        _refuse_links(snapshots, [blob, tree / path])
        if not blob.is_file():
            data = _read_bytes(variant, source)
            if hashlib.sha256(data).hexdigest() != found.sha256[path]:  # what is stored is what was hashed
                raise _changed(variant)
            blob.parent.mkdir(parents=True, exist_ok=True)
            write_bytes_atomic(blob, data)
            blob.chmod(0o444)  # every run of every later sweep of the folder reads it: nobody edits it in place
        _place(blob, tree / path)
    xml = tree / found.layout.xml
    _stored[key] = xml
    return xml


def missing_bytes(snapshots: Path, variants: list[Variant]) -> int:
    """The bytes storing these variants' models would add to the snapshot: each distinct file not stored yet."""
    seen: set[str] = set()
    total = 0
    for variant in variants:
        found = _hash(variant)
        for path, sha256 in found.sha256.items():
            if sha256 not in seen and not (snapshots / FILES / sha256).is_file():
                total += found.size[path]
            seen.add(sha256)
    return total


def layout(variant: Variant) -> Layout:
    """The variant's files laid out below the deepest folder that holds them all, each XML file as its hash covers
    it (absolute paths made relative). A generated variant's XML is its edited text, placed where its base lies
    (its paths are relative to the base's folder)."""
    rewritten: dict[Path, bytes] = {}
    if variant.portable_text is None:
        found = model_files(variant.xml)
        xml, others, hashed = found[0], found[1:], found[1:]
        rewritten = portable_xmls(xml)
    else:
        import mujoco

        base_dir = Path(os.path.abspath(variant.xml)).parent
        xml = base_dir / f"{variant.name}.xml"
        hashed = asset_files(mujoco.MjSpec.from_string(variant.portable_text), base_dir)
        others = list(dict.fromkeys(hashed))
    root = Path(os.path.commonpath([xml.parent, *(p.parent for p in others)]))
    files: dict[str, Path | bytes] = {xml.relative_to(root).as_posix(): rewritten.get(xml, xml)
                                      if variant.portable_text is None else variant.portable_text.encode("utf-8")}
    files.update({p.relative_to(root).as_posix(): rewritten.get(p, p) for p in others})
    return Layout(xml.relative_to(root).as_posix(), files, tuple(p.relative_to(root).as_posix() for p in hashed))


def _hash(variant: Variant) -> Hashed:
    plan = layout(variant)
    sha256: dict[str, str] = {}
    size: dict[str, int] = {}
    xml = _read_bytes(variant, plan.files[plan.xml])
    for path, source in plan.files.items():
        if isinstance(source, bytes) or path == plan.xml:
            data = xml if path == plan.xml else source
            assert isinstance(data, bytes)
            sha256[path], size[path] = hashlib.sha256(data).hexdigest(), len(data)
            continue
        try:
            st = source.stat()
        except OSError as exc:
            raise _unreadable(variant, exc) from None
        cached = (str(source), st.st_size, st.st_mtime_ns)
        if cached not in _file_hashes:
            _file_hashes[cached] = hashlib.sha256(_read_bytes(variant, source)).hexdigest()
        sha256[path], size[path] = _file_hashes[cached], st.st_size
    return Hashed(plan, sha256, size, xml)


def _read_bytes(variant: Variant, source: Path | bytes) -> bytes:
    if isinstance(source, bytes):
        return source
    try:
        return source.read_bytes()
    except OSError as exc:
        raise _unreadable(variant, exc) from None


def _unreadable(variant: Variant, exc: OSError) -> InputError:
    return InputError(f"{variant.xml}: cannot read the model's file {exc.filename}: {exc.strerror}")


def _changed(variant: Variant) -> InputError:
    return InputError(f"{variant.xml}: the model's files changed while the sweep was planned (variant "
                      f"{variant.name!r}); run the command again")


def _relative_to_xml(plan: Layout, path: str) -> str:
    return os.path.relpath(path, os.path.dirname(plan.xml) or ".")


def _refuse_links(snapshots: Path, paths: list[Path]) -> None:
    """mjsweep makes no symbolic link: one planted in the snapshot would carry its writes out of the sweep
    folder, or hand the runs a model it never stored."""
    for path in paths:
        for part in [path, *path.parents]:
            if part == snapshots.parent:
                break
            if part.is_symlink():
                raise InputError(f"{part} is a symbolic link (to {os.readlink(part)}): the launcher stores models "
                                 "only in folders it made; remove it")


def _place(blob: Path, target: Path) -> None:
    """target as a hard link to blob (a read-only copy where links are refused); a file already there stays."""
    if target.is_file():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(blob, target)
    except FileExistsError:
        return
    except OSError:  # a filesystem without hard links
        write_bytes_atomic(target, blob.read_bytes())
        target.chmod(0o444)
