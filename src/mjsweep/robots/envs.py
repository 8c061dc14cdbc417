"""Building the environment of a run from an XML: Gymnasium ids that take xml_file (mjsweep's own
generic mjsweep/Locomotion-v0 among them), or module:Class; and probing it with random actions."""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..spec.randomspec import RandomizedEdit


class EnvBuildError(Exception):
    """The env cannot be built from this XML and these keyword arguments."""


DEGENERATE_CHECKS = ("short_episodes", "unhealthy_start", "penetration", "constant_obs")
"""Checks of the probe that a spec's `warn_only` may turn into warnings; every other failure is an error."""
FEW_STEPS = 5
"""Episodes that all end within this many env steps from reset leave nothing to learn."""


@dataclass(frozen=True)
class EnvProbe:
    obs_shape: tuple[int, ...]
    act_shape: tuple[int, ...]
    start: str | None = None
    """Where episodes start, when the env says (mjsweep/Locomotion-v0: a keyframe, or qpos0)."""
    keyframe: str | None = None
    """The keyframe episodes start from, if any."""
    warnings: tuple[str, ...] = ()
    """Degenerate-env findings the spec chose to only warn about (warn_only)."""
    notes: tuple[str, ...] = ()
    """Other things worth knowing, from the env's probe_notes() (a height check that is off)."""
    obs_itemsize: int = 8
    """Bytes per observation element (MuJoCo's envs observe float64): a replay buffer stores them as they are."""
    physics_bytes: int | None = None
    """Bytes of one env's physics state in an exact state file (robots/physics_state.py); None: not probed, or
    not a MuJoCo env."""
    episode_steps: float | None = None
    """The probe's steps per episode (the unfinished one counted as one): random actions end episodes
    sooner than a learning policy does, so this errs towards more monitor.csv rows. None: not probed."""


def make_env(env: str, xml: Path, env_kwargs: dict[str, Any], max_episode_steps: int | None = None):
    """A gymnasium.Env for one run. `env` is a registered id or 'package.module:Class'."""
    import gymnasium as gym

    # Absolute: Gymnasium reads a relative xml_file as a file in its own assets folder.
    kwargs = {"xml_file": str(Path(xml).resolve()), **env_kwargs}
    _register_own(env)
    if ":" in env:
        cls = _import_class(env)
        instance = cls(**kwargs)
        if max_episode_steps is not None:
            instance = gym.wrappers.TimeLimit(instance, max_episode_steps=max_episode_steps)
        return instance
    return gym.make(env, max_episode_steps=max_episode_steps, **kwargs)


def env_source_sha256(env: str) -> str | None:
    """The sha256 of the file that defines a custom env ('package.module:Class'), so that runs trained with
    different code of it can be told apart; None for a registered id, or a class without a source file."""
    if ":" not in env:
        return None
    import hashlib
    import inspect

    try:
        source = inspect.getsourcefile(_import_class(env))
        return hashlib.sha256(Path(source).read_bytes()).hexdigest() if source else None
    except (EnvBuildError, TypeError, OSError):
        return None


def accepted_kwargs(env: str) -> set[str] | None:
    """The keyword arguments the env's constructor accepts (besides xml_file), following **kwargs up
    the class hierarchy; None when they end in a catch-all nobody checks, or the class is unknown."""
    import inspect

    try:
        cls = _env_class(env)
    except Exception:  # noqa: BLE001 - an unknown id or class: the env probe reports it in its own words
        return None
    if not isinstance(cls, type):
        return None
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        if klass is object:
            return None
        params = inspect.signature(init).parameters.values()
        names |= {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} - {"self"}
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            return names
    return None


def _env_class(env: str):
    if ":" in env:
        return _import_class(env)
    import gymnasium as gym

    _register_own(env)
    entry = gym.spec(env).entry_point
    return _import_class(entry) if isinstance(entry, str) else entry


def _register_own(env: str) -> None:
    """mjsweep's own ids (mjsweep/Locomotion-v0) join Gymnasium's registry only when one is asked for."""
    if env.startswith("mjsweep/"):
        from .locomotion import register

        register()


def _import_class(target: str):
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise EnvBuildError(f"cannot import {module_name!r}: {exc}") from None
    cls = getattr(module, attr, None)
    if cls is None:
        raise EnvBuildError(f"module {module_name!r} has no attribute {attr!r}")
    return cls


def probe_env(env: str, xml: Path, env_kwargs: dict[str, Any], max_episode_steps: int | None = None,
              steps: int = 300, warn_only: frozenset[str] | set[str] = frozenset(),
              randomize: list[RandomizedEdit] | None = None) -> EnvProbe:
    """Build the env, check its spaces and take random steps, watching for non-finite values and
    MuJoCo's instability warnings; then look for a degenerate env (DEGENERATE_CHECKS): episodes that end
    within a few steps, a start state outside the healthy range or inside the floor, an observation
    that never changes. EnvBuildError says what went wrong, and at which step; the degenerate checks
    named in `warn_only` come back as the probe's warnings instead. With `randomize`, every episode of the
    probe draws its edits as a training env's do."""
    with _mujoco_warnings_silenced():
        return _probe(env, xml, env_kwargs, max_episode_steps, steps, frozenset(warn_only), randomize or [])


@contextmanager
def _mujoco_warnings_silenced() -> Iterator[None]:
    """MuJoCo prints each warning and appends it to MUJOCO_LOG.TXT in the working directory; a probe
    reads the counters in data.warning instead and reports them in its own words."""
    import mujoco

    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(lambda message: None)
    try:
        yield
    finally:
        mujoco.set_mju_user_warning(previous)


def _probe(env: str, xml: Path, env_kwargs: dict[str, Any], max_episode_steps: int | None,
           steps: int, warn_only: frozenset[str], randomize: list[RandomizedEdit]) -> EnvProbe:
    try:
        instance = make_env(env, xml, env_kwargs, max_episode_steps)
        if randomize:
            from .randomized_env import RandomizedEnv  # gymnasium and MuJoCo, for randomized variants only

            instance = RandomizedEnv(instance, xml, randomize, seed=0, env_index=0)
    except EnvBuildError:
        raise
    except Exception as exc:  # noqa: BLE001 - any constructor error is the user's to see
        raise EnvBuildError(_one_line(exc)) from None
    try:
        _check_spaces(instance)
        obs, _ = instance.reset(seed=0)
        _check_observation(instance, obs, "after reset")
        instance.action_space.seed(0)
        observed, lengths, length = [], [], 0
        begun = 1  # episodes the random steps took part in
        for step in range(1, steps + 1):
            obs, reward, terminated, truncated, _ = instance.step(instance.action_space.sample())
            where = f"at random step {step}"
            _check_observation(instance, obs, where)
            if not math.isfinite(float(reward)):
                raise EnvBuildError(f"reward is not finite ({reward}) {where}")
            _check_warnings(instance, where)
            observed.append(np.asarray(obs, dtype=float))
            length += 1
            if terminated:
                lengths.append(length)
            if terminated or truncated:
                obs, _ = instance.reset()
                length = 0
                begun += step < steps
        findings = _degenerate(instance, lengths, length, observed)
        return replace(_verdict(instance, findings, warn_only), episode_steps=steps / begun)
    except EnvBuildError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise EnvBuildError(_one_line(exc)) from None
    finally:
        instance.close()


def _degenerate(instance, lengths: list[int], unfinished: int, observed: list[np.ndarray]
                ) -> list[tuple[str, str]]:
    """(check, message) for each way the env leaves nothing to learn."""
    start_problems = getattr(instance.unwrapped, "start_problems", None)
    findings = list(start_problems()) if callable(start_problems) else []
    if lengths and max(lengths + [unfinished]) <= FEW_STEPS:
        findings.append(("short_episodes", f"under random actions every episode ended within {max(lengths)} steps "
                         f"({len(lengths)} episodes): check the start pose and the healthy range"))
    else:
        ended = _zero_action_episode_end(instance)
        if ended is not None:
            findings.append(("short_episodes", f"under zero actions the episode ended after {ended} steps: "
                             "check the start pose (a standing keyframe?) and the healthy range"))
    if len(observed) > 1 and np.all(np.ptp(np.stack(observed), axis=0) == 0):
        findings.append(("constant_obs", f"the observation never changed over {len(observed)} random steps: "
                         "are the joints free to move and the actuators connected?"))
    return findings


def _zero_action_episode_end(instance) -> int | None:
    """The step at which an episode under zero actions (clipped into the bounds) ends, if within FEW_STEPS."""
    space = instance.action_space
    action = np.clip(np.zeros(space.shape, dtype=space.dtype), space.low, space.high)
    instance.reset(seed=1)
    for step in range(1, FEW_STEPS + 1):
        _, _, terminated, truncated, _ = instance.step(action)
        if terminated:
            return step
        if truncated:
            return None
    return None


def _verdict(instance, findings: list[tuple[str, str]], warn_only: frozenset[str]) -> EnvProbe:
    """Raise for the findings not in warn_only; the rest become the probe's warnings."""
    errors = [f"{message} [check {check}]" for check, message in findings if check not in warn_only]
    if errors:
        checks = sorted({check for check, _ in findings if check not in warn_only})
        raise EnvBuildError(f"degenerate env: {'; '.join(errors)} (if this is intended: "
                            f"warn_only: [{', '.join(checks)}])")
    start_note = getattr(instance.unwrapped, "start_note", None)
    return EnvProbe(tuple(instance.observation_space.shape or ()), tuple(instance.action_space.shape or ()),
                    start=start_note() if callable(start_note) else None,
                    keyframe=_keyframe_of(instance.unwrapped),
                    notes=tuple(_probe_notes(instance.unwrapped)),
                    obs_itemsize=np.dtype(instance.observation_space.dtype or np.float64).itemsize,
                    physics_bytes=_physics_bytes(instance.unwrapped),
                    warnings=tuple(f"{message} [check {check}]" for check, message in findings))


def _physics_bytes(env) -> int | None:
    """What an exact state stores of the env's physics: measured on its compiled model."""
    import mujoco

    from .physics_state import PhysicsState

    data, model = getattr(env, "data", None), getattr(env, "model", None)
    return PhysicsState(model).stored_bytes if isinstance(data, mujoco.MjData) else None


def _probe_notes(env) -> list[str]:
    notes = getattr(env, "probe_notes", None)
    return list(notes()) if callable(notes) else []


def _keyframe_of(env) -> str | None:
    keyframe = getattr(env, "keyframe", None)
    return keyframe if isinstance(keyframe, str) else None


def _check_spaces(instance) -> None:
    """PPO's MlpPolicy needs a flat Box observation and a flat Box action with finite bounds."""
    from gymnasium import spaces

    obs_space, act_space = instance.observation_space, instance.action_space
    if not isinstance(obs_space, spaces.Box) or len(obs_space.shape) != 1:
        raise EnvBuildError(f"the observation space must be a flat Box (got {obs_space})")
    if not isinstance(act_space, spaces.Box) or len(act_space.shape) != 1 or act_space.shape[0] == 0:
        raise EnvBuildError(f"the action space must be a non-empty flat Box (got {act_space}): "
                            "does the XML have actuators?")
    if not (np.all(np.isfinite(act_space.low)) and np.all(np.isfinite(act_space.high))):
        raise EnvBuildError("the action space has infinite bounds: give the actuators a ctrlrange")


def _check_observation(instance, obs, where: str) -> None:
    obs = np.asarray(obs)
    if obs.shape != instance.observation_space.shape:
        raise EnvBuildError(f"observation shape {obs.shape} {where} does not match the observation space "
                            f"{instance.observation_space.shape}")
    if not np.all(np.isfinite(obs)):
        raise EnvBuildError(f"the observation is not finite {where}")


def _check_warnings(instance, where: str) -> None:
    """MuJoCo counts instabilities in data.warning (and resets the state on a bad acceleration)."""
    import mujoco

    data = getattr(instance.unwrapped, "data", None)
    if not isinstance(data, mujoco.MjData):
        return
    raised = [mujoco.mjtWarning(i).name.removeprefix("mjWARN_") for i in range(mujoco.mjtWarning.mjNWARNING)
              if data.warning[i].number > 0]
    if raised:
        raise EnvBuildError(f"unstable: MuJoCo warned {', '.join(raised)} {where}")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
