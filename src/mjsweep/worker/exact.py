"""Exact resume: what the next steps of a training depend on beyond SB3's model zip, the normalization
statistics and the replay buffer, saved with each checkpoint (exact_<t>.npz) and put back on resume, so
that a run stopped at any checkpoint and resumed ends as the same run never stopped (same machine, same
libraries, CPU).

That is each env's physics state (robots/physics_state.py: MuJoCo's integration state and the derived
quantities a reward reads before its step, never the model), its time limit's and episode return's counters
and its reset generator; the global generators (torch, numpy, Python); the model's last observation, episode
starts and episode infos; the non-finite check's and the monitor's counters; VecNormalize's discounted returns
(its pickle drops them); an action noise's state, RecurrentPPO's LSTM states, gSDE's exploration noise. A stop
mid-iteration rewinds to the iteration's start (iterations.py), so the same is snapshotted there: a few small
copies, one env_method call per iteration.

The state is a tree of plain values and arrays (torch's tensors as numpy arrays), written as one .npz that reads
back without pickle (sweepdir/arraytree.py). Checkpoints of earlier versions hold an exact_<t>.pkl, a pickle
with each env's whole MjData; those are read with pickle and turned into the same tree.
"""

from __future__ import annotations

import copy
import pickle
import random
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecCheckNan, VecEnv, VecMonitor, VecNormalize

from ..robots.physics_state import PhysicsState
from ..robots.randomized_env import RandomizedEnv
from ..sweepdir import arraytree

VERSION = 2
"""1: exact_<t>.pkl, each env's MjData pickled whole; 2: exact_<t>.npz, a tree of plain values and arrays."""

EPISODE_COUNTERS = ("_elapsed_steps", "episode_return", "episode_length", "_has_reset", "_start_height",
                    "draws_done")
"""Attributes of the env's layers (gymnasium's TimeLimit and OrderEnforcing, monitor.EpisodeReturn, the
unwrapped env: mjsweep/Locomotion-v0's start height; a randomized variant's RandomizedEnv: its episodes drawn)
that an episode changes, kept where a layer has one."""

PASSIVE_CHECKS = ("checked_reset", "checked_step", "checked_data_reuse")


class ExactEnv(gymnasium.Wrapper):
    """The outermost wrapper of each training env: its state got, snapshotted and set through the vec env's
    env_method, so that envs in subprocesses (vec_env: subproc) answer as those in the worker do."""

    def __init__(self, env: gymnasium.Env):
        super().__init__(env)
        self._marked: dict[str, Any] | None = None
        self._data_copy: Any = None
        """A preallocated MjData the snapshot of each iteration's start is copied into (a memcpy)."""
        self._physics: PhysicsState | None = None

    def _layers(self) -> list[Any]:
        layers, env = [], self.env
        while True:
            layers.append(env)
            inner = getattr(env, "env", None)
            if inner is None or inner is env:
                return layers
            env = inner

    def _data(self) -> tuple[Any, Any]:
        """The env's MjModel and MjData; (None, None) for an env that simulates without MuJoCo."""
        import mujoco

        base = self.env.unwrapped
        data = getattr(base, "data", None)
        return (getattr(base, "model", None), data) if isinstance(data, mujoco.MjData) else (None, None)

    def _physics_of(self, model: Any) -> PhysicsState:
        if self._physics is None:
            self._physics = PhysicsState(model)
        return self._physics

    def mjsweep_mark(self) -> None:
        """Snapshot the state as it is now: an iteration's start, where a stop rewinds to."""
        import mujoco

        model, data = self._data()
        if data is not None:
            if self._data_copy is None:
                self._data_copy = mujoco.MjData(model)
            mujoco.mj_copyData(self._data_copy, model, data)
        self._marked = self._counters()

    def mjsweep_state(self, marked: bool) -> dict[str, Any]:
        """The state now, or (marked) at the last mark: plain values and arrays."""
        model, data = self._data()
        counters = self._marked if marked and self._marked is not None else self._counters()
        if marked and self._marked is not None:
            data = self._data_copy
        return {**counters, "physics": self._physics_of(model).capture(data) if data is not None else None}

    def _counters(self) -> dict[str, Any]:
        base = self.env.unwrapped
        rng = getattr(base, "_np_random", None)
        return {"layers": [{k: getattr(layer, k) for k in EPISODE_COUNTERS if k in vars(layer)}
                           for layer in self._layers()],
                "np_random": rng.bit_generator.state if rng is not None else None,
                "np_random_seed": getattr(base, "_np_random_seed", None)}

    def mjsweep_fits(self, state: dict[str, Any]) -> bool:
        """Whether `state` (mjsweep_state's) can be put back into this env: its physics of this model."""
        model, data = self._data()
        if state["physics"] is None or data is None:
            return state["physics"] is None and data is None
        return self._physics_of(model).fits(state["physics"])

    def mjsweep_restore(self, state: dict[str, Any]) -> None:
        for layer, counters in zip(self._layers(), state["layers"], strict=True):
            for key, value in counters.items():
                setattr(layer, key, value)
            # gymnasium's PassiveEnvChecker checked the first attempt's first reset and steps; it holds no state
            # a step depends on, and its check of a step against the reset before it has no reset to compare.
            for key in PASSIVE_CHECKS:
                if key in vars(layer):
                    setattr(layer, key, True)
            if isinstance(layer, RandomizedEnv):  # the episode's drawn model, before its physics goes back in
                layer.mjsweep_redraw()
        model, data = self._data()
        if state["physics"] is not None:
            self._physics_of(model).restore(data, state["physics"])
        base = self.env.unwrapped
        if state["np_random"] is not None:
            # An env resumed exactly is never reset, so it has no generator yet.
            bit_generator = getattr(np.random, state["np_random"]["bit_generator"])()
            bit_generator.state = state["np_random"]
            base._np_random = np.random.Generator(bit_generator)
            base._np_random_seed = state["np_random_seed"]


def exact_env(env: gymnasium.Env) -> gymnasium.Env:
    return ExactEnv(env)


def unfit(venv: VecEnv, state: dict[str, Any]) -> str | None:
    """Why `state` cannot be put back into these envs (another model's physics, or another MuJoCo version's, or
    another number of envs), or None. Asked before the model is loaded without a reset of its envs."""
    if len(state["envs"]) != venv.num_envs:
        return f"it holds {len(state['envs'])} envs, the run has {venv.num_envs}"
    for i, env_state in enumerate(state["envs"]):
        if not venv.env_method("mjsweep_fits", env_state, indices=[i])[0]:
            return "its physics state is of another model or MuJoCo version"
    return None


def _layer(venv: VecEnv | None, cls: type) -> Any:
    while venv is not None and not isinstance(venv, cls):
        venv = getattr(venv, "venv", None)
    return venv


class ExactState:
    """The training's state beyond the checkpoint's other files: taken at a checkpoint, snapshotted at each
    iteration's start, put back on resume."""

    def __init__(self, model: BaseAlgorithm):
        self.model = model
        venv = model.get_env()
        self.normalizer: VecNormalize | None = _layer(venv, VecNormalize)
        self.monitor: VecMonitor | None = _layer(venv, VecMonitor)
        # envs.NamedNonFiniteCheck, which counts the run's steps and episodes (envs.py imports this module)
        check = _layer(venv, VecCheckNan)
        self.check: Any = check if hasattr(check, "episodes") else None
        base = venv
        while getattr(base, "venv", None) is not None:
            base = base.venv  # type: ignore[union-attr]
        assert base is not None, "of() found the envs"
        self.envs: VecEnv = base
        # numpy's global generator costs 25 us to read, so it is snapshotted only where a rollout draws from it
        # (action noise, DQN's epsilon-greedy); elsewhere it is as it was at the iteration's start.
        self.rollout_draws_numpy = getattr(model, "action_noise", None) is not None \
            or hasattr(model, "exploration_rate")
        self._marked: dict[str, Any] | None = None

    @staticmethod
    def of(model: BaseAlgorithm) -> ExactState | None:
        """The model's exact state, if its envs can give theirs (built by envs.py: each in an ExactEnv)."""
        venv = model.get_env()
        while venv is not None and getattr(venv, "venv", None) is not None:
            venv = venv.venv  # type: ignore[attr-defined]
        return ExactState(model) if venv is not None and all(venv.env_is_wrapped(ExactEnv)) else None

    def mark(self) -> None:
        self.envs.env_method("mjsweep_mark")
        self._marked = self._main(numpy=self.rollout_draws_numpy)

    def state(self, marked: bool) -> dict[str, Any]:
        """Everything, now or (marked) at the iteration's start: plain values and arrays."""
        main = self._marked if marked and self._marked is not None else self._main(numpy=True)
        if main.get("numpy") is None:
            main = {**main, "numpy": np.random.get_state()}
        envs = self.envs.env_method("mjsweep_state", marked)
        return {"version": VERSION, "envs": envs, "random": random.getstate(), **main}

    def _main(self, numpy: bool) -> dict[str, Any]:
        model = self.model
        check = self.check
        return {
            "torch": torch.get_rng_state().numpy(),
            "numpy": np.random.get_state() if numpy else None,
            "last_obs": _copied(model._last_obs),
            "last_episode_starts": _copied(model._last_episode_starts),
            "last_original_obs": _copied(getattr(model, "_last_original_obs", None)),
            "ep_info_buffer": list(model.ep_info_buffer or []),
            "ep_success_buffer": list(model.ep_success_buffer or []),
            "episode_num": model._episode_num,
            "n_calls": getattr(model, "_n_calls", None),
            "action_noise": noise_state(getattr(model, "action_noise", None)),
            # RecurrentPPO's LSTM states, carried from step to step
            "lstm": lstm_state(getattr(model, "_last_lstm_states", None)),
            "sde": _sde_noise(model),
            "action_space": _rng_state(model.action_space),
            "check": (check.steps, check.episodes, check.episode.copy()) if check is not None else None,
            "monitor_episodes": self.monitor.episode_count if self.monitor is not None else None,
            "returns": self.normalizer.returns.copy() if self.normalizer is not None else None,
        }

    def restore(self, state: dict[str, Any]) -> None:
        """The state back, after SB3's _setup_learn (which resets an action noise) and before the first step."""
        model = self.model
        for i, env_state in enumerate(state["envs"]):
            self.envs.env_method("mjsweep_restore", env_state, indices=[i])
        torch.set_rng_state(torch.from_numpy(state["torch"]))
        np.random.set_state(state["numpy"])
        random.setstate(state["random"])
        model._last_obs = state["last_obs"]
        model._last_episode_starts = state["last_episode_starts"]
        if state["last_original_obs"] is not None:
            model._last_original_obs = state["last_original_obs"]
        assert model.ep_info_buffer is not None and model.ep_success_buffer is not None, "set by _setup_learn"
        model.ep_info_buffer.clear()
        model.ep_info_buffer.extend(state["ep_info_buffer"])
        model.ep_success_buffer.clear()
        model.ep_success_buffer.extend(state["ep_success_buffer"])
        model._episode_num = state["episode_num"]
        if state["n_calls"] is not None:
            model._n_calls = state["n_calls"]  # type: ignore[attr-defined]
        if state["action_noise"] is not None:
            set_noise_state(model.action_noise, state["action_noise"])
        if state.get("lstm") is not None:
            model._last_lstm_states = lstm_states(model._last_lstm_states, state["lstm"])  # type: ignore[attr-defined]
        if state["action_space"] is not None:
            model.action_space.np_random.bit_generator.state = state["action_space"]
        if self.check is not None and state["check"] is not None:
            self.check.steps, self.check.episodes, self.check.episode = state["check"]
        if self.monitor is not None and state["monitor_episodes"] is not None:
            self.monitor.episode_count = state["monitor_episodes"]
        if self.normalizer is not None and state["returns"] is not None:
            self.normalizer.returns = state["returns"]

    def restore_rollout_start(self, state: dict[str, Any]) -> None:
        """Once the first rollout has begun: gSDE's noise, which it drew anew, and the torch generator as the
        checkpoint had them after the same draw. Nothing else has drawn from it since restore()."""
        if not state.get("sde"):
            return
        torch.set_rng_state(torch.from_numpy(state["torch"]))
        for dist, noise in zip(_sde_distributions(self.model), state["sde"], strict=False):
            for key, value in noise.items():
                setattr(dist, key, torch.from_numpy(value).to(getattr(dist, key).device))


def noise_state(noise: Any) -> dict[str, Any] | None:
    """An action noise's attributes (Ornstein-Uhlenbeck's carries its last value from step to step), those of
    each env's noise for a VectorizedActionNoise."""
    if noise is None:
        return None
    if hasattr(noise, "noises"):
        return {"noises": [noise_state(n) for n in noise.noises]}
    return {key: _copied(value) for key, value in vars(noise).items()
            if value is None or isinstance(value, np.ndarray | np.generic | int | float)}  # not its dtype


def set_noise_state(noise: Any, state: dict[str, Any]) -> None:
    """Into the model's own action noise (built from the spec as the saved one was)."""
    if "noises" in state:
        for each, saved in zip(noise.noises, state["noises"], strict=True):
            set_noise_state(each, saved)
        return
    for key, value in state.items():
        setattr(noise, key, value)


def lstm_state(states: Any) -> dict[str, list[np.ndarray]] | None:
    """RecurrentPPO's RNNStates: the actor's and the critic's (hidden, cell) tensors, as arrays."""
    if states is None:
        return None
    return {part: [t.detach().cpu().numpy().copy() for t in getattr(states, part)] for part in ("pi", "vf")}


def lstm_states(current: Any, saved: dict[str, list[np.ndarray]]) -> Any:
    """RNNStates like `current` (the model's, on its device) holding the saved tensors."""
    return type(current)(**{part: tuple(torch.from_numpy(a).to(t.device) for a, t in
                                        zip(saved[part], getattr(current, part), strict=True))
                            for part in ("pi", "vf")})


SDE_NOISE = ("exploration_mat", "exploration_matrices")
"""gSDE's exploration noise (use_sde), drawn at each rollout's start (and every sde_sample_freq steps). Acting
reads it without gradients, and an update draws its own, so it is kept detached."""


def _sde_distributions(model: BaseAlgorithm) -> list[Any]:
    """The gSDE action distributions of the model's policy (PPO's, TRPO's) or actor (SAC's, TQC's), if it
    explores with gSDE."""
    from stable_baselines3.common.distributions import StateDependentNoiseDistribution

    if not getattr(model, "use_sde", False):
        return []
    holders = (getattr(model, "policy", None), getattr(model.policy, "actor", None))
    return [dist for holder in holders if isinstance(dist := getattr(holder, "action_dist", None),
                                                    StateDependentNoiseDistribution)]


def _sde_noise(model: BaseAlgorithm) -> list[dict[str, Any]] | None:
    found = _sde_distributions(model)
    return [{key: value.detach().cpu().numpy().copy() for key in SDE_NOISE
             if (value := getattr(dist, key, None)) is not None} for dist in found] or None


def _copied(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: np.copy(v) for k, v in value.items()}
    return np.copy(value) if isinstance(value, np.ndarray) else copy.deepcopy(value)


def _rng_state(space: gymnasium.Space) -> dict[str, Any] | None:
    rng = getattr(space, "_np_random", None)
    return rng.bit_generator.state if rng is not None else None


def save(state: dict[str, Any], path: str) -> None:
    with open(path, "wb") as fh:
        arraytree.write(fh, state)


def load(path: str) -> dict[str, Any]:
    """An exact_<t>.npz, or an earlier version's exact_<t>.pkl; raises what a damaged file raises."""
    if Path(path).suffix == ".pkl":
        return _from_pickle(path)
    state = arraytree.read(path)
    if not isinstance(state, dict) or state.get("version") != VERSION:
        raise ValueError(f"not an exact state of version {VERSION}")
    return state


def _from_pickle(path: str) -> dict[str, Any]:
    """A version 1 state, pickled with live objects (each env's MjData, torch tensors, the action noise), as
    the tree version 2 stores."""
    with open(path, "rb") as fh:
        state = pickle.load(fh)
    if not isinstance(state, dict) or state.get("version") != 1:
        raise ValueError("not an exact state of version 1")
    envs = []
    for env in state["envs"]:
        data = env.pop("data")
        envs.append({**env, "physics": PhysicsState(data.model).capture(data) if data is not None else None})
    sde = state.get("sde")
    return {**state, "version": VERSION, "envs": envs, "torch": state["torch"].numpy(),
            "action_noise": noise_state(state["action_noise"]), "lstm": lstm_state(state.get("lstm")),
            "sde": [{k: v.numpy() for k, v in noise.items()} for noise in sde] if sde else sde}
