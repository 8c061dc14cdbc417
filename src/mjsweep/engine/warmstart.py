"""A spec's `warm_start:` found on disk and judged before launch: the source run, and whether every run of
the sweep can start from it (the same algorithm and policy, normalization both or neither, and equal
observation and action spaces: the env probe's against those the source's model.zip saved).

Every refusal is a SpecError naming the spec key (exit 2, nothing written).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..results.rows import collect
from ..robots.envs import EnvProbe
from ..spec.algos import ALGOS
from ..spec.sweepspec import SweepSpec
from ..spec.warmstartspec import WarmStartSpec
from ..sweepdir.files import CorruptFileError, RunDir, read_model
from ..sweepdir.models import RunSpec, WarmSource, succeeded

KEY = ("warm_start",)


def resolve(spec: SweepSpec) -> WarmSource | None:
    """The run the spec's runs (a grid's, or every trial's of a search) start from; None without warm_start,
    or for `nearest` (the search picks)."""
    warm = spec.warm_start
    if warm is None:
        return None
    if warm.nearest:
        return None  # a design search's (spec/crosschecks.py): each trial's source is picked as it is asked
    run = RunDir(_source_folder(spec, warm))
    source = _finished_spec(spec, run)
    result = run.read_result()
    if warm.replay_buffer:
        _check_replay_buffer(spec, run, source)
    return WarmSource(run_dir=str(run.path), run_id=source.run_id, timesteps=result.timesteps if result else None,
                      eval_mean_return=result.eval_mean_return if result else None,
                      replay_buffer=warm.replay_buffer)


def _source_folder(spec: SweepSpec, warm: WarmStartSpec) -> Path:
    base = spec.locator.path.parent
    if warm.source is not None:
        folder = base / warm.sweep / warm.source if warm.sweep is not None else base / warm.source
        if not folder.is_dir():
            raise _refuse(spec, f"no run folder {folder}")
        return folder.resolve()
    assert warm.sweep is not None and warm.variant is not None, "the spec checked the source's keys"
    sweep = (base / warm.sweep).resolve()
    if not sweep.is_dir():
        raise _refuse(spec, f"no sweep folder {sweep}")
    rows = [r for r in collect(sweep) if r.variant == warm.variant and r.final_return is not None]
    if not rows:
        raise _refuse(spec, f"sweep {sweep} has no succeeded run of variant {warm.variant!r}")
    best = max(rows, key=lambda r: (r.final_return or 0.0, r.run_id))
    return sweep / best.run_id


def _finished_spec(spec: SweepSpec, run: RunDir) -> RunSpec:
    """The source's spec.json, once it is known to have succeeded and to hold its model."""
    try:
        source = read_model(run.spec_json, RunSpec)
        done = succeeded(run.read_status(), run.read_result())
    except CorruptFileError as exc:
        raise _refuse(spec, f"the source run {run.path} cannot be read: {exc}") from None
    if source is None or not done:
        raise _refuse(spec, f"the source run {run.path} has not succeeded: a warm start needs a finished run")
    if not run.model_zip.is_file():
        raise _refuse(spec, f"the source run {run.path} has no model.zip")
    return source


def _check_replay_buffer(spec: SweepSpec, run: RunDir, source: RunSpec) -> None:
    if not ALGOS[source.algo].off_policy:
        raise _refuse(spec, f"replay_buffer: the source run trained {source.algo}, which keeps no replay buffer")
    try:
        checkpoint = run.read_checkpoint()
    except CorruptFileError as exc:
        raise _refuse(spec, f"replay_buffer: the source's checkpoint.json cannot be read: {exc}") from None
    name = checkpoint.replay_buffer_file if checkpoint else None
    if name is None or not (run.checkpoints / name).is_file():
        raise _refuse(spec, f"replay_buffer: the source run {run.path} kept no replay buffer")


def source_folder(run: RunSpec | None) -> Path | None:
    """The folder a run's warm start loads from; None for a run that starts cold (or whose spec is unread)."""
    return Path(run.warm_start.run_dir) if run is not None and run.warm_start is not None else None


def check_runs(spec: SweepSpec, source: WarmSource, runs: list[RunSpec], probes: dict[str, EnvProbe]) -> None:
    """Refuses the sweep unless every run can load the source: the same algorithm and policy, normalized
    both or neither, and the same spaces as its variant's env probe (`probes`: by variant name)."""
    run_dir = RunDir(Path(source.run_dir))
    theirs = read_model(run_dir.spec_json, RunSpec)
    assert theirs is not None, "resolve() read it"
    obs, act = saved_shapes(run_dir.model_zip)
    for run in runs:
        where = f"the source run {source.run_id}"
        if (problem := mismatch(theirs, run)) is not None:
            raise _refuse(spec, f"{where} {problem}")
        probe = probes.get(run.variant)
        if probe is None or not probe.obs_shape:
            continue  # not probed (validate without envs): the worker's load refuses a mismatch
        for what, saved, probed in (("observation", obs, probe.obs_shape), ("action", act, probe.act_shape)):
            if saved is not None and tuple(saved) != tuple(probed):
                raise _refuse(spec, f"the {what} spaces differ: {where} has shape {tuple(saved)}, variant "
                                    f"{run.variant!r} has shape {tuple(probed)}")


def mismatch(source: RunSpec, run: RunSpec) -> str | None:
    """Why `run` cannot load `source`'s model and statistics (said of the source), or None if it can."""
    if (run.algo, run.policy) != (source.algo, source.policy):
        return f"trained {source.algo} with {source.policy}, run {run.run_id} trains {run.algo} with {run.policy}"
    if _net(run) != _net(source):
        return f"has policy_kwargs {_net(source)}, run {run.run_id} has {_net(run)}: the weights would not fit"
    if (run.normalize is None) != (source.normalize is None):
        said = "normalizes" if source.normalize is not None else "does not normalize"
        return f"{said} its observations and run {run.run_id} {'does not' if run.normalize is None else 'does'}"
    return None


def saved_shapes(model_zip: Path) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """The observation and action shapes a model.zip saved, from the JSON SB3 writes beside the pickled
    spaces (no torch needed); None for one it does not say."""
    try:
        with zipfile.ZipFile(model_zip) as archive:
            data = json.loads(archive.read("data"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None, None
    return _shape(data.get("observation_space")), _shape(data.get("action_space"))


def _shape(space: Any) -> tuple[int, ...] | None:
    shape = space.get("_shape") if isinstance(space, dict) else None
    return tuple(int(n) for n in shape) if isinstance(shape, list) else None


def _net(run: RunSpec) -> Any:
    return run.hyperparams.get("policy_kwargs")


def _refuse(spec: SweepSpec, message: str) -> SpecError:
    return spec.locator.error(KEY, message)
