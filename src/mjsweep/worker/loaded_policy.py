"""A trained model loaded to act with, not to train: cross-evaluation and videos."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..sweepdir.trust import require

if TYPE_CHECKING:
    import numpy as np
    from stable_baselines3.common.base_class import BaseAlgorithm


def require_run_files(*paths: str | Path | None) -> None:
    """A run's model and statistics (RUN/model.zip, RUN/vecnormalize.pkl: their sweep folder is two up) may be
    unpickled here: UntrustedFolderError if they lie in a sweep folder no one trusted. Processes started on
    a folder check again what the command checked."""
    for path in paths:
        if path is not None:
            require(Path(path), Path(path).parent.parent)


def load_policy(algo: str, path: str) -> BaseAlgorithm:
    """The model at `path`, on the CPU. Acting never reads its schedules, so they are not unpickled: a
    LinearSchedule is pickled by its module path, and a model saved when the class lived elsewhere
    (mjsweep.training, mjsweep.worker.training) still loads."""
    from ..spec.algos import ALGOS, algorithm_class

    unused = dict.fromkeys((*ALGOS[algo].scheduled, "lr_schedule"), 0.0)
    return algorithm_class(algo).load(path, device="cpu", custom_objects=unused)


class Actor:
    """A policy acting step by step in a vec env as SB3's evaluate_policy drives it: a recurrent policy's
    state (RecurrentPPO's LSTM) is carried from step to step and reset where an episode starts. Other
    policies take no state and return None for it."""

    def __init__(self, policy: BaseAlgorithm, n_envs: int = 1, deterministic: bool = True):
        import numpy as np

        self.policy, self.deterministic = policy, deterministic
        self.state: Any = None
        self.episode_start = np.ones(n_envs, dtype=bool)

    def act(self, obs: Any) -> np.ndarray:
        action, self.state = self.policy.predict(obs, state=self.state, episode_start=self.episode_start,
                                                 deterministic=self.deterministic)
        return action

    def stepped(self, dones: np.ndarray) -> None:
        """The vec env's `dones` after the step: those envs start a new episode (the vec env reset them)."""
        self.episode_start = dones
