"""A trained model loaded to act with, not to train: cross-evaluation and videos."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm


def load_policy(algo: str, path: str) -> BaseAlgorithm:
    """The model at `path`, on the CPU. Acting never reads its schedules, so they are not unpickled: a
    LinearSchedule is pickled by its module path, and a model saved when the class lived elsewhere
    (mjsweep.training, mjsweep.worker.training) still loads."""
    from ..spec.algos import ALGOS, algorithm_class

    unused = dict.fromkeys((*ALGOS[algo].scheduled, "lr_schedule"), 0.0)
    return algorithm_class(algo).load(path, device="cpu", custom_objects=unused)
