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
