"""The trust boundary: before anything of a sweep folder (or of a warm start's source run folder) is unpickled,
the folder, every folder between it and the file, and the file must be the current user's and writable by no
one else, or the user must have said they trust the folder. Unpickling runs whatever code the pickle names, so
a folder someone else wrote (a colleague's on a shared drive) is refused until it is trusted: with `--trust
PATH` on the command line, `trust=` in Python, MJSWEEP_TRUST (paths separated by os.pathsep) or a line of
~/.config/mjsweep/trust, for good; `*` trusts every folder. As git's safe.directory does for repositories.

Reading JSON and CSV needs no trust: `sweep report`, `sweep status` and `mjsweep.load` read no pickle.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import InputError

ENV = "MJSWEEP_TRUST"
PICKLED = (".zip", ".pkl")
"""The suffixes of the files mjsweep has SB3 unpickle: model zips, VecNormalize statistics, replay buffers, an
exact resume's state of older versions."""

Trust = Iterable[str | os.PathLike[str]]


class UntrustedFolderError(InputError):
    """A file would be unpickled from a folder the user has not trusted: exit 2 on the command line. str() is
    one line naming the file, whose it is and how to trust its folder."""


def config_file() -> Path:
    """The persistent list: one folder a line ($XDG_CONFIG_HOME/mjsweep/trust, else ~/.config/mjsweep/trust)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "mjsweep" / "trust"


def trusted(extra: Trust = ()) -> list[str]:
    """The folders trusted here: `extra`, MJSWEEP_TRUST's and the config file's (blank lines and # comments
    skipped)."""
    entries = [os.fspath(p) for p in extra]
    entries += [p for p in os.environ.get(ENV, "").split(os.pathsep) if p.strip()]
    try:
        lines = config_file().read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    entries += [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    return entries


def is_trusted(folder: Path, extra: Trust = ()) -> bool:
    """`folder` is trusted: `*` is listed, or the folder or one above it is."""
    entries = trusted(extra)
    if "*" in (entry.strip() for entry in entries):
        return True
    here = os.path.realpath(folder)
    return any(Path(here).is_relative_to(os.path.realpath(os.path.expanduser(entry.strip()))) for entry in entries)


def require(file: Path, root: Path, trust: Trust = ()) -> None:
    """Refuses (UntrustedFolderError) to let `file` be unpickled unless `root` is trusted, or `root`, each folder
    from it down to `file` and `file` itself are this user's and writable by no one else. A missing file
    passes: there is nothing to unpickle."""
    if not os.path.lexists(file) or is_trusted(root, trust):
        return
    for path in _chain(file, root):
        _refuse_if_unsafe(os.fspath(path), os.fspath(file), root)


def require_folder(root: Path, trust: Trust = ()) -> None:
    """require() for every file under `root` that mjsweep may unpickle (PICKLED), before a command loads any of
    them: `sweep run` resuming or copying runs, `sweep video`, `sweep evaluate --cross`, `sweep verify`. A
    folder holding none is not judged. About one stat per file and folder."""
    if not root.is_dir() or is_trusted(root, trust):
        return
    _require_tree(os.fspath(root), root, [os.fspath(root)])


def _require_tree(folder: str, root: Path, unjudged: list[str]) -> None:
    """The pickled files in `folder` and below, and the folders above each up to `root` (`unjudged`: those not
    judged yet), judged; files first, so that a folder is judged once for all its files and subfolders."""
    with os.scandir(folder) as found:
        entries = list(found)
    for entry in entries:
        if entry.name.endswith(PICKLED) and not entry.is_dir(follow_symlinks=False):
            for path in unjudged:
                _refuse_if_unsafe(path, entry.path, root)
            unjudged.clear()
            _refuse_if_unsafe(entry.path, entry.path, root)
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):  # a link to a folder is not followed: nothing loads through one
            _require_tree(entry.path, root, [*unjudged, entry.path])


@contextmanager
def granted(trust: Trust) -> Iterator[None]:
    """MJSWEEP_TRUST extended with `trust` while in the block, so that the processes started in it (runs, the
    template's, evaluations, renders), which check again before they unpickle, trust what this one was told."""
    added = [os.path.abspath(os.fspath(p)) for p in trust]
    before = os.environ.get(ENV)
    if not added:
        yield
        return
    os.environ[ENV] = os.pathsep.join([*added, *([before] if before else [])])
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before


def _chain(file: Path, root: Path) -> list[Path]:
    """`root`, the folders from it down to `file`, and `file` (just `file` when it lies elsewhere)."""
    try:
        inside = file.relative_to(root)
    except ValueError:
        return [file]
    return [root, *(root / Path(*inside.parts[:n]) for n in range(1, len(inside.parts) + 1))]


def _refuse_if_unsafe(path: str, file: str, root: Path) -> None:
    try:
        st = os.stat(path)  # a link: its target, which is what would be read
    except FileNotFoundError:
        return
    what = "it" if path == file else f"its folder {path}"
    if st.st_uid != os.geteuid():
        why = f"{what} is owned by {_user(st.st_uid)}, not by you ({_user(os.geteuid())})"
    elif st.st_mode & stat.S_IWOTH:
        why = f"{what} is writable by every user"
    elif st.st_mode & stat.S_IWGRP and not _private_group(st.st_gid):
        why = f"{what} is writable by group {_group(st.st_gid)}"
    else:
        return
    raise UntrustedFolderError(f"{file}: not unpickled, as that can run code: {why}; if you trust whoever can "
                               f"write it: --trust {root} (trust= in Python), {ENV} or a line of "
                               f"~/.config/mjsweep/trust")


def _private_group(gid: int) -> bool:
    """The user's own group, of which no one else is a member (a umask of 002 makes files group-writable)."""
    try:
        me, group = pwd.getpwuid(os.geteuid()), grp.getgrgid(gid)
    except KeyError:
        return False
    return gid == me.pw_gid and group.gr_name == me.pw_name and set(group.gr_mem) <= {me.pw_name}


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _group(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return f"gid {gid}"
