"""From a search spec and its checked plan to studies, and from a trial's parameters to ordinary runs.

A study is one variant family x one grid point. A family is a variant as the grid sweep has it, except that
a variant whose edit_grid labels are searched is one family per point of its other labels: the searched
labels' values come from each trial, and make a new variant compiled and probed like any other.
"""

from __future__ import annotations

import itertools
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..naming import format_value
from ..plan.runs import make_run
from ..robots import edits as editlib
from ..robots import variants as variantlib
from ..robots.envs import EnvBuildError, probe_env
from ..spec.searchspace import Dimension
from ..spec.sweepspec import SweepSpec
from ..sweepdir.files import SweepDir, read_or_none
from ..sweepdir.models import RunSpec, WarmSource, succeeded

EDIT_PREFIX = "edits."


class TrialBuildError(Exception):
    """The trial's robot does not build (an edit refuses the value, MuJoCo cannot compile it, the env's probe
    fails): the trial fails, the search goes on."""


@dataclass(frozen=True)
class Study:
    key: str
    index: int
    grid: dict[str, Any]
    dims: dict[str, Dimension]
    variant: variantlib.Variant
    """The family's variant as checked; for searched labels, the variant of their first edit_grid point."""
    spec_index: int | None = None
    """The spec's variants[i] whose edit_grid labels are searched; None when no label is."""
    fixed: dict[str, Any] = field(default_factory=dict)
    """The other labels' values, for a family with searched labels."""


def studies(spec: SweepSpec, variants: list[variantlib.Variant]) -> list[Study]:
    """Every study, in a stable order: variant family, then grid point."""
    assert spec.search is not None
    space = spec.search.space
    searched = {key[len(EDIT_PREFIX):] for key in space if key.startswith(EDIT_PREFIX)}
    families: list[tuple[str, variantlib.Variant, int | None, dict[str, Any]]] = []
    seen: set[str] = set()
    for variant in variants:
        index = int(variant.loc[1]) if variant.loc[:1] == ("variants",) else None
        labels = spec.variants[index].edit_grid if index is not None else {}
        if index is None or not searched & labels.keys():
            families.append((variant.name, variant, None, {}))
            continue
        name_point = _point_of(variant.name, spec.variants[index].name, labels)
        fixed = {label: value for label, value in name_point.items() if label not in searched}
        name = spec.variants[index].name + editlib.point_suffix(fixed)
        if name not in seen:
            seen.add(name)
            families.append((name, variant, index, fixed))
    axes = list(spec.grid.items())
    points = [dict(zip([k for k, _ in axes], combo, strict=True)) for combo in itertools.product(*[v for _, v in axes])]
    out: list[Study] = []
    for name, variant, index, fixed in families:
        own = set(spec.variants[index].edit_grid) if index is not None else set()
        dims = {k: d for k, d in space.items() if not k.startswith(EDIT_PREFIX) or k[len(EDIT_PREFIX):] in own}
        for point in points:
            key = " ".join([name, *(f"{k}={format_value(v)}" for k, v in point.items())])
            out.append(Study(key, len(out), point, dims, variant, index, fixed))
    return out


def _point_of(variant_name: str, family: str, labels: dict[str, list[Any]]) -> dict[str, Any]:
    """The edit_grid point a generated variant was made from, found among its label combinations."""
    for point in editlib.grid_points(labels):
        if family + editlib.point_suffix(point) == variant_name:
            return point
    raise ValueError(f"variant {variant_name!r} is not a point of its edit_grid")


def trial_runs(spec: SweepSpec, study: Study, number: int, params: dict[str, Any],
               seeds: list[int] | None = None, prefix: str = "t",
               variant: variantlib.Variant | None = None,
               warm: dict[int, WarmSource] | None = None) -> tuple[variantlib.Variant, list[RunSpec]]:
    """The variant and the runs (one per seed: the search's seeds, or `seeds`) of trial `number` with `params`,
    their ids led by `prefix` and the number; each seed started from `warm`'s source for it when given.
    `variant`: the trial's, built
    already (trial_variant). Raises TrialBuildError when its robot does not build."""
    assert spec.search is not None
    variant = variant or trial_variant(spec, study, params)
    point = {**study.grid, **{k: v for k, v in params.items() if not k.startswith(EDIT_PREFIX)}}
    runs = []
    for seed in seeds if seeds is not None else range(spec.search.seeds_per_trial):
        run = make_run(spec, variant, point, seed, (warm or {}).get(seed))
        runs.append(run.model_copy(update={"run_id": f"{prefix}{number:03d}_{run.run_id}"}))
    return variant, runs


def run_succeeded(sweep_dir: SweepDir, run_id: str) -> bool:
    """Whether a trial's (or a confirmation's) run succeeded; a corrupt file counts as not yet."""
    run_dir = sweep_dir.run(run_id)
    return succeeded(read_or_none(run_dir.read_status), read_or_none(run_dir.read_result))


def trial_variant(spec: SweepSpec, study: Study, params: dict[str, Any]) -> variantlib.Variant:
    """The trial's robot: the study's variant, or one generated with the searched edit values, compiled and
    probed."""
    if study.spec_index is None:
        return study.variant
    written = spec.variants[study.spec_index]
    values = {key[len(EDIT_PREFIX):]: v for key, v in params.items() if key.startswith(EDIT_PREFIX)}
    point = {label: values.get(label, study.fixed.get(label)) for label in written.edit_grid}
    name = written.name + editlib.point_suffix(point)
    try:
        generated = editlib.generate(study.variant.xml, written.edits, point)
    except (editlib.EditError, ValueError) as exc:
        raise TrialBuildError(f"the edits do not apply: {exc}") from None
    variant = variantlib.Variant(name, study.variant.xml, generated.sha256, dict(written.env_kwargs),
                                 study.variant.loc, generated.text, edit_values=dict(point),
                                 portable_text=generated.portable)
    _check(spec, variant, params)
    return variant


def _check(spec: SweepSpec, variant: variantlib.Variant, params: dict[str, Any]) -> None:
    """Compile the new robot and probe its env, as deep validation does for every variant of a grid."""
    env_kwargs = {**spec.env_kwargs, **variant.env_kwargs,
                  **{k[len("env_kwargs."):]: v for k, v in params.items() if k.startswith("env_kwargs.")}}
    with tempfile.TemporaryDirectory(prefix="mjsweep-trial-") as tmp:
        local = variantlib.materialize(variant, Path(tmp))
        try:
            variantlib.compile_model(local.xml)
            probe_env(spec.env, local.xml, env_kwargs, spec.max_episode_steps, warn_only=frozenset(spec.warn_only))
        except (ValueError, EnvBuildError) as exc:
            raise TrialBuildError(f"variant {variant.name!r}: {exc}") from None

