"""Optuna's samplers (TPE, CMA-ES, NSGA-II), kept in memory in the launcher: trials.jsonl is the study on disk.

Optuna never touches a file or a worker. On resume the study's lines are replayed in the order they were
written: each trial is asked again, when its first line comes (the seeded sampler proposes what it proposed
then, checked against the record), and told when its line says it ended. The sampler is then in the state an
uninterrupted search would have reached (TPE's model, CMA-ES's generation and step size, NSGA-II's
population) and proposes what that search would propose next.

A record the sampler does not propose again (a space edited since, another Optuna version) is added instead
as finished trials (`add_trial`) to a sampler whose seed also counts them, so that its first random points
do not come back: TPE learns from them; CMA-ES and NSGA-II, which keep their generations in trials Optuna
asked itself, start a new one.
"""

from __future__ import annotations

from typing import Any

from ..spec.searchspace import Dimension, ObjectiveSpec
from ..sweepdir.models import TrialRecord, TrialState

METHODS = ("tpe", "cmaes", "nsga2")


class _Diverged(Exception):
    """The replayed sampler proposed other parameters than the record holds."""


def import_optuna(method: str) -> Any:
    """Optuna, and for CMA-ES the cmaes package Optuna's CmaEsSampler needs; ImportError naming what to install."""
    try:
        import optuna
    except ImportError:
        raise ImportError(f"{method} needs Optuna (pip install 'mjsweep[search]')") from None
    if method == "cmaes":
        try:
            import cmaes  # noqa: F401  (Optuna imports it only when CMA-ES first samples: too late to say)
        except ImportError:
            raise ImportError("cmaes needs the cmaes package (pip install 'mjsweep[search]')") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


class OptunaSampler:
    def __init__(self, method: str, dims: dict[str, Dimension], seed: int, study_index: int,
                 objectives: list[ObjectiveSpec], lines: list[TrialRecord]):
        """`lines`: every line of this study's record, in the order written."""
        self._optuna, self.method, self.dims = import_optuna(method), method, dims
        self.directions = ["maximize" if o.maximize else "minimize" for o in objectives]
        self.distributions = {key: _distribution(self._optuna, dim) for key, dim in dims.items()}
        seed = seed * 1_000_003 + study_index * 10_007
        try:
            self._start(seed)
            self._replay(lines)
        except _Diverged:
            ended = [r for r in _latest(lines) if r.state is not TrialState.RUNNING]
            self._start(seed + len(ended))
            for record in ended:
                self.tell(record)

    def _start(self, seed: int) -> None:
        samplers = self._optuna.samplers
        sampler = {"tpe": samplers.TPESampler, "cmaes": samplers.CmaEsSampler,
                   "nsga2": samplers.NSGAIISampler}[self.method](seed=seed)
        self.study = self._optuna.create_study(directions=self.directions, sampler=sampler)
        self._asked: dict[int, Any] = {}

    def _replay(self, lines: list[TrialRecord]) -> None:
        told: set[int] = set()
        for record in lines:
            if record.number not in self._asked and record.number not in told:
                if self.propose(record.number) != {key: record.params.get(key) for key in self.dims}:
                    raise _Diverged
            if record.state is not TrialState.RUNNING and record.number not in told:
                self.tell(record)
                told.add(record.number)

    def propose(self, number: int) -> dict[str, Any]:
        trial = self.study.ask(self.distributions)
        self._asked[number] = trial
        return {key: self._value(key, trial.params[key]) for key in self.dims}

    def tell(self, record: TrialRecord) -> None:
        state = {TrialState.COMPLETE: self._optuna.trial.TrialState.COMPLETE,
                 TrialState.PRUNED: self._optuna.trial.TrialState.PRUNED,
                 TrialState.FAILED: self._optuna.trial.TrialState.FAIL}[record.state]
        values = record.objectives if record.state is TrialState.COMPLETE else None
        asked = self._asked.pop(record.number, None)
        if asked is not None:
            self.study.tell(asked, values, state=state)
            return
        try:
            params = {key: self._internal(key, record.params[key]) for key in self.dims}
            trial = self._optuna.trial.create_trial(params=params, distributions=self.distributions, values=values,
                                                    state=state)
        except (KeyError, ValueError):
            return  # a trial outside today's space: nothing to learn from it
        self.study.add_trial(trial)

    def _value(self, key: str, internal: Any) -> Any:
        """Optuna's value -> the spec's: a choice by its index, a float rounded as random sampling rounds."""
        dim = self.dims[key]
        if dim.choice is not None:
            return dim.choice[internal]
        return dim.clamp(internal) if dim.kind in ("uniform", "log_uniform") else int(internal)

    def _internal(self, key: str, value: Any) -> Any:
        dim = self.dims[key]
        return dim.choice.index(value) if dim.choice is not None else value


def _latest(lines: list[TrialRecord]) -> list[TrialRecord]:
    latest: dict[int, TrialRecord] = {}
    for record in lines:
        latest[record.number] = record
    return list(latest.values())


def _distribution(optuna: Any, dim: Dimension) -> Any:
    if dim.choice is not None:
        # Indices, not values: Optuna's categories must be scalars, a choice may be a list or a mapping.
        return optuna.distributions.CategoricalDistribution(list(range(len(dim.choice))))
    low, high = dim.bounds
    if dim.kind == "int":
        return optuna.distributions.IntDistribution(int(low), int(high))
    return optuna.distributions.FloatDistribution(low, high, log=dim.kind == "log_uniform")
