"""Building the environment of a run from an XML: Gymnasium ids that take xml_file, or module:Class."""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class EnvBuildError(Exception):
    """The env cannot be built from this XML and these keyword arguments."""


@dataclass(frozen=True)
class EnvProbe:
    obs_shape: tuple[int, ...]
    act_shape: tuple[int, ...]


def make_env(env: str, xml: Path, env_kwargs: dict[str, Any], max_episode_steps: int | None = None):
    """A gymnasium.Env for one run. `env` is a registered id or 'package.module:Class'."""
    import gymnasium as gym

    kwargs = {"xml_file": str(xml), **env_kwargs}
    if ":" in env:
        cls = _import_class(env)
        instance = cls(**kwargs)
        if max_episode_steps is not None:
            instance = gym.wrappers.TimeLimit(instance, max_episode_steps=max_episode_steps)
        return instance
    return gym.make(env, max_episode_steps=max_episode_steps, **kwargs)


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
              steps: int = 5) -> EnvProbe:
    """Build the env, reset it and take a few random steps. EnvBuildError says why it cannot."""
    try:
        instance = make_env(env, xml, env_kwargs, max_episode_steps)
    except EnvBuildError:
        raise
    except Exception as exc:  # noqa: BLE001 - any constructor error is the user's to see
        raise EnvBuildError(_one_line(exc)) from None
    try:
        obs, _ = instance.reset(seed=0)
        instance.action_space.seed(0)
        for _ in range(steps):
            obs, reward, terminated, truncated, _ = instance.step(instance.action_space.sample())
            if not math.isfinite(float(reward)):
                raise EnvBuildError(f"reward is not finite ({reward}) after a random step")
            if terminated or truncated:
                obs, _ = instance.reset()
        return EnvProbe(tuple(instance.observation_space.shape or ()), tuple(instance.action_space.shape or ()))
    except EnvBuildError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise EnvBuildError(_one_line(exc)) from None
    finally:
        instance.close()


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
