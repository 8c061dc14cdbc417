"""Applying a draw of a variant's randomized edits to a compiled model, always from the nominal model.

Edits that change only model fields (mass, friction, damping, stiffness, armature, frictionloss, gear, kp, kv,
ctrlrange, forcerange) are written into the MjModel in place, every field they touch first put back to its
nominal value (draws never compound), then mj_setConst recomputes what a compile derives from them (subtree
masses, the joint-space inertia at qpos0, inverse weights, actuator lengths and accelerations). Any other edit
(scale_body, body_pos, joint_range, density) changes the model's structure: the nominal XML is edited with
MjSpec and compiled again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..spec.randomspec import RandomizedEdit
from . import draws as drawlib
from . import edits as editlib

FIELD_EDITS = frozenset({"mass", "friction", "damping", "stiffness", "armature", "frictionloss", "gear", "kp",
                         "kv", "ctrlrange", "forcerange"})

# The model fields each field edit writes: put back to nominal before every draw.
_FIELDS = {
    "mass": ("body_mass", "body_inertia"), "friction": ("geom_friction",),
    "damping": ("dof_damping", "dof_dampingpoly"), "stiffness": ("jnt_stiffness", "jnt_stiffnesspoly"),
    "armature": ("dof_armature",), "frictionloss": ("dof_frictionloss",), "gear": ("actuator_gear",),
    "kp": ("actuator_gainprm", "actuator_biasprm"), "kv": ("actuator_gainprm", "actuator_biasprm"),
    "ctrlrange": ("actuator_ctrlrange", "actuator_ctrllimited"),
    "forcerange": ("actuator_forcerange", "actuator_forcelimited"),
}


def structural(edits: list[RandomizedEdit]) -> bool:
    """Whether a draw of these edits needs a recompile."""
    return any(edit.op not in FIELD_EDITS for edit in edits)


class Randomizer:
    """Draws of `edits` on the model compiled from `xml` (the variant's own model, fixed edits applied)."""

    def __init__(self, xml: Path, edits: list[RandomizedEdit]):
        import mujoco

        self.xml = xml
        self.edits = list(edits)
        self.slots = drawlib.slots(self.edits)
        self.structural = structural(self.edits)
        self.template = drawlib.template(self.edits)
        self._writes: list[tuple[str, Any, int]] = []
        """(edit, its arguments, the id of an element it writes) for each element, with field edits only."""
        if not self.structural:
            # Element ids resolved once through the spec, which knows globs, unnamed actuators and colliding
            # geoms; a model compiled from it has the env's ids.
            spec = mujoco.MjSpec.from_file(str(xml))
            resolved = spec.compile()
            self._writes = [(edit.op, args, resolved.bind(element).id)
                            for edit in self.template for args, element in editlib.targets(spec, edit)]
        self._nominal: dict[str, np.ndarray] = {}

    def model_for(self, model, data, values: dict[str, float]):
        """The model of this draw: `model` changed in place (field edits), or a new model (structural edits).
        `data` must belong to `model`; a new model needs a new MjData."""
        if self.structural:
            return compile_draw(self.xml, self.template, values)
        import mujoco

        if not self._nominal:
            self._nominal = {name: np.array(getattr(model, name), copy=True)
                             for op, *_ in self._writes for name in _FIELDS[op]}
        for name, nominal in self._nominal.items():
            getattr(model, name)[...] = nominal
        for op, args, element in self._writes:
            _WRITERS[op](model, element, args, values)
        mujoco.mj_setConst(model, data)
        return model


def compile_draw(xml: Path, template: list, values: dict[str, float]):
    """The nominal XML with the draw's values, edited by MjSpec and compiled."""
    spec = editlib.edited_spec(xml, template, values)
    try:
        return spec.compile()
    except ValueError as exc:
        raise editlib.EditError(f"the draw {values} does not compile: {' '.join(str(exc).split())}") from None


def _filled(raw: Any, values: dict[str, float]) -> Any:
    """A template's value or factor with the draw's values in place of its placeholders."""
    if isinstance(raw, list):
        return [_filled(v, values) for v in raw]
    if isinstance(raw, str) and (match := editlib.PLACEHOLDER.match(raw)):
        return values[match.group(1)]
    return raw


def _scaled(current: np.ndarray, args, values: dict[str, float]) -> np.ndarray:
    """value (a number for the first entry, or the whole vector), or current x factor."""
    if args.factor is not None:
        return current * _filled(args.factor, values)
    value = _filled(args.value, values)
    if isinstance(value, list):
        return np.array(value, dtype=float)
    out = np.array(current, dtype=float)
    out[0] = value
    return out


def _mass(model, body: int, args, values) -> None:
    if args.factor is not None:
        factor = _filled(args.factor, values)
    else:
        factor = _filled(args.value, values) / model.body_mass[body]
    model.body_mass[body] *= factor
    model.body_inertia[body] *= factor


def _friction(model, geom: int, args, values) -> None:
    model.geom_friction[geom] = _scaled(model.geom_friction[geom], args, values)


def _dof_scalar(field: str) -> Callable[..., None]:
    def write(model, joint: int, args, values) -> None:
        dofs = _dofs(model, joint)
        getattr(model, field)[dofs] = _scaled(getattr(model, field)[dofs][:1], args, values)[0]
    return write


def _damping(model, joint: int, args, values) -> None:
    """MjSpec's damping is [linear, polynomial...]: a factor scales all of it, a value sets the linear term."""
    dofs = _dofs(model, joint)
    coefficients = np.concatenate([model.dof_damping[dofs][:1], model.dof_dampingpoly[dofs][0]])
    coefficients = _scaled(coefficients, args, values)
    model.dof_damping[dofs] = coefficients[0]
    model.dof_dampingpoly[dofs] = coefficients[1:]


def _stiffness(model, joint: int, args, values) -> None:
    coefficients = _scaled(np.concatenate([model.jnt_stiffness[joint:joint + 1], model.jnt_stiffnesspoly[joint]]),
                           args, values)
    model.jnt_stiffness[joint] = coefficients[0]
    model.jnt_stiffnesspoly[joint] = coefficients[1:]


def _dofs(model, joint: int) -> slice:
    start = int(model.jnt_dofadr[joint])
    count = {0: 6, 1: 3, 2: 1, 3: 1}[int(model.jnt_type[joint])]
    return slice(start, start + count)


def _gear(model, actuator: int, args, values) -> None:
    model.actuator_gear[actuator] = _scaled(model.actuator_gear[actuator], args, values)


def _kp(model, actuator: int, args, values) -> None:
    kp = float(_scaled(model.actuator_gainprm[actuator][:1], args, values)[0])
    model.actuator_gainprm[actuator, 0] = kp
    model.actuator_biasprm[actuator, 1] = -kp


def _kv(model, actuator: int, args, values) -> None:
    gain, bias = model.actuator_gainprm[actuator], model.actuator_biasprm[actuator]
    if bias[1] == -gain[0] and bias[1] != 0:  # a position servo: kv is its bias on velocity
        bias[2] = -float(_scaled(-bias[2:3], args, values)[0])
    else:  # a velocity servo: kv is its gain
        gain[0] = float(_scaled(gain[:1], args, values)[0])
        bias[2] = -gain[0]


def _bounds(field: str, limited: str) -> Callable[..., None]:
    def write(model, actuator: int, args, values) -> None:
        current = getattr(model, field)[actuator]
        getattr(model, field)[actuator] = current * _filled(args.factor, values) if args.factor is not None \
            else np.array(_filled(args.value, values), dtype=float)
        getattr(model, limited)[actuator] = 1
    return write


_WRITERS: dict[str, Callable[..., None]] = {
    "mass": _mass, "friction": _friction, "damping": _damping, "stiffness": _stiffness,
    "armature": _dof_scalar("dof_armature"), "frictionloss": _dof_scalar("dof_frictionloss"),
    "gear": _gear, "kp": _kp, "kv": _kv,
    "ctrlrange": _bounds("actuator_ctrlrange", "actuator_ctrllimited"),
    "forcerange": _bounds("actuator_forcerange", "actuator_forcelimited"),
}
