"""Parametric variants: a base XML plus edits, applied with MuJoCo's MjSpec, over a grid of values.

Elements are found by name; a name the XML lacks is an EditError that lists the names it has.
Values are in the XML's own units (degrees where the XML says angle="degree"); MjSpec writes the
edited model out in radians with the conversion done.
"""

from __future__ import annotations

import fnmatch
import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..naming import format_value
from ..spec.editspec import PLACEHOLDER, EditSpec
from .modelfiles import (
    absolutize_asset_dirs,
    absolutize_sub_model_assets,
    asset_files,
    combined_sha256,
    error_location,
    portable_text,
)


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
    portable: str
    """The edited model with its paths as written (relative to the base's folder; one written as absolute made
    relative to it, modelfiles.portable_text): what the hash covers and what a sweep's snapshot stores beside the
    base's files."""


def grid_points(edit_grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the edit_grid's values, in a stable order (one empty point without a grid)."""
    labels = list(edit_grid)
    return [dict(zip(labels, combo, strict=True)) for combo in itertools.product(*edit_grid.values())]


def point_suffix(point: dict[str, Any]) -> str:
    """{'legs': 1.25, 'gear': 100} -> '_legs=1.25_gear=100'."""
    return "".join(f"_{label}={format_value(value)}" for label, value in point.items())


def generate(base: Path, edits: list[EditSpec], point: dict[str, Any]) -> GeneratedXml:
    """Apply `edits` to `base` with `point`'s values in place of placeholders. Raises EditError."""
    spec = edited_spec(base, edits, point)
    absolutize_sub_model_assets(spec, base)  # the XML written below holds a sub-model's assets, not its folder
    folder = base.parent.resolve()
    portable = portable_text(_to_xml(spec), folder, (folder / (spec.meshdir or "")).resolve(),
                             (folder / (spec.texturedir or "")).resolve())
    assets = asset_files(spec, base.parent)
    absolutize_asset_dirs(spec, base.parent)
    return GeneratedXml(_to_xml(spec), combined_sha256(portable.encode(), assets, base.parent), portable)


def edited_spec(base: Path, edits: list[EditSpec], point: dict[str, Any]):
    """The MjSpec of `base` with `edits` applied (not written out: it compiles with full precision)."""
    import mujoco

    try:
        spec = mujoco.MjSpec.from_file(str(base))
    except ValueError as exc:
        message = " ".join(str(exc).split())
        raise EditError(f"MuJoCo cannot read {base}: {message} (in {error_location(base, str(exc))})") from None
    for i, edit in enumerate(edits):
        try:
            for args in _one_per_name(spec, edit.args):
                _OPS[edit.op](spec, args, point)
        except EditError as exc:
            raise EditError(f"{edit.op}: {exc}", index=i) from None
    return spec


_KINDS = ("body", "joint", "actuator", "geom")
_GLOB_CHARS = frozenset("*?[")
REGEX_PREFIX = "re:"


def _one_per_name(spec, args) -> list[Any]:
    """An edit naming a list of elements or a pattern, as one edit per element named."""
    key = next(k for k in _KINDS if getattr(args, k, None) is not None)
    names = getattr(args, key)
    listed = names if isinstance(names, list) else [names]
    expanded = list(dict.fromkeys(n for name in listed for n in _matching(spec, key, name)))
    if expanded == [names]:
        return [args]
    return [args.model_copy(update={key: n}) for n in expanded]


def _is_pattern(name: str) -> bool:
    return name.startswith(REGEX_PREFIX) or bool(_GLOB_CHARS & set(name))


def _matching(spec, kind: str, name: str) -> list[str]:
    """The names a glob ('*_KFE') or a regular expression ('re:[LR]F_.*') matches, in the XML's order;
    a plain name as it is (its existence is checked where it is used)."""
    if not _is_pattern(name):
        return [name]
    names = _names(spec, kind)
    if name.startswith(REGEX_PREFIX):
        try:
            pattern = re.compile(name[len(REGEX_PREFIX):])
        except re.error as exc:
            raise EditError(f"{name!r} is not a valid regular expression: {exc}") from None
        matched = [n for n in names if pattern.fullmatch(n)]
    else:
        matched = [n for n in names if fnmatch.fnmatchcase(n, name)]
    if not matched:
        listed = ", ".join(sorted(names)) or "none with a name"
        raise EditError(f"no {kind} name matches {name!r} (the XML has: {listed})")
    return matched


def _names(spec, kind: str) -> list[str]:
    pool = {"body": spec.bodies, "joint": spec.joints, "actuator": spec.actuators, "geom": spec.geoms}[kind]
    return [e.name for e in pool if e.name and e.name != "world"]


def _to_xml(spec) -> str:
    try:
        return spec.to_xml()
    except ValueError as exc:
        raise EditError(f"MjSpec cannot write the edited model: {' '.join(str(exc).split())}") from None


# --- finding elements and reading values -------------------------------------------------------

def _find(spec, kind: str, name: str):
    element = {"body": spec.body, "joint": spec.joint, "actuator": spec.actuator, "geom": spec.geom}[kind](name)
    if element is None:
        names = sorted(_names(spec, kind))
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
    factor = _positive(_fill(args.factor, point), "factor")
    _scale_subtree(spec, _find(spec, "body", args.body), factor)


def _scale_subtree(spec, body, factor: float) -> None:
    """Geoms (meshes through a scaled copy of their mesh), sites and joint anchors of the body and
    below, and each child's offset, times factor; masses follow the volume (factor^3), explicit
    inertias mass x length^2 (factor^5). Geoms that take their mass from a density need nothing."""
    import mujoco

    for geom in body.geoms:
        if geom.type == mujoco.mjtGeom.mjGEOM_MESH:
            geom.meshname = _scaled_mesh(spec, geom.meshname, factor)
        _scale_shape(geom, factor)
        if math.isfinite(geom.mass):
            geom.mass = geom.mass * factor ** 3
    for site in body.sites:
        _scale_shape(site, factor)
    for joint in body.joints:
        joint.pos = joint.pos * factor
    if body.explicitinertial:
        body.ipos = body.ipos * factor
        body.mass = body.mass * factor ** 3
        body.inertia = body.inertia * factor ** 5
        if np.all(np.isfinite(body.fullinertia)):
            body.fullinertia = body.fullinertia * factor ** 5
    for child in body.bodies:
        child.pos = child.pos * factor
        _scale_subtree(spec, child, factor)


_MESH_COPIED = ("file", "content_type", "refpos", "refquat", "inertia", "smoothnormal", "maxhullvert",
                "uservert", "usernormal", "usertexcoord", "userface", "userfacenormal", "userfacetexcoord",
                "material")


def _scaled_mesh(spec, name: str, factor: float) -> str:
    """A copy of mesh `name` scaled by factor (other geoms may share the original), made once per factor."""
    scaled_name = f"{name}_scaled_{factor:g}"
    if spec.mesh(scaled_name) is not None:
        return scaled_name
    original = spec.mesh(name)
    if original is None:
        raise EditError(f"mesh {name!r} is not in the XML's assets")
    copy = spec.add_mesh()
    copy.name = scaled_name
    for attr in _MESH_COPIED:
        if hasattr(original, attr):
            setattr(copy, attr, getattr(original, attr))
    copy.scale = original.scale * factor
    return scaled_name


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
        if _servo_kind(actuator):
            raise EditError(f"actuator {actuator.name or actuator.target!r} is a {_servo_kind(actuator)} servo: gear "
                            "would change its target and its gain together; use kp, kv or forcerange")
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


def _servo_kind(actuator) -> str | None:
    """'position' (gain kp, bias -kp q - kv qdot: ctrl is the target position), 'velocity' (gain kv,
    bias -kv qdot), or None for a motor or any other actuator."""
    import mujoco

    if actuator.gaintype != mujoco.mjtGain.mjGAIN_FIXED or actuator.biastype != mujoco.mjtBias.mjBIAS_AFFINE:
        return None
    gain, bias = actuator.gainprm[0], actuator.biasprm
    if gain != 0 and bias[0] == 0 and bias[1] == -gain:
        return "position"
    if gain != 0 and bias[0] == 0 and bias[1] == 0 and bias[2] == -gain:
        return "velocity"
    return None


def _new_number(current: float, args, point, what: str, positive: bool) -> float:
    new = _number(_fill(args.value, point), "value") if args.value is not None else \
        current * _number(_fill(args.factor, point), "factor")
    if new < 0 or (positive and new == 0):
        raise EditError(f"{what} must be {'positive' if positive else 'non-negative'} (got {new:g})")
    return new


def _kp(spec, args, point) -> None:
    for actuator in _actuators(spec, args):
        if _servo_kind(actuator) != "position":
            raise EditError(f"actuator {actuator.name or actuator.target!r} is not a position servo "
                            "(gain kp with bias -kp): kp has no meaning for it")
        kp = _new_number(float(actuator.gainprm[0]), args, point, "kp", positive=True)
        gain, bias = actuator.gainprm.copy(), actuator.biasprm.copy()
        gain[0], bias[1] = kp, -kp
        actuator.gainprm, actuator.biasprm = gain, bias


def _kv(spec, args, point) -> None:
    for actuator in _actuators(spec, args):
        kind = _servo_kind(actuator)
        gain, bias = actuator.gainprm.copy(), actuator.biasprm.copy()
        if kind == "position":
            bias[2] = -_new_number(float(-bias[2]), args, point, "kv", positive=False)
        elif kind == "velocity":
            gain[0] = _new_number(float(gain[0]), args, point, "kv", positive=True)
            bias[2] = -gain[0]
        else:
            raise EditError(f"actuator {actuator.name or actuator.target!r} is neither a position nor a velocity servo")
        actuator.gainprm, actuator.biasprm = gain, bias


def _forcerange(spec, args, point) -> None:
    import mujoco

    for actuator in _actuators(spec, args):
        if args.factor is not None and not np.any(actuator.forcerange):
            raise EditError(f"actuator {actuator.name or actuator.target!r} has no force range to multiply: "
                            "give a value")
        actuator.forcerange = _new_bounds(actuator.forcerange, args, point)
        actuator.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE


def _joint_scalar(attr: str) -> Callable[[Any, Any, dict[str, Any]], None]:
    """armature / frictionloss: one non-negative number per joint."""

    def edit(spec, args, point) -> None:
        joint = _find(spec, "joint", args.joint)
        setattr(joint, attr, _new_number(float(getattr(joint, attr)), args, point, attr, positive=False))

    return edit


def _friction(spec, args, point) -> None:
    value = _fill(args.value, point)
    for geom in _geoms(spec, args):
        friction = np.array(geom.friction, dtype=float)
        if args.factor is not None:
            friction = friction * _positive(_fill(args.factor, point), "factor")
        elif isinstance(value, list):
            friction = _vector(value, 3, "value")
        else:
            friction[0] = _number(value, "value")
        if np.any(friction < 0):
            raise EditError(f"friction must not be negative (got {friction.tolist()})")
        geom.friction = friction


def _geoms(spec, args) -> list:
    """The named geom, or every colliding geom of the named body (visual-only geoms left alone)."""
    if args.geom is not None:
        return [_find(spec, "geom", args.geom)]
    body = _find(spec, "body", args.body)
    colliding = [g for g in body.geoms if g.contype or g.conaffinity]
    if not colliding:
        raise EditError(f"body {args.body!r} has no colliding geom of its own")
    return colliding


_OPS: dict[str, Callable[[Any, Any, dict[str, Any]], None]] = {
    "scale_body": _scale_body, "mass": _mass, "density": _density, "body_pos": _body_pos,
    "gear": _gear, "ctrlrange": _ctrlrange, "joint_range": _joint_range,
    "damping": _joint_coefficient("damping"), "stiffness": _joint_coefficient("stiffness"),
    "armature": _joint_scalar("armature"), "frictionloss": _joint_scalar("frictionloss"),
    "kp": _kp, "kv": _kv, "forcerange": _forcerange, "friction": _friction,
}


def targets(spec, edit: EditSpec) -> list[tuple[Any, Any]]:
    """(args, element) for every element the edit changes, its names expanded: the body of mass, the geoms
    of friction, the joint of a joint edit, the actuators of an actuator edit. Raises EditError."""
    out = []
    for args in _one_per_name(spec, edit.args):
        if edit.op == "friction":
            out += [(args, geom) for geom in _geoms(spec, args)]
        elif edit.op in _ACTUATOR_OPS:
            out += [(args, actuator) for actuator in _actuators(spec, args)]
        elif getattr(args, "body", None) is not None:
            out.append((args, _find(spec, "body", args.body)))
        else:
            out.append((args, _find(spec, "joint", args.joint)))
    return out


_ACTUATOR_OPS = frozenset({"gear", "ctrlrange", "kp", "kv", "forcerange"})
