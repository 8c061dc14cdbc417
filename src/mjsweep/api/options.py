"""How a sweep runs, as `sweep run`'s options and `mjsweep.run(..., options=)` both give it: `RunOptions`, its
choices as enums, checked when made (InputError naming the option and the value)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..plan.order import Order

__all__ = ["Backend", "Order", "RunOptions", "StartWith"]


class Backend(str, Enum):
    """Where runs execute (docs/cluster.md)."""

    LOCAL = "local"
    RAY = "ray"
    SLURM = "slurm"


class StartWith(str, Enum):
    """How local runs begin: forked from a template that imported torch once (CPU runs), a fresh interpreter
    each, or auto (template on Linux)."""

    AUTO = "auto"
    TEMPLATE = "template"
    EXEC = "exec"


@dataclass(frozen=True)
class RunOptions:
    """How a sweep runs; the defaults are `sweep run`'s. Strings are taken for the enums ("ray", "variant")."""

    backend: Backend = Backend.LOCAL
    address: str | None = None
    """A Ray cluster's address, e.g. 10.0.0.1:6379 (None: RAY_ADDRESS, else a local Ray)."""
    gpus: str | None = None
    """GPU ids for device: cuda, e.g. "0,1" (None: all found)."""
    workers: int | None = None
    """Runs at once (None: what `sweep bench` measured best on this machine, else its usable cores; a cluster
    sizes itself)."""
    retries: int = 1
    """Extra attempts for a run killed by a signal or a timeout, or lost."""
    timeout_s: float | None = None
    """Each run's time limit (None: none)."""
    grace_s: float = 10.0
    """Seconds between SIGINT and SIGKILL when runs are stopped."""
    order: Order = Order.BREADTH
    """Start order: breadth (every group's first seed before any's second, the longest first within) or
    variant (the spec's order)."""
    start: StartWith = StartWith.AUTO
    report_every_s: float | None = field(default_factory=lambda: report_every_default())
    """Rewrite the sweep folder's report.html while runs end, at most this often (None: never). Default:
    MJSWEEP_REPORT_EVERY as `sweep run --report-every` reads it, else 60 s."""
    max_runs: int | None = None
    """The most runs the spec may plan (None: the spec's max_runs)."""
    trust: tuple[Path, ...] = field(default=())
    """Folders whose pickles the runs may load (resumed runs, a warm start's source) though another user owns
    or can write them (docs/trust.md)."""

    def __post_init__(self) -> None:
        for name, kind in (("backend", Backend), ("order", Order), ("start", StartWith)):
            object.__setattr__(self, name, _choice(name, getattr(self, name), kind))
        object.__setattr__(self, "trust", tuple(Path(p) for p in self.trust))
        if self.report_every_s == 0:
            object.__setattr__(self, "report_every_s", None)
        for name, low in (("workers", 1), ("retries", 0), ("max_runs", 1)):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
                raise InputError(f"RunOptions {name} {value!r}: expected a whole number of at least {low}")
        for name in ("timeout_s", "grace_s", "report_every_s"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int | float) and math.isfinite(value) and value >= 0
                                          and (value > 0 or name == "grace_s")):
                raise InputError(f"RunOptions {name} {value!r}: expected a number of seconds above 0")


REPORT_EVERY_ENV = "MJSWEEP_REPORT_EVERY"


def report_every_default() -> float | None:
    """`--report-every`'s default: MJSWEEP_REPORT_EVERY (a duration, 0 or off), else 60 s."""
    from ..naming import parse_interval

    text = os.environ.get(REPORT_EVERY_ENV)
    if text is None:
        return 60.0
    try:
        return parse_interval(text)
    except ValueError as exc:
        raise InputError(f"{REPORT_EVERY_ENV} {text!r}: {exc}") from None


def _choice(name: str, value: object, kind: type[Enum]) -> Any:
    try:
        return kind(value)
    except ValueError:
        expected = ", ".join(str(member.value) for member in kind)
        raise InputError(f"RunOptions {name} {value!r}: expected one of {expected}") from None
