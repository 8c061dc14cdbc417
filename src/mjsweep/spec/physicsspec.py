"""`eval.physics`: held-out physics every run's final policy is evaluated on, and its checks.

The draws come from robots/draws.py's held-out stream, a function of `seed` and the draw's index alone: every
group meets the same physics (from the same distribution), and no training env draws them.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from .limits import MAX_COUNT, MAX_SEED
from .locator import SpecLocator
from .randomspec import RandomizedEdit, check_randomize


def _whole(value: Any) -> Any:
    """1000.0 as 1000 (YAML's 1e3), as the spec's other counts take it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class PhysicsEvalSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    draws: Annotated[int, BeforeValidator(_whole)] = Field(ge=1, le=MAX_COUNT)
    """Held-out draws; the final policy plays one episode on each."""
    seed: Annotated[int, BeforeValidator(_whole)] = Field(0, ge=0, le=MAX_SEED)
    """The draws are a function of this seed and their index, never of a run's seed: common to every group."""
    randomize: list[RandomizedEdit] | None = None
    """The distribution drawn from (as a variant's `randomize:`); default: each variant's own training one.
    Wider ranges than training's make an out-of-distribution test."""
    threshold: float | None = None
    """A return at or above which the policy counts as still working on a draw (the report's fraction)."""

    def edits_for(self, variant_randomize: list[RandomizedEdit]) -> list[RandomizedEdit]:
        """The edits a variant's runs are evaluated on."""
        return list(self.randomize) if self.randomize is not None else list(variant_randomize)

    def as_data(self, variant_randomize: list[RandomizedEdit]) -> dict[str, Any]:
        """What spec.json records for one variant's runs: the resolved distribution, never None."""
        return {"draws": self.draws, "seed": self.seed, "threshold": self.threshold,
                "randomize": [edit.model_dump(exclude_none=True) for edit in self.edits_for(variant_randomize)]}


def check_physics(physics: PhysicsEvalSpec, variants: list[tuple[str, list[RandomizedEdit]]],
                  loc: SpecLocator) -> None:
    """Its own distribution well formed, or else every variant (described, its randomize) has one to default to."""
    at = ("eval", "physics")
    if physics.randomize is not None:
        if not physics.randomize:
            raise loc.error((*at, "randomize"), "an empty list: give edits with distributions, or leave the key "
                                                "out to use each variant's own randomize")
        check_randomize(physics.randomize, at, loc)
        return
    for name, randomize in variants:
        if not randomize:
            raise loc.error(at, f"{name} has no randomize to draw held-out physics from: give "
                                "eval.physics.randomize")
