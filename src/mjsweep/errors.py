"""The two kinds of failure a sweep tells apart.

An InputError is bad input or a refused start: `sweep` exits 2 (cli.EXIT_INVALID) and no run has been
started. A LaunchError is one run that could not be launched while the sweep runs: that run fails and
the others go on.
"""

from __future__ import annotations


class InputError(Exception):
    """What was asked cannot start: exit 2, nothing started. str() is the one-line message."""


class SpecError(InputError):
    """An invalid spec. str() is one line: 'FILE:LINE: KEY: message'."""


class LauncherConfigError(InputError):
    """The chosen backend cannot run this spec here (no GPU for device: cuda, no cluster, ...)."""


class SweepLockedError(InputError):
    """Another launcher holds this sweep's lock."""


class SweepDirError(InputError):
    """The sweep folder cannot be written or locked (read-only, permission denied, no space, a lock the
    filesystem refuses) before any run starts: exit 2. str() names the path and the errno's words."""

    @classmethod
    def of(cls, exc: OSError, what: str, path: object) -> SweepDirError:
        """`what` ("cannot write", "cannot take the lock") the path the error names, else `path`."""
        where = exc.filename if exc.filename is not None else path
        return cls(f"{what} {where}: {os_words(exc)}")


def said(exc: Exception) -> str:
    """An exception as one line: an OSError as the path it names and its errno's words, others as they say."""
    if isinstance(exc, OSError):
        return f"{exc.filename}: {os_words(exc)}" if exc.filename is not None else os_words(exc)
    return str(exc)


def os_words(exc: OSError) -> str:
    """An OSError's own words and its errno's name, without Python's repr: "Read-only file system (EROFS)"."""
    import errno

    name = errno.errorcode.get(exc.errno) if exc.errno is not None else None
    words = exc.strerror or str(exc) or type(exc).__name__
    return f"{words} ({name})" if name else words


class LaunchError(Exception):
    """One run could not be launched (sbatch refused its retry, the cluster refused its actor)."""


def shown(value: object, width: int = 80) -> str:
    """A value as an error line shows it: its repr, cut to about `width` characters. reprlib stops early, so a
    value of any size (a list an alias repeated a million times) costs no more than its first items."""
    import reprlib

    short = reprlib.Repr()
    short.maxstring = short.maxother = width
    short.maxlist = short.maxdict = short.maxtuple = short.maxset = 6
    short.maxlevel = 3
    text = short.repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."
