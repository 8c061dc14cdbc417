"""A trained run's model ready to act: loaded as cross-evaluation and videos load it (worker/loaded_policy.py), its
observations normalized with the run's statistics frozen (worker/normalization.py), and its variant's env."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..sweepdir.files import RunDir
from ..sweepdir.models import RunSpec
from ..sweepdir.trust import Trust, require

if TYPE_CHECKING:
    import gymnasium as gym
    import numpy as np
    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.vec_env import VecEnv, VecNormalize


class Policy:
    """`model` is the SB3 model (any algorithm mjsweep trains, recurrent ones too). `predict` takes an
    observation of `make_env()`'s env as it comes and normalizes it as training did; `make_vec_env()` is the
    env with that normalization inside, whose observations `model.predict` takes as they are.

    Loading unpickles the run's files: UntrustedFolderError (an InputError) before anything is unpickled when
    their sweep folder is not the user's alone and `trust` (or MJSWEEP_TRUST, ~/.config/mjsweep/trust) does
    not name it."""

    def __init__(self, spec: RunSpec, run_path: Path, best: bool = False, trust: Trust = ()):
        from ..worker.loaded_policy import load_policy
        from ..worker.normalization import load_frozen

        run = RunDir(run_path)
        self.spec = spec
        self.xml = run.model_xml(spec)
        use_best = best and run.best_model_zip.is_file()
        self.model_path = run.best_model_zip if use_best else run.model_zip
        stats = run.best_vecnormalize if use_best else run.vecnormalize
        trust = list(trust)
        for file in (self.model_path, stats):
            require(file, run.path.parent, trust)
        self._trust = trust
        self.model: BaseAlgorithm = load_policy(spec.algo, str(self.model_path))
        self.stats_path: Path | None = stats if stats.is_file() else None
        # The run's statistics, frozen: never updated by what this policy sees, rewards left as the env's own.
        self.normalization: VecNormalize | None = (
            load_frozen(str(stats), self._plain_vec_env()) if self.stats_path is not None else None)

    def __repr__(self) -> str:
        return f"Policy({self.spec.algo} of {self.spec.run_id}, {self.model_path.name})"

    def make_env(self, **kwargs: Any) -> gym.Env:
        """A new env of the run's variant as it trained (env, XML, env_kwargs, episode limit); `kwargs` add
        to its env_kwargs (render_mode="rgb_array", say)."""
        from ..robots.envs import make_env

        return make_env(self.spec.env, self.xml, {**self.spec.env_kwargs, **kwargs},
                        self.spec.max_episode_steps)

    def make_vec_env(self) -> VecEnv:
        """One env as a vec env, normalized with the frozen statistics when the run normalized: what the
        run's evaluations stepped. It resets finished episodes itself."""
        from ..worker.normalization import load_frozen

        venv = self._plain_vec_env()
        if self.stats_path is not None:  # read again: checked again
            require(self.stats_path, self.stats_path.parent.parent, self._trust)
        return load_frozen(str(self.stats_path), venv) if self.stats_path is not None else venv

    def normalize(self, obs: Any) -> Any:
        """An observation of make_env()'s env as the model saw them in training."""
        return self.normalization.normalize_obs(obs) if self.normalization is not None else obs

    def predict(self, obs: Any, state: Any = None, episode_start: np.ndarray | None = None,
                deterministic: bool = True) -> tuple[np.ndarray, Any]:
        """The action for a raw observation, and the recurrent state to pass back (None for other policies);
        episode_start marks where an episode begins for a recurrent policy."""
        return self.model.predict(self.normalize(obs), state=state, episode_start=episode_start,
                                  deterministic=deterministic)

    def rollout(self, steps: int, seed: int | None = None, deterministic: bool = True) -> list[float]:
        """The env's own reward at each of `steps` steps, episodes restarting as they end, the policy driven
        as the run's evaluations drive it (a recurrent policy's state carried and reset per episode)."""
        from ..worker.loaded_policy import Actor

        venv = self.make_vec_env()
        try:
            if seed is not None:
                venv.seed(seed)
            actor, obs, rewards = Actor(self.model, deterministic=deterministic), venv.reset(), []
            for _ in range(steps):
                obs, reward, dones, _ = venv.step(actor.act(obs))
                actor.stepped(dones)
                rewards.append(float(reward[0]))
            return rewards
        finally:
            venv.close()

    def _plain_vec_env(self) -> VecEnv:
        from stable_baselines3.common.vec_env import DummyVecEnv

        return DummyVecEnv([self.make_env])
