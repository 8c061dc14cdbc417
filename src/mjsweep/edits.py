"""Parametric variants: a base XML plus edits, applied with MuJoCo's MjSpec, over a grid of values.

Elements are found by name; a name the XML lacks is an EditError that lists the names it has.
Values are in the XML's own units (degrees where the XML says angle="degree"); MjSpec writes the
edited model out in radians with the conversion done.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .editspec import PLACEHOLDER, EditSpec
from .modelfiles import absolutize_asset_dirs, asset_files, combined_sha256, error_location
from .naming import format_value


class EditError(ValueError):
    """An edit that cannot be applied; `index` is its position in the variant's edit list."""

    def __init__(self, message: str, index: int | None = None):
        super().__init__(message)
        self.index = index


@dataclass(frozen=True)
class GeneratedXml:
    text: str
    """The edited model; mesh and texture folders are absolute, so it compiles from any folder."""
    sha256: str
    """Hash of the edited model with its paths as written, plus every asset file it reads."""


def grid_points(edit_grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the edit_grid's values, in a stable order (one empty point without a grid)."""
    labels = list(edit_grid)
    return [dict(zip(labels, combo)) for combo in itertools.product(*edit_grid.values())]


def point_suffix(point: dict[str, Any]) -> str:
    """{'legs': 1.25, 'gear': 100} -> '_legs=1.25_gear=100'."""
    return "".join(f"_{label}={format_value(value)}" for label, value in point.items())


def generate(base: Path, edits: list[EditSpec], point: dict[str, Any]) -> GeneratedXml:
    """Apply `edits` to `base` with `point`'s values in place of placeholders. Raises EditError."""
    import mujoco

    try:
        spec = mujoco.MjSpec.from_file(str(base))
    except ValueError as exc:
        message = " ".join(str(exc).split())
        raise EditError(f"MuJoCo cannot read {base}: {message} (in {error_location(base, str(exc))})") from None
    for i, edit in enumerate(edits):
        try:
            for args in _one_per_name(edit.args):
                _OPS[edit.op](spec, args, point)
        except EditError as exc:
            raise EditError(f"{edit.op}: {exc}", index=i) from None
    portable = _to_xml(spec)
    assets = asset_files(spec, base.parent)
    absolutize_asset_dirs(spec, base.parent)
    return GeneratedXml(_to_xml(spec), combined_sha256(portable.encode(), assets, base.parent))


def _one_per_name(args) -> list[Any]:
    """An edit naming a list of elements, as one edit per element."""
    key = next(k for k in ("body", "joint", "actuator") if getattr(args, k, None) is not None)
    names = getattr(args, key)
    return [args.model_copy(update={key: n}) for n in names] if isinstance(names, list) else [args]


def _to_xml(spec) -> str:
    try:
        return spec.to_xml()
    except ValueError as exc:
        raise EditError(f"MjSpec cannot write the edited model: {' '.join(str(exc).split())}") from None


# --- finding elements and reading values -------------------------------------------------------

def _find(spec, kind: str, name: str):
    element = {"body": spec.body, "joint": spec.joint, "actuator": spec.actuator}[kind](name)
    if element is None:
        pool = {"body": spec.bodies, "joint": spec.joints, "actuator": spec.actuators}[kind]
        names = sorted(e.name for e in pool if e.name and e.name != "world")
        raise EditError(f"no {kind} named {name!r} (the XML has: {', '.join(names) or 'none with a name'})")
    return element


def _actuators(spec, args) -> list:
    """The named actuator, or every actuator whose transmission is the named joint."""
    import mujoco

    if args.actuator is not None:
        return [_find(spec, "actuator", args.actuator)]
    _find(spec, "joint", args.joint)
    on_joints = [a for a in spec.actuators
                 if a.trntype in (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_JOINTINPARENT)]
    found = [a for a in on_joints if a.target == args.joint]
    if not found:
        driven = sorted({a.target for a in on_joints})
        raise EditError(f"no actuator drives joint {args.joint!r} (actuated: {', '.join(driven) or 'none'})")
    return found


def _fill(value: Any, point: dict[str, Any]) -> Any:
    if isinstance(value, str) and (match := PLACEHOLDER.match(value)):
        return point[match.group(1)]
    if isinstance(value, list):
        return [_fill(v, point) for v in value]
    return value


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise EditError(f"{what} must be a finite number (got {value!r})")
    return float(value)


def _positive(value: Any, what: str) -> float:
    number = _number(value, what)
    if number <= 0:
        raise EditError(f"{what} must be positive (got {value!r})")
    return number


def _vector(value: Any, size: int, what: str) -> np.ndarray:
    if not isinstance(value, list) or len(value) != size:
        raise EditError(f"{what} must be a list of {size} numbers (got {value!r})")
    return np.array([_number(v, what) for v in value])


def _bounds(value: Any, what: str) -> np.ndarray:
    lo, hi = _vector(value, 2, what)
    if lo >= hi:
        raise EditError(f"{what} must be [low, high] with low < high (got {value!r})")
    return np.array([lo, hi])


# --- the edits ---------------------------------------------------------------------------------

def _scale_body(spec, args, point) -> None:
    import mujoco

    factor = _positive(_fill(args.factor, point), "factor")
    _scale_subtree(_find(spec, "body", args.body), factor, mujoco.mjtGeom.mjGEOM_MESH)


def _scale_subtree(body, factor: float, mesh_type) -> None:
    """Geoms, sites and joint anchors of the body and below, and each child's offset, times factor."""
    for geom in body.geoms:
        if geom.type == mesh_type:
            raise EditError(f"geom {geom.name or '(unnamed)'} in body {body.name} is a mesh; "
                            "scale_body scales primitive geoms only")
        _scale_shape(geom, factor)
    for site in body.sites:
        _scale_shape(site, factor)
    for joint in body.joints:
        joint.pos = joint.pos * factor
    if body.explicitinertial:
        body.ipos = body.ipos * factor
    for child in body.bodies:
        child.pos = child.pos * factor
        _scale_subtree(child, factor, mesh_type)


def _scale_shape(element, factor: float) -> None:
    element.size = element.size * factor
    element.pos = element.pos * factor
    if np.all(np.isfinite(element.fromto)):
        element.fromto = element.fromto * factor


def _mass(spec, args, point) -> None:
    body = _find(spec, "body", args.body)
    if args.value is not None:
        current = _own_mass(spec, args.body)
        factor = _positive(_fill(args.value, point), "value") / current
    else:
        factor = _positive(_fill(args.factor, point), "factor")
    for geom in body.geoms:
        if math.isfinite(geom.mass):
            geom.mass = geom.mass * factor
        else:
            geom.density = geom.density * factor
    if body.explicitinertial:
        body.mass = body.mass * factor
        body.inertia = body.inertia * factor
        if np.all(np.isfinite(body.fullinertia)):
            body.fullinertia = body.fullinertia * factor


def _own_mass(spec, name: str) -> float:
    """The body's own mass (not its children's) as MuJoCo compiles it now."""
    try:
        model = spec.copy().compile()
    except ValueError as exc:
        raise EditError(f"cannot compile to read the mass of {name!r}: {' '.join(str(exc).split())}") from None
    mass = float(model.body_mass[model.body(name).id])
    if mass <= 0:
        raise EditError(f"body {name!r} has no mass of its own to set")
    return mass


def _density(spec, args, point) -> None:
    body = _find(spec, "body", args.body)
    for geom in body.geoms:
        if math.isfinite(geom.mass):
            raise EditError(f"geom {geom.name or '(unnamed)'} in body {args.body} sets its mass; "
                            "density would not change it (use mass)")
        if args.value is not None:
            geom.density = _positive(_fill(args.value, point), "value")
        else:
            geom.density = geom.density * _positive(_fill(args.factor, point), "factor")


def _body_pos(spec, args, point) -> None:
    body = _find(spec, "body", args.body)
    if args.value is not None:
        body.pos = _vector(_fill(args.value, point), 3, "value")
    else:
        body.pos = body.pos * _number(_fill(args.factor, point), "factor")


def _gear(spec, args, point) -> None:
    value = _fill(args.value, point)
    for actuator in _actuators(spec, args):
        if args.factor is not None:
            actuator.gear = actuator.gear * _number(_fill(args.factor, point), "factor")
        elif isinstance(value, list):
            actuator.gear = _vector(value, 6, "value")
        else:
            gear = actuator.gear.copy()
            gear[0] = _number(value, "value")
            actuator.gear = gear


def _ctrlrange(spec, args, point) -> None:
    import mujoco

    for actuator in _actuators(spec, args):
        actuator.ctrlrange = _new_bounds(actuator.ctrlrange, args, point)
        actuator.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE


def _joint_range(spec, args, point) -> None:
    import mujoco

    joint = _find(spec, "joint", args.joint)
    joint.range = _new_bounds(joint.range, args, point)
    joint.limited = mujoco.mjtLimited.mjLIMITED_TRUE


def _new_bounds(current: np.ndarray, args, point) -> np.ndarray:
    if args.value is not None:
        return _bounds(_fill(args.value, point), "value")
    return current * _positive(_fill(args.factor, point), "factor")


def _joint_coefficient(attr: str) -> Callable[[Any, Any, dict[str, Any]], None]:
    """damping / stiffness: MjSpec keeps a short vector whose first entry is the XML attribute."""

    def edit(spec, args, point) -> None:
        joint = _find(spec, "joint", args.joint)
        coefficients = np.array(getattr(joint, attr), dtype=float)
        if args.value is not None:
            coefficients[0] = _number(_fill(args.value, point), "value")
        else:
            coefficients = coefficients * _number(_fill(args.factor, point), "factor")
        if coefficients[0] < 0:
            raise EditError(f"{attr} must not be negative (got {coefficients[0]})")
        setattr(joint, attr, coefficients)

    return edit


_OPS: dict[str, Callable[[Any, Any, dict[str, Any]], None]] = {
    "scale_body": _scale_body, "mass": _mass, "density": _density, "body_pos": _body_pos,
    "gear": _gear, "ctrlrange": _ctrlrange, "joint_range": _joint_range,
    "damping": _joint_coefficient("damping"), "stiffness": _joint_coefficient("stiffness"),
}
