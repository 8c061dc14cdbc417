"""Random and Sobol proposals: numpy (and scipy for Sobol), no Optuna, no model of the results.

Trial n of a study is a pure function of (seed, study index, n), so a resumed search proposes exactly what
an uninterrupted one would, and a dry run shows the trials the search will run.
"""

from __future__ import annotations

import warnings
from typing import Any, Protocol

import numpy as np

from ..spec.searchspace import Dimension, ObjectiveSpec
from ..sweepdir.models import TrialRecord


class Sampler(Protocol):
    def propose(self, number: int) -> dict[str, Any]:
        """The parameters of the study's trial `number` (asked in order 0, 1, 2, ...)."""

    def tell(self, record: TrialRecord) -> None:
        """A trial ended (complete, pruned or failed)."""


class RandomSampler:
    def __init__(self, dims: dict[str, Dimension], seed: int, study_index: int):
        self.dims, self.seed, self.study_index = dims, seed, study_index

    def propose(self, number: int) -> dict[str, Any]:
        u = np.random.default_rng([self.seed, self.study_index, number]).random(len(self.dims))
        return {key: dim.value_at(float(x)) for (key, dim), x in zip(self.dims.items(), u, strict=True)}

    def tell(self, record: TrialRecord) -> None:
        pass  # no model: the next point does not depend on the results


class SobolSampler:
    """Scrambled Sobol points: the space covered evenly, each new trial filling the largest gaps."""

    def __init__(self, dims: dict[str, Dimension], seed: int, study_index: int):
        try:
            from scipy.stats import qmc
        except ImportError:
            raise ImportError("sobol needs scipy (pip install 'mjsweep[search]')") from None
        self.dims, self._qmc = dims, qmc
        self._rng_seed = [seed, study_index]

    def propose(self, number: int) -> dict[str, Any]:
        engine = self._qmc.Sobol(len(self.dims), scramble=True, seed=np.random.default_rng(self._rng_seed))
        if number:
            engine.fast_forward(number)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # balance needs 2^m points; a trial budget is any number
            u = engine.random(1)[0]
        return {key: dim.value_at(float(x)) for (key, dim), x in zip(self.dims.items(), u, strict=True)}

    def tell(self, record: TrialRecord) -> None:
        pass


def make_sampler(method: str, dims: dict[str, Dimension], seed: int, study_index: int,
                 objectives: list[ObjectiveSpec], lines: list[TrialRecord]) -> Sampler:
    """The study's sampler, with its record (`lines`: this study's lines of trials.jsonl, in the order written)
    replayed into it: Optuna's samplers continue from it."""
    if method == "random":
        return RandomSampler(dims, seed, study_index)
    if method == "sobol":
        return SobolSampler(dims, seed, study_index)
    from .optuna_samplers import OptunaSampler  # imports Optuna: only its searches pay for it

    return OptunaSampler(method, dims, seed, study_index, objectives, lines)
