"""XML variants: the spec's file list, glob and edited bases -> concrete models with content hashes."""

from __future__ import annotations

import glob as globlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..spec.randomspec import RandomizedEdit
from ..spec.sweepspec import SweepSpec, VariantSpec, check_safe_name
from . import draws as drawlib
from . import edits as editlib
from . import menagerie
from .modelfiles import model_sha256


@dataclass(frozen=True)
class Variant:
    name: str
    xml: Path
    """Absolute path of the XML the run loads; for a generated variant, its base until materialize()."""
    sha256: str
    """Hash of the model's content (every file it reads); part of every run id of this variant."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    loc: tuple[str | int, ...] = ()
    """Where in the spec the variant was declared, for error messages."""
    xml_text: str | None = None
    """The edited XML of a generated variant (None for a file used as is)."""
    edit_values: dict[str, Any] = field(default_factory=dict)
    """The edit_grid point (or a design search's edit values) a generated variant was made from, label: value;
    empty for a file used as is."""
    portable_text: str | None = None
    """A generated variant's edited XML with its paths relative to its base's folder, as its hash covers it."""
    randomize: tuple[RandomizedEdit, ...] = ()
    """Edits drawn afresh per episode (or per env) on this model (robots/randomize.py); empty: nominal only."""


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
        if v.base is not None:
            variants += _generated(spec, v, i)
            continue
        xml = _model_file(spec, v.xml, ("variants", i, "xml"))
        _check_draws(spec, xml, [], {}, v, ("variants", i))
        variants.append(Variant(v.name, xml, model_sha256(xml), dict(v.env_kwargs), ("variants", i),
                                randomize=tuple(v.randomize)))
    _check_unique(spec, variants)
    if spec.xml_glob:
        matches = sorted(Path(p) for p in globlib.glob(spec.xml_glob) if Path(p).is_file())
        if not matches:
            raise loc.error(("xml_glob",), f"no file matches {spec.xml_glob}")
        # The spec counted its glob as one variant: the matches are counted before any is read.
        spec.check_run_count(spec.listed_variants() + len(matches))
        taken = {v.name: v.loc for v in variants}
        for path in matches:
            name = path.stem
            if name in taken:
                raise loc.error(("xml_glob",), f"{path.name} gives variant name {name!r}, already used")
            try:
                check_safe_name(name)
            except ValueError as exc:
                raise loc.error(("xml_glob",), f"{path.name}: {exc}") from None
            variants.append(Variant(name, path.resolve(), model_sha256(path), {}, ("xml_glob",)))
            taken[name] = ("xml_glob",)
    return variants


def _generated(spec: SweepSpec, v: VariantSpec, i: int) -> list[Variant]:
    """One variant per edit_grid point: the base with the edits applied, in memory."""
    at = ("variants", i)
    base = _model_file(spec, v.base, (*at, "base"))
    out = []
    for point in editlib.grid_points(v.edit_grid):
        name = v.name + editlib.point_suffix(point)
        try:
            check_safe_name(name)
            generated = editlib.generate(base, v.edits, point)
        except editlib.EditError as exc:
            where = (*at, "edits", exc.index) if exc.index is not None else (*at, "base")
            raise spec.locator.error(where, f"variant {name!r}: {exc}") from None
        except ValueError as exc:
            raise spec.locator.error((*at, "edit_grid"), f"variant {name!r}: {exc}") from None
        _check_draws(spec, base, v.edits, point, v, at)
        out.append(Variant(name, base, generated.sha256, dict(v.env_kwargs), at, generated.text,
                           edit_values=dict(point), portable_text=generated.portable, randomize=tuple(v.randomize)))
    return out


def _check_draws(spec: SweepSpec, xml: Path, edits: list, point: dict[str, Any], v: VariantSpec,
                 at: tuple[str | int, ...]) -> None:
    """The randomized edits apply and compile at both ends of their distributions (every slot at its
    smallest value, then at its largest), so that a run's draws fail on nothing the spec could show."""
    if not v.randomize:
        return
    slots = drawlib.slots(list(v.randomize))
    template = drawlib.template(list(v.randomize))
    for values in drawlib.extremes(slots):
        try:
            editlib.edited_spec(xml, [*edits, *template], {**point, **values}).compile()
        except editlib.EditError as exc:
            if exc.index is None or exc.index < len(edits):
                raise spec.locator.error((*at, "edits" if exc.index is not None else "base"), str(exc)) from None
            raise spec.locator.error((*at, "randomize", exc.index - len(edits)), str(exc)) from None
        except ValueError as exc:
            raise spec.locator.error((*at, "randomize"), "the model does not compile at the distributions' "
                                                         f"ends: {' '.join(str(exc).split())}") from None


def _model_file(spec: SweepSpec, written: Path | None, at: tuple[str | int, ...]) -> Path:
    """The XML file a variant names: a path, or a Menagerie robot by name (menagerie:NAME[/ENTRY])."""
    assert written is not None, "the spec requires xml or base"
    if menagerie.is_reference(written):
        try:
            return menagerie.resolve(str(written))
        except menagerie.MenagerieLookupError as exc:
            raise spec.locator.error(at, str(exc)) from None
    if not written.is_file():
        raise spec.locator.error(at, f"XML file not found: {written}")
    return written


def _check_unique(spec: SweepSpec, variants: list[Variant]) -> None:
    seen: set[str] = set()
    for v in variants:
        if v.name in seen:
            raise spec.locator.error(v.loc, f"two variants are named {v.name!r}")
        seen.add(v.name)


def materialize(variant: Variant, folder: Path) -> Variant:
    """A generated variant written to folder/<name>.xml (a file used as is comes back unchanged)."""
    if variant.xml_text is None:
        return variant
    path = folder / f"{variant.name}.xml"
    path.write_text(variant.xml_text, encoding="utf-8")
    return replace(variant, xml=path)


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


def design_metrics(model) -> dict[str, float]:
    """What a search can trade against the return: total mass, actuator count, and total gear (the sum of
    |gear[0]| over actuators: the joint torque the actuators can reach per unit of control)."""
    stats = model_stats(model)
    return {"mass": stats.total_mass, "actuators": float(stats.actuators),
            "total_gear": float(abs(model.actuator_gear[:, 0]).sum())}
