"""TPE through Optuna, kept in memory in the launcher: mjsweep's trials.jsonl is the study on disk.

Optuna never touches a file or a worker. On resume the ended trials are added back with `add_trial`, so the
model sees the same history; the sampler's seed also counts the trials already asked, so that a resumed
search does not propose its first random points again.
"""

from __future__ import annotations

from typing import Any

from ..spec.searchspace import Dimension
from ..sweepdir.models import TrialRecord, TrialState


class TpeSampler:
    def __init__(self, dims: dict[str, Dimension], seed: int, study_index: int, maximize: bool,
                 history: list[TrialRecord]):
        try:
            import optuna
        except ImportError:
            raise ImportError("search.method tpe needs Optuna (pip install 'mjsweep[search]')") from None
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna, self.dims = optuna, dims
        self.distributions = {key: _distribution(optuna, dim) for key, dim in dims.items()}
        sampler = optuna.samplers.TPESampler(seed=seed * 1_000_003 + study_index * 10_007 + len(history))
        self.study = optuna.create_study(direction="maximize" if maximize else "minimize", sampler=sampler)
        self._asked: dict[int, Any] = {}
        for record in history:
            if record.state is not TrialState.RUNNING:
                self.tell(record)

    def propose(self, number: int) -> dict[str, Any]:
        trial = self.study.ask(self.distributions)
        self._asked[number] = trial
        return {key: self._value(key, trial.params[key]) for key in self.dims}

    def tell(self, record: TrialRecord) -> None:
        state = {TrialState.COMPLETE: self._optuna.trial.TrialState.COMPLETE,
                 TrialState.PRUNED: self._optuna.trial.TrialState.PRUNED,
                 TrialState.FAILED: self._optuna.trial.TrialState.FAIL}[record.state]
        value = record.value if record.state is TrialState.COMPLETE else None
        asked = self._asked.pop(record.number, None)
        if asked is not None:
            self.study.tell(asked, value, state=state)
            return
        try:
            params = {key: self._internal(key, record.params[key]) for key in self.dims}
        except (KeyError, ValueError):
            return  # a trial of an earlier space: nothing to learn from it
        self.study.add_trial(self._optuna.trial.create_trial(
            params=params, distributions=self.distributions, value=value, state=state))

    def _value(self, key: str, internal: Any) -> Any:
        """Optuna's value -> the spec's: a choice by its index, a float rounded as random sampling rounds."""
        dim = self.dims[key]
        if dim.choice is not None:
            return dim.choice[internal]
        return dim.clamp(internal) if dim.kind in ("uniform", "log_uniform") else int(internal)

    def _internal(self, key: str, value: Any) -> Any:
        dim = self.dims[key]
        return dim.choice.index(value) if dim.choice is not None else value


def _distribution(optuna: Any, dim: Dimension) -> Any:
    if dim.choice is not None:
        # Indices, not values: Optuna's categories must be scalars, a choice may be a list or a mapping.
        return optuna.distributions.CategoricalDistribution(list(range(len(dim.choice))))
    low, high = dim.bounds
    if dim.kind == "int":
        return optuna.distributions.IntDistribution(int(low), int(high))
    return optuna.distributions.FloatDistribution(low, high, log=dim.kind == "log_uniform")
