"""mjsweep: sweeps of single-threaded SB3 trainings over MuJoCo robot variants.

The Python API (docs/api.md): `mjsweep.load(path)` reads a sweep folder back, `mjsweep.run(spec)` runs a sweep,
`mjsweep.validate(spec)` checks one. Its names are imported on first use, so that `import mjsweep` stays light
(no torch, SB3, matplotlib or pandas).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import CurvePoint, PlanSummary, Policy, Run, Sweep, SweepFailed, load, run, validate
    from .errors import InputError, LaunchError, SpecError
    from .sweepdir.trust import UntrustedFolderError

__all__ = ["CurvePoint", "InputError", "LaunchError", "PlanSummary", "Policy", "Run", "SpecError", "Sweep",
           "SweepFailed", "UntrustedFolderError", "load", "run", "validate"]

_API = {"CurvePoint", "PlanSummary", "Policy", "Run", "Sweep", "SweepFailed", "load", "run", "validate"}
_ERRORS = {"InputError", "LaunchError", "SpecError"}


def __getattr__(name: str) -> Any:
    # The version lives in one place, pyproject.toml; the installed metadata carries it. Read on
    # demand, so that importing the package stays free of importlib.metadata.
    if name == "__version__":
        from importlib.metadata import version

        return version("mjsweep")
    if name in _API:
        from . import api

        return getattr(api, name)
    if name in _ERRORS:
        from . import errors

        return getattr(errors, name)
    if name == "UntrustedFolderError":
        from .sweepdir import trust

        return trust.UntrustedFolderError
    raise AttributeError(f"module 'mjsweep' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__, "__version__"])
