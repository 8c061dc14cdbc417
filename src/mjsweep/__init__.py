"""mjsweep: sweeps of single-threaded SB3 trainings over MuJoCo robot variants."""

from __future__ import annotations


def __getattr__(name: str) -> str:
    # The version lives in one place, pyproject.toml; the installed metadata carries it. Read on
    # demand, so that importing the package stays free of importlib.metadata.
    if name == "__version__":
        from importlib.metadata import version

        return version("mjsweep")
    raise AttributeError(f"module 'mjsweep' has no attribute {name!r}")
