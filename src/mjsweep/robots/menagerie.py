"""Robots by name: `menagerie:NAME` or `menagerie:NAME/ENTRY` -> the XML file on disk.

With the `mujoco-menagerie` package (the `mjsweep[menagerie]` extra) the name is looked up in its
registry and the model is downloaded and cached on first use; its `MENAGERIE_ROOT` environment
variable points it at a local folder of robot directories instead (how the tests work offline).
Without the package, `MENAGERIE_ROOT` alone is enough: NAME is a folder there, ENTRY an XML in it.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

PREFIX = "menagerie:"
DEFAULT_ENTRY = "scene"
_PLAIN = re.compile(r"^(?!\.\.?$)[A-Za-z0-9_.+-]+$")
"""A name or entry: no separator, not . or .. (NAME/ENTRY is split at the first slash)."""


class MenagerieLookupError(ValueError):
    """The name, the entry or the download failed; the message says which and lists close names."""


def is_reference(text: str | os.PathLike[str] | None) -> bool:
    return text is not None and str(text).startswith(PREFIX)


def resolve(reference: str) -> Path:
    """The XML file a `menagerie:NAME[/ENTRY]` reference names (downloading it if need be)."""
    name, _, written_entry = reference.removeprefix(PREFIX).partition("/")
    entry = written_entry.removesuffix(".xml") or None
    if not name:
        raise MenagerieLookupError(f"{reference!r}: write menagerie:NAME or menagerie:NAME/ENTRY")
    for part in (name, entry):
        if part is not None and not _PLAIN.match(part):
            raise MenagerieLookupError(f"{reference!r}: a robot's name and entry are plain names (letters, digits, "
                                       "_ . + -), never a path: a robot resolves inside its root only")
    try:
        import mujoco_menagerie
    except ImportError:
        return _from_root_folder(name, entry)
    return _from_package(mujoco_menagerie, name, entry)


def _from_package(package, name: str, entry: str | None) -> Path:
    if name not in package.names():
        raise MenagerieLookupError(f"no Menagerie robot named {name!r}{_close(name, package.names())}")
    robot = package.get(name)
    if entry is not None and entry not in robot.entry_names:
        raise MenagerieLookupError(f"Menagerie robot {name!r} has no entry {entry!r} "
                                   f"(it has: {', '.join(robot.entry_names)})")
    try:
        path = Path(robot.xml(entry))
    except package.MenagerieError as exc:
        raise MenagerieLookupError(f"Menagerie robot {name!r}: {exc}") from None
    if not path.is_file():
        raise MenagerieLookupError(f"Menagerie robot {name!r}: {path} is not there")
    return path.resolve()


def _from_root_folder(name: str, entry: str | None) -> Path:
    root = os.environ.get("MENAGERIE_ROOT")
    if not root:
        raise MenagerieLookupError("robots by name need the mujoco-menagerie package "
                                   "(pip install 'mjsweep[menagerie]') or MENAGERIE_ROOT set to a folder of robots")
    folder = Path(root) / name
    if not folder.is_dir():
        known = sorted(p.name for p in Path(root).iterdir() if p.is_dir()) if Path(root).is_dir() else []
        raise MenagerieLookupError(f"no robot folder {name!r} in MENAGERIE_ROOT={root}{_close(name, known)}")
    path = folder / f"{entry or DEFAULT_ENTRY}.xml"
    if path.is_file() and not path.resolve().is_relative_to(Path(root).resolve()):
        raise MenagerieLookupError(f"robot {name!r}: {path} leads outside MENAGERIE_ROOT={root} "
                                   f"(to {path.resolve()}): a robot resolves inside its root only")
    if not path.is_file():
        entries = sorted(p.stem for p in folder.glob("*.xml"))
        raise MenagerieLookupError(f"robot {name!r} has no entry {entry or DEFAULT_ENTRY!r} "
                                   f"(it has: {', '.join(entries) or 'no XML'})")
    return path.resolve()


def _close(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    return f"; close names: {', '.join(close)}" if close else ""
