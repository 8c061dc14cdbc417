"""`warm_start: nearest` in a design search: each new trial starts from the complete trial of its study nearest
in the searched edit values, while a share of the trials stays cold so that the report can compare the two.

Which trials stay cold is a rule of the trial number alone (exactly `cold_share` of every prefix, rounded
down), so a resumed search makes the same choice; the source a warm trial took is on record in trials.jsonl
(`warm_from`) and a resume rebuilds its runs from it, whatever finished since.
"""

from __future__ import annotations

import math
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

from ..engine.warmstart import mismatch, saved_shapes
from ..robots import variants as variantlib
from ..robots.envs import make_env
from ..spec.searchspace import Dimension
from ..spec.sweepspec import SweepSpec
from ..sweepdir.files import RunDir, SweepDir, read_model, read_or_none
from ..sweepdir.models import RunSpec, TrialRecord, TrialState, WarmSource
from .studies import EDIT_PREFIX, run_succeeded


def starts_cold(number: int, share: float) -> bool:
    """Trial `number` is one of the cold ones: floor((n + 1) * share) passes an integer at it (0.25: trials 3,
    7, 11, ...; 0.5: 1, 3, 5, ...; 1: every one)."""
    return math.floor((number + 1) * share) > math.floor(number * share)


def position(dim: Dimension, value: Any) -> float:
    """A value's place in its dimension, from 0 to 1 (on the log scale for log_uniform; a choice's index)."""
    if dim.choice is not None:
        return dim.choice.index(value) / max(len(dim.choice) - 1, 1) if value in dim.choice else 0.0
    low, high = dim.bounds
    if dim.log_uniform is not None:
        return (math.log(value) - math.log(low)) / (math.log(high) - math.log(low))
    return (value - low) / (high - low)


def distance(a: dict[str, Any], b: dict[str, Any], dims: dict[str, Dimension]) -> float:
    """Euclidean distance between two trials' searched edits, each normalized to [0, 1]."""
    edits = [key for key in dims if key.startswith(EDIT_PREFIX) and key in a and key in b]
    return math.sqrt(sum((position(dims[k], a[k]) - position(dims[k], b[k])) ** 2 for k in edits))


def nearest(params: dict[str, Any], done: list[TrialRecord], dims: dict[str, Dimension]) -> TrialRecord | None:
    """The complete trial nearest to `params` (the lowest number among equals); None without one."""
    complete = [r for r in done if r.state is TrialState.COMPLETE]
    return min(complete, key=lambda r: (distance(params, r.params, dims), r.number)) if complete else None


def sources(sweep_dir: SweepDir, source: TrialRecord, seeds: int) -> dict[int, WarmSource] | None:
    """For each seed, the source trial's succeeded run of that seed, else its first succeeded one; None when
    none of its runs succeeded (its files gone since)."""
    runs = [_warm_source(sweep_dir, run_id) for run_id in source.runs
            if run_succeeded(sweep_dir, run_id)]
    found = [run for run in runs if run is not None]
    if not found:
        return None
    by_seed = dict(found)
    return {seed: by_seed.get(seed, found[0][1]) for seed in range(seeds)}


def _warm_source(sweep_dir: SweepDir, run_id: str) -> tuple[int, WarmSource] | None:
    run = sweep_dir.run(run_id)
    spec, result = read_or_none(partial(read_model, run.spec_json, RunSpec)), read_or_none(run.read_result)
    if spec is None or result is None:
        return None
    return spec.seed, WarmSource(run_dir=str(run.path), run_id=run_id, timesteps=result.timesteps,
                                 eval_mean_return=result.eval_mean_return, nearest=True)


def misfit(spec: SweepSpec, variant: variantlib.Variant, run: RunSpec, source: WarmSource) -> str | None:
    """Why the trial's run cannot load the source, or None if it can: the same algorithm, policy and
    normalization (a space may search those too), and the spaces its model.zip saved (an edit may add a
    joint)."""
    source_dir, problems = RunDir(Path(source.run_dir)), list[str]()
    theirs = read_or_none(partial(read_model, source_dir.spec_json, RunSpec), problems)
    if problems:
        return problems[0]
    if theirs is None:
        return "its spec.json is gone"
    if (problem := mismatch(theirs, run)) is not None:
        return problem
    saved = saved_shapes(source_dir.model_zip)
    with tempfile.TemporaryDirectory(prefix="mjsweep-warm-") as tmp:
        env = make_env(spec.env, variantlib.materialize(variant, Path(tmp)).xml, run.env_kwargs,
                       spec.max_episode_steps)
        try:
            shapes = (env.observation_space.shape, env.action_space.shape)
        finally:
            env.close()
    for what, mine, theirs_shape in zip(("observation", "action"), shapes, saved, strict=True):
        if theirs_shape is not None and tuple(theirs_shape) != tuple(mine or ()):
            return f"its {what} space has shape {tuple(theirs_shape)}, this design's {tuple(mine or ())}"
    return None
