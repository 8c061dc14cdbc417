"""The edits of a parametric variant, as the spec writes them (validated by pydantic).

robots/edits.py applies them; sweepspec.py checks that their placeholders match the variant's edit_grid.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


PLACEHOLDER = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
"""'${label}': replaced by each value of the variant's edit_grid axis 'label'."""


class _Target(_Strict):
    value: Any = None
    """The new value (a number, or a list for vectors), in the XML's own units; or a placeholder."""
    factor: Any = None
    """Multiplies the current value instead; or a placeholder."""

    @model_validator(mode="after")
    def _one_of(self) -> _Target:
        if (self.value is None) == (self.factor is None):
            raise ValueError("give exactly one of 'value' and 'factor'")
        return self


class BodyScale(_Strict):
    body: str | list[str]
    factor: Any
    """Scales the geoms and sites (size, fromto, pos) and child positions of the body's subtree."""


class BodyTarget(_Target):
    body: str | list[str]
    """One name, or a list of names that all get the same edit; a name with * ? [ is a glob over the
    XML's names, one starting with 're:' a regular expression that must match a whole name."""


class GeomTarget(_Target):
    geom: str | list[str] | None = None
    body: str | list[str] | None = None
    """Instead of geom: every geom of the body (not its children) that collides."""

    @model_validator(mode="after")
    def _one_address(self) -> GeomTarget:
        if (self.geom is None) == (self.body is None):
            raise ValueError("give exactly one of 'geom' and 'body' (whose colliding geoms get the edit)")
        return self


class JointTarget(_Target):
    joint: str | list[str]


class ActuatorTarget(_Target):
    actuator: str | list[str] | None = None
    joint: str | list[str] | None = None
    """Instead of actuator: every actuator that drives this joint (for XMLs whose actuators have no names)."""

    @model_validator(mode="after")
    def _one_address(self) -> ActuatorTarget:
        if (self.actuator is None) == (self.joint is None):
            raise ValueError("give exactly one of 'actuator' and 'joint' (the joint the actuators drive)")
        return self


class EditSpec(_Strict):
    """One edit of a base XML: exactly one of these keys. docs/variants.md describes each."""

    scale_body: BodyScale | None = None
    mass: BodyTarget | None = None
    """The body's own mass (its geoms, not its children's)."""
    density: BodyTarget | None = None
    """Density of each of the body's geoms."""
    body_pos: BodyTarget | None = None
    """[x, y, z] offset from the parent body."""
    gear: ActuatorTarget | None = None
    """A number (the first gear entry) or all 6 entries."""
    ctrlrange: ActuatorTarget | None = None
    """[low, high]; the limit is switched on."""
    joint_range: JointTarget | None = None
    """[low, high] in the XML's angle unit; the limit is switched on."""
    damping: JointTarget | None = None
    stiffness: JointTarget | None = None
    armature: JointTarget | None = None
    """Rotor inertia added to the joint."""
    frictionloss: JointTarget | None = None
    """Dry friction of the joint."""
    kp: ActuatorTarget | None = None
    """Position gain of a position servo; its bias follows, so ctrl stays the target position."""
    kv: ActuatorTarget | None = None
    """Damping gain of a position servo, or the gain of a velocity servo."""
    forcerange: ActuatorTarget | None = None
    """[low, high] force (torque) limit of the actuator; the limit is switched on."""
    friction: GeomTarget | None = None
    """A number (sliding friction) or [sliding, torsional, rolling]."""

    @model_validator(mode="after")
    def _exactly_one(self) -> EditSpec:
        # Counting non-null keys (not keys given) lets a dumped spec, nulls and all, load again.
        if len([k for k in EditSpec.model_fields if getattr(self, k) is not None]) != 1:
            raise ValueError(f"an edit is a mapping with exactly one of: {', '.join(EditSpec.model_fields)}")
        return self

    @property
    def op(self) -> str:
        return next(k for k in EditSpec.model_fields if getattr(self, k) is not None)

    @property
    def args(self) -> BaseModel:
        return getattr(self, self.op)
