"""XML variants: the spec's file list and glob -> concrete, compiled models with content hashes."""

from __future__ import annotations

import glob as globlib
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .spec import SweepSpec, check_safe_name


@dataclass(frozen=True)
class Variant:
    name: str
    xml: Path
    """Absolute path of the XML the run loads."""
    sha256: str
    """Hash of the model's content; part of every run id of this variant."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    loc: tuple[str | int, ...] = ()
    """Where in the spec the variant was declared, for error messages."""


@dataclass(frozen=True)
class ModelStats:
    bodies: int
    joints: int
    actuators: int
    total_mass: float


def resolve(spec: SweepSpec) -> list[Variant]:
    """Explicit variants, then one per xml_glob match; every XML must exist. Raises SpecError."""
    loc = spec.locator
    variants: list[Variant] = []
    for i, v in enumerate(spec.variants):
        if not v.xml.is_file():
            raise loc.error(("variants", i, "xml"), f"XML file not found: {v.xml}")
        variants.append(Variant(v.name, v.xml, file_sha256(v.xml), dict(v.env_kwargs), ("variants", i)))
    if spec.xml_glob:
        matches = sorted(Path(p) for p in globlib.glob(spec.xml_glob) if Path(p).is_file())
        if not matches:
            raise loc.error(("xml_glob",), f"no file matches {spec.xml_glob}")
        taken = {v.name: v.loc for v in variants}
        for path in matches:
            name = path.stem
            if name in taken:
                raise loc.error(("xml_glob",), f"{path.name} gives variant name {name!r}, already used")
            try:
                check_safe_name(name)
            except ValueError as exc:
                raise loc.error(("xml_glob",), f"{path.name}: {exc}") from None
            variants.append(Variant(name, path.resolve(), file_sha256(path), {}, ("xml_glob",)))
            taken[name] = ("xml_glob",)
    return variants


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compile_model(xml: Path):
    """The compiled mujoco.MjModel; ValueError with MuJoCo's message on one line if it does not compile."""
    import mujoco

    try:
        return mujoco.MjModel.from_xml_path(str(xml))
    except ValueError as exc:
        raise ValueError(" ".join(str(exc).split())) from None


def model_stats(model) -> ModelStats:
    import mujoco

    return ModelStats(bodies=model.nbody - 1, joints=model.njnt, actuators=model.nu,
                      total_mass=float(mujoco.mj_getTotalmass(model)))


def check_compiles(spec: SweepSpec, variants: list[Variant]) -> dict[str, ModelStats]:
    """Compile every variant's XML; the first failure is a SpecError naming the variant."""
    stats = {}
    for v in variants:
        try:
            stats[v.name] = model_stats(compile_model(v.xml))
        except ValueError as exc:
            raise spec.locator.error(v.loc, f"variant {v.name!r}: MuJoCo cannot compile {v.xml}: {exc}") from None
    return stats

