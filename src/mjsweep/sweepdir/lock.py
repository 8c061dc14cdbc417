"""sweep.lock: the launcher takes it for as long as it runs a sweep, `sweep status` probes it.

An flock, which the OS releases when the holder dies, however it dies; the holder's pid is written into the
file so that a second launcher and `sweep status` can name it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import InputError, SweepDirError, SweepLockedError
from .files import SweepDir


@contextmanager
def sweep_lock(sweep_dir: SweepDir) -> Iterator[None]:
    """Holds sweep.lock. Opened without following a link, and only as a plain file of its own: the pid written
    into it must never land in another file. A lock that cannot be taken (a read-only or unwritable folder, a
    filesystem without locks) is a SweepDirError; one another launcher holds, a SweepLockedError."""
    fd = _open_for_taking(sweep_dir)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            raise SweepLockedError(
                f"sweep {sweep_dir.path} is already running (launcher pid {holder}); "
                "wait for it, or stop it first") from None
        except OSError as exc:
            raise SweepDirError.of(exc, "cannot take the sweep's lock", sweep_dir.lock_file) from None
        yield
    finally:
        os.close(fd)


def _open_for_taking(sweep_dir: SweepDir) -> int:
    try:
        fd = os.open(sweep_dir.lock_file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"{sweep_dir.lock_file} is a symbolic link: the launcher writes its pid into its "
                             "lock, never through a link; remove it") from None
        raise SweepDirError.of(exc, "cannot take the sweep's lock", sweep_dir.lock_file) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        os.close(fd)
        raise InputError(f"{sweep_dir.lock_file} is not a plain file of its own (a hard link, a pipe, a device): "
                         "the launcher writes its pid into its lock; remove it")
    return fd


def lock_holder(sweep_dir: SweepDir) -> int | None:
    """The launcher's pid if sweep.lock is held (-1 when it wrote none yet), else None. Takes the lock only for
    an instant."""
    try:
        fd = os.open(sweep_dir.lock_file, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 64, 0).decode(errors="replace").strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
