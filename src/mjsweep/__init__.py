"""mjsweep: sweeps of single-threaded SB3 trainings over MuJoCo robot variants.

The Python API (docs/api.md): `mjsweep.load(path)` reads a sweep folder back, `mjsweep.run(spec)` runs a sweep
(how: `RunOptions`, `sweep run`'s options), `mjsweep.validate(spec)` checks one. Its names are imported on first
use, so that `import mjsweep` stays light (no torch, SB3, matplotlib or pandas).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import (
        Backend,
        CurvePoint,
        Order,
        PlanSummary,
        Policy,
        Run,
        RunOptions,
        StartWith,
        Sweep,
        SweepFailed,
        load,
        run,
        validate,
    )
    from .api.lineage import Lineage
    from .crosseval.pairs import Cell as CrossCell
    from .errors import InputError, LaunchError, SpecError
    from .results.compare import Comparison
    from .results.physics_report import PhysicsReport
    from .results.report import GroupRow
    from .search.ranking import TrialRow
    from .sweepdir.trust import UntrustedFolderError

__all__ = ["Backend", "Comparison", "CrossCell", "CurvePoint", "GroupRow", "InputError", "LaunchError", "Lineage",
           "Order", "PhysicsReport", "PlanSummary", "Policy", "Run", "RunOptions", "SpecError", "StartWith", "Sweep",
           "SweepFailed", "TrialRow", "UntrustedFolderError", "load", "run", "validate"]

_API = {"Backend", "CurvePoint", "Order", "PlanSummary", "Policy", "Run", "RunOptions", "StartWith", "Sweep",
        "SweepFailed", "load", "run", "validate"}
_ERRORS = {"InputError", "LaunchError", "SpecError"}
# What Sweep's methods return, by the module that defines it and its name there.
_RESULT_TYPES = {"GroupRow": ("results.report", "GroupRow"), "Comparison": ("results.compare", "Comparison"),
                 "TrialRow": ("search.ranking", "TrialRow"), "Lineage": ("api.lineage", "Lineage"),
                 "CrossCell": ("crosseval.pairs", "Cell"),
                 "PhysicsReport": ("results.physics_report", "PhysicsReport")}


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
    if name in _RESULT_TYPES:
        from importlib import import_module

        module, attribute = _RESULT_TYPES[name]
        return getattr(import_module(f".{module}", __name__), attribute)
    if name == "UntrustedFolderError":
        from .sweepdir import trust

        return trust.UntrustedFolderError
    raise AttributeError(f"module 'mjsweep' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__, "__version__"])
