"""The run's training env: n_envs copies of the variant, SB3's VecCheckNan naming the first non-finite value,
one monitor.csv in SB3's format, and VecNormalize when the spec normalizes (its statistics restored from the
checkpoint on resume)."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from stable_baselines3.common.monitor import ResultsWriter
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecCheckNan, VecEnv, VecMonitor, VecNormalize
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

from ..plan.runs import RunSpec
from ..robots.envs import make_env
from ..robots.randomized_env import RandomizedEnv, next_episodes
from ..spec.randomspec import RandomizedEdit
from ..sweepdir.csvfiles import read_monitor_episodes
from ..sweepdir.files import RunDir
from ..sweepdir.models import CheckpointRecord
from .exact import exact_env
from .monitor import EnvReturnMonitor, with_episode_return
from .nonfinite import NonFiniteError, env_value_message, first_non_finite, subscript


def make_vec_env(spec: RunSpec, run: RunDir, resume: CheckpointRecord | None) -> VecEnv:
    """n_envs copies (in this process, or one subprocess each), with one monitor.csv in SB3's format."""
    return normalized_env(spec, run, monitored_env(spec, run, resume), resume)


def monitored_env(spec: RunSpec, run: RunDir, resume: CheckpointRecord | None) -> VecMonitor:
    """The envs and their monitor.csv: appended to on a resume, written anew otherwise."""
    xml = Path(spec.xml)
    first = [0] * spec.n_envs
    if spec.randomize and resume is None:
        run.draws_jsonl.unlink(missing_ok=True)  # a run that starts over draws its episodes anew
    elif spec.randomize:
        first = next_episodes(run.draws_jsonl, spec.n_envs)
    factories: list[Callable[[], gymnasium.Env]] = [
        partial(_training_env, spec, xml, index, run.draws_jsonl, first[index]) for index in range(spec.n_envs)]
    # forkserver children inherit the worker's process group and one-thread caps, and die with it.
    venv = SubprocVecEnv(factories, start_method="forkserver") if spec.vec_env == "subproc" \
        else DummyVecEnv(factories)
    # Right on the env, under everything that uses its values: a NaN reward never reaches monitor.csv, nor
    # a NaN observation VecNormalize's statistics, and VecNormalize's clipping cannot turn an infinite
    # observation into a finite one before the check sees it.
    episodes = len(read_monitor_episodes(run.monitor_csv)) if resume else 0
    checked = NamedNonFiniteCheck(venv, steps=resume.timesteps if resume else 0, episodes=episodes)
    monitored = EnvReturnMonitor(checked)
    if resume:
        # Keep the episode clock running from where the checkpoint left it.
        monitored.t_start -= resume.timing.wall_s
    monitored.results_writer = ResultsWriter(
        str(run.monitor_csv), header={"t_start": monitored.t_start, "env_id": spec.env},
        override_existing=resume is None,
    )
    return monitored


def _training_env(spec: RunSpec, xml: Path, index: int, draws_file: Path, first_episode: int):
    env = make_env(spec.env, xml, spec.env_kwargs, spec.max_episode_steps)
    if spec.randomize:
        edits = [RandomizedEdit.model_validate(edit) for edit in spec.randomize]
        env = RandomizedEnv(env, xml, edits, spec.seed, index, draws_file, first_episode=first_episode)
    return exact_env(with_episode_return(env))


def normalized_env(spec: RunSpec, run: RunDir, monitored: VecMonitor, resume: CheckpointRecord | None) -> VecEnv:
    """VecNormalize over the monitor when the spec normalizes, with the checkpoint's statistics on a resume
    (reading them raises if their file is damaged)."""
    if spec.normalize is None:
        return monitored
    # Below the normalization, the monitor records the env's own rewards.
    if resume and resume.vecnormalize_file:
        normalized = VecNormalize.load(str(run.checkpoints / resume.vecnormalize_file), monitored)
        normalized.training = True
        # The run's own discount of the returns it normalizes rewards by, not the pickled one: a PBT member
        # resumed from a donor's checkpoint may have explored another gamma.
        normalized.gamma = spec.normalize.get("gamma", normalized.gamma)
        return normalized
    return VecNormalize(monitored, training=True, **spec.normalize)


class NamedNonFiniteCheck(VecCheckNan):
    """SB3's VecCheckNan, raising, whose error names the first non-finite value in one line: which
    observation index, the reward or which action index, at which step of the run and in which episode.
    It also checks an episode's final observation, which VecCheckNan does not see (the env has reset; SB3
    bootstraps a truncated episode's value from it).

    It counts the run's steps and episodes itself (from a checkpoint's, on resume): episodes are numbered
    in the order they started, over all envs, so with one env episode N is monitor.csv's N-th row.
    """

    SINGULAR = {"observations": "observation", "rewards": "reward", "actions": "action"}

    def __init__(self, venv: VecEnv, steps: int = 0, episodes: int = 0):
        super().__init__(venv, raise_exception=True)
        self.steps = steps
        """The run's timesteps so far, all envs together."""
        self.episodes = episodes
        """The run's episodes started so far."""
        self.episode = np.zeros(self.num_envs, dtype=np.int64)
        """The number of each env's current episode."""

    def reset(self) -> VecEnvObs:
        self._start_episodes(np.ones(self.num_envs, dtype=bool))  # the observations are the new episodes'
        return super().reset()

    def step_async(self, actions: np.ndarray) -> None:
        # The actions are checked once the step is taken, and only if what came back is not finite: a NaN
        # action makes the env's next observation NaN, and is then named as the cause. That spares a sum at
        # every step; integer actions (no NaN possible) and other spaces go VecCheckNan's way.
        if not _floats(actions):
            self._check_val(event="step_async", actions=actions)
        self._actions = actions
        self.venv.step_async(actions)

    def step_wait(self) -> VecEnvStepReturn:
        observations, rewards, dones, infos = self.venv.step_wait()
        # At every env step, a few microseconds against a step's thousand: the usual case (float arrays, all
        # finite) is one dot product of each with itself and nothing else; anything else is checked
        # VecCheckNan's way, which names what it finds (and clears a square that overflowed).
        if not _finite_floats(observations, rewards):
            if _floats(self._actions) and not _finite_floats(self._actions):
                self._check_val(event="step_async", actions=self._actions)
            self._check_val(event="step_wait", observations=observations, rewards=rewards, dones=dones)
        self._observations = observations
        self.steps += self.num_envs
        if np.count_nonzero(dones):  # a C call; dones.any() goes through numpy's Python wrapper
            self._check_final_observations(dones, infos)
            self._start_episodes(dones)
        return observations, rewards, dones, infos

    def _start_episodes(self, which: np.ndarray) -> None:
        for env in np.flatnonzero(which):
            self.episodes += 1
            self.episode[env] = self.episodes

    def _check_final_observations(self, dones: np.ndarray, infos: list[dict[str, Any]]) -> None:
        for env in np.flatnonzero(dones):
            final = infos[env].get("terminal_observation")
            found = None if final is None else _first_non_finite_in("final observation", _batch_of_one(final))
            if found is not None:
                label, _, bad = found
                raise NonFiniteError(env_value_message("observation", label, bad, self.steps,
                                                       int(self.episode[env]), self._env_shown(int(env))))

    def check_array_value(self, name: str, value: np.ndarray) -> list[tuple[str, str]]:
        # At every step, so one sum per array (a NaN or an infinity anywhere makes it non-finite) instead of
        # VecCheckNan's four passes: a quarter of the cost. Only a flagged array is looked at SB3's way,
        # which also clears a sum that overflowed from finite values. Dones are booleans.
        if value.dtype.kind == "b" or math.isfinite(value.sum()):
            return []
        return super().check_array_value(name, value)

    def _check_val(self, event: str, **kwargs: Any) -> None:
        try:
            super()._check_val(event, **kwargs)
        except ValueError as found:  # VecCheckNan's lines: what it found, where from, the last values
            named = self._named(event, kwargs)
            if named is None:
                raise
            raise named from found

    def _named(self, event: str, values: dict[str, Any]) -> NonFiniteError | None:
        """The first non-finite value of a step (observations before rewards), in one line."""
        dones = values.get("dones")
        for key, value in values.items():
            kind = self.SINGULAR.get(key)
            found = _first_non_finite_in(kind, value) if kind else None
            if kind is None or found is None:
                continue
            label, env, bad = found
            episode = int(self.episode[env])
            if kind == "observation" and dones is not None and dones[env]:
                # After an episode's end the env has already reset: the observation is the next episode's.
                episode = self.episodes + int(np.count_nonzero(dones[:env + 1]))
            at_reset = event == "reset"
            step = self.steps if at_reset else self.steps + self.num_envs
            return NonFiniteError(env_value_message(kind, label, bad, step, episode, self._env_shown(env), at_reset))
        return None

    def _env_shown(self, env: int) -> int | None:
        """Which env, where there are several."""
        return env if self.num_envs > 1 else None


def _floats(value: Any) -> bool:
    return type(value) is np.ndarray and value.dtype.kind == "f"


def _finite_floats(*arrays: Any) -> bool:
    """Float arrays whose every entry is finite, told by the sum of each one's dot product with itself (a NaN or
    an infinity anywhere makes it non-finite): one BLAS call per array, half a numpy sum's fixed cost. False
    for anything else: a dict observation, integer actions, a square that overflowed (finite values over
    1e154, or 1.8e19 in float32: checked again the slow way, and numpy warns of the overflow once). A dot
    with zeros would never overflow, but numpy would warn of the invalid inf * 0 at every infinity, the
    failure this check exists to name."""
    total = 0.0
    for array in arrays:
        if not _floats(array):
            return False
        flat = array.ravel()
        total += flat.dot(flat)
    return math.isfinite(total)


def _first_non_finite_in(kind: str, value: Any) -> tuple[str, int, float] | None:
    """(label with index, env, value) of the first non-finite entry of a per-env value: an array, or a Dict
    or Tuple space's dict or tuple of them."""
    if isinstance(value, dict):
        parts = [(f"{kind}[{key!r}]", inner) for key, inner in value.items()]
    elif isinstance(value, tuple):
        parts = [(f"{kind}[{i}]", inner) for i, inner in enumerate(value)]
    else:
        parts = [(kind, value)]
    for label, array in parts:
        found = first_non_finite(np.asarray(array, dtype=float))
        if found is not None:
            (env, *index), bad = found
            return label + subscript(tuple(index)), env, bad
    return None


def _batch_of_one(observation: Any) -> Any:
    """One env's observation with the env axis the vec env's have."""
    if isinstance(observation, dict):
        return {key: np.asarray(inner)[None] for key, inner in observation.items()}
    if isinstance(observation, tuple):
        return tuple(np.asarray(inner)[None] for inner in observation)
    return np.asarray(observation)[None]
