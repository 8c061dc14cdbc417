"""A variant's `randomize:` key: edits whose value or factor is drawn from a distribution, and their checks.

robots/draws.py draws from the distributions parsed here; robots/randomize.py applies the draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import shown
from .editspec import EditSpec
from .locator import SpecLocator

DISTRIBUTIONS = ("uniform", "log_uniform", "normal", "choice")

MIN_NORMAL_MASS = 0.01
"""A normal whose bounds hold less of its mass than this would be mostly rejected draws: refused."""


class RandomizedEdit(EditSpec):
    """An edit of `randomize:`: its value or factor (or entries of a list value) are distributions."""

    per: Literal["episode", "env"] = "episode"
    """episode: a fresh draw at every reset; env: one draw per env, kept for all its episodes."""


@dataclass(frozen=True)
class Distribution:
    kind: str
    """One of DISTRIBUTIONS."""
    params: tuple[float, ...]
    """uniform, log_uniform: (low, high); normal: (mean, std, low, high); choice: the values."""

    @property
    def support(self) -> tuple[float, float]:
        """The smallest and largest value a draw can take."""
        if self.kind == "normal":
            return self.params[2], self.params[3]
        return min(self.params), max(self.params)

    def as_data(self) -> dict[str, Any]:
        """As the spec writes it, for run ids and hashes."""
        if self.kind == "normal":
            mean, std, low, high = self.params
            return {"normal": {"mean": mean, "std": std, "low": low, "high": high}}
        return {self.kind: list(self.params)}


def parse_distribution(raw: dict[str, Any]) -> Distribution:
    """A mapping {kind: parameters} as a Distribution; ValueError saying what is wrong."""
    if len(raw) != 1 or next(iter(raw)) not in DISTRIBUTIONS:
        raise ValueError(f"a distribution is one of {{{', '.join(f'{k}: ...' for k in DISTRIBUTIONS)}}} "
                         f"(got {shown(raw)})")
    kind, params = next(iter(raw.items()))
    if kind in ("uniform", "log_uniform"):
        low, high = _pair(params, kind)
        if kind == "log_uniform" and low <= 0:
            raise ValueError(f"log_uniform needs 0 < low (got {shown(params)})")
        return Distribution(kind, (low, high))
    if kind == "choice":
        if not isinstance(params, list) or not params:
            raise ValueError(f"choice takes a non-empty list of numbers (got {shown(params)})")
        return Distribution(kind, tuple(_finite(v, "choice") for v in params))
    return _normal(params)


def _normal(params: Any) -> Distribution:
    if not isinstance(params, dict) or not {"mean", "std"} <= set(params) or \
            not set(params) <= {"mean", "std", "low", "high"}:
        raise ValueError(f"normal takes {{mean, std, low, high}} (low and high optional bounds; got {shown(params)})")
    mean, std = _finite(params["mean"], "mean"), _finite(params["std"], "std")
    low = _finite(params["low"], "low") if "low" in params else -math.inf
    high = _finite(params["high"], "high") if "high" in params else math.inf
    if std <= 0:
        raise ValueError(f"normal needs std > 0 (got {std:g})")
    if low >= high:
        raise ValueError(f"normal needs low < high (got low {low:g}, high {high:g})")
    held = _normal_cdf((high - mean) / std) - _normal_cdf((low - mean) / std)
    if held < MIN_NORMAL_MASS:
        raise ValueError(f"normal's bounds [{low:g}, {high:g}] hold {held:.2%} of its mass; "
                         f"at least {MIN_NORMAL_MASS:.0%} is needed")
    return Distribution("normal", (mean, std, low, high))


def _normal_cdf(z: float) -> float:
    return 0.5 * (1 + math.erf(z / math.sqrt(2))) if math.isfinite(z) else (1.0 if z > 0 else 0.0)


def _pair(params: Any, kind: str) -> tuple[float, float]:
    if not isinstance(params, list) or len(params) != 2:
        raise ValueError(f"{kind} takes [low, high] (got {shown(params)})")
    low, high = _finite(params[0], kind), _finite(params[1], kind)
    if low >= high:
        raise ValueError(f"{kind} needs low < high (got {shown(params)})")
    return low, high


def _finite(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number (got {shown(value)})")
    return float(value)


# The smallest value a drawn number may take, per edit and key: "positive" (> 0), "non-negative" (>= 0), or
# absent (any number). A `normal` on a key listed here needs bounds.
_FACTOR_LIMITS = {
    "scale_body": "positive", "mass": "positive", "density": "positive", "ctrlrange": "positive",
    "joint_range": "positive", "forcerange": "positive", "kp": "positive", "friction": "positive",
    "damping": "non-negative", "stiffness": "non-negative", "armature": "non-negative",
    "frictionloss": "non-negative", "kv": "non-negative",
}
_VALUE_LIMITS = {
    "mass": "positive", "density": "positive", "kp": "positive", "friction": "non-negative",
    "damping": "non-negative", "stiffness": "non-negative", "armature": "non-negative",
    "frictionloss": "non-negative", "kv": "non-negative",
}
_BOUNDS = ("ctrlrange", "joint_range", "forcerange")
"""Edits whose value is [low, high]: a drawn low must stay below a drawn high."""


def distributions(edit: EditSpec) -> dict[tuple[str, int | None], Distribution]:
    """The edit's distributions by (key, list index or None), in the order they are drawn. Raises ValueError
    for one that is malformed."""
    found: dict[tuple[str, int | None], Distribution] = {}
    for key in ("value", "factor"):
        raw = getattr(edit.args, key, None)
        if isinstance(raw, dict):
            found[(key, None)] = parse_distribution(raw)
        elif isinstance(raw, list):
            for index, entry in enumerate(raw):
                if isinstance(entry, dict):
                    found[(key, index)] = parse_distribution(entry)
    return found


def check_randomize(edits: list[RandomizedEdit], at: tuple[str | int, ...], loc: SpecLocator) -> None:
    """Every randomized edit has a distribution, each well formed and unable to draw a non-physical value."""
    for j, edit in enumerate(edits):
        where = (*at, "randomize", j, edit.op)
        for key in ("value", "factor"):
            if _has_placeholder(getattr(edit.args, key, None)):
                raise loc.error((*where, key), "randomize takes distributions, not edit_grid placeholders")
        try:
            found = distributions(edit)
        except ValueError as exc:
            raise loc.error(where, str(exc)) from None
        if not found:
            raise loc.error(where, f"no distribution ({', '.join(DISTRIBUTIONS)}) in its value or factor: "
                                   "a fixed edit belongs under 'edits'")
        for (key, index), dist in found.items():
            if problem := _physical_problem(edit.op, key, index, dist):
                raise loc.error((*where, key), problem)
        if edit.op in _BOUNDS and "value" in {k for k, _ in found}:
            if problem := _bounds_problem(edit.args.model_dump()["value"]):
                raise loc.error((*where, "value"), problem)


def _has_placeholder(raw: Any) -> bool:
    if isinstance(raw, list):
        return any(_has_placeholder(v) for v in raw)
    return isinstance(raw, str) and "${" in raw


def _physical_problem(op: str, key: str, index: int | None, dist: Distribution) -> str | None:
    limit = (_FACTOR_LIMITS if key == "factor" else _VALUE_LIMITS).get(op)
    if key == "value" and op == "friction" and index is None:
        limit = "non-negative"
    if limit is None:
        return None
    low = dist.support[0]
    if low > 0 or (low == 0 and limit == "non-negative"):
        return None
    if dist.kind == "normal" and not math.isfinite(low):
        return f"{op}'s {key} must be {limit}: a normal on it needs bounds, {{normal: {{mean, std, low, high}}}}"
    return f"{op}'s {key} must be {limit}, but {dist.kind} {shown(dist.as_data()[dist.kind])} can draw {low:g}"


def _bounds_problem(value: Any) -> str | None:
    if not isinstance(value, list) or len(value) != 2:
        return None  # the edit itself says what a bounds value must be
    lows, highs = (_span(v) for v in value)
    if lows[1] >= highs[0]:
        return f"[low, high] must keep low < high on every draw, but low can reach {lows[1]:g} and high " \
               f"can be {highs[0]:g}"
    return None


def _span(entry: Any) -> tuple[float, float]:
    if isinstance(entry, dict):
        return parse_distribution(entry).support
    number = float(entry) if isinstance(entry, (int, float)) else math.nan
    return number, number
