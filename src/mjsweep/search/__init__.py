"""Searches beyond the grid: random, Sobol, TPE, CMA-ES and NSGA-II studies over PPO settings, env arguments and
robot edits, for one objective or several (a Pareto front).

The spec's `search:` section is spec/searchspace.py; `samplers.py` proposes points (random and Sobol without Optuna,
`optuna_samplers.py` with it); `journal.py` is the study's append-only record (trials.jsonl), its source of truth;
`studies.py` turns a trial into ordinary runs; `source.py` hands the scheduler the next run whenever a slot
is free and tells each trial its objective (`objective.py`), stopping trials that `prune.py` judges behind;
`execute.py` hands engine.sweep.execute a search's runs and previews its first trials; `ranking.py` ranks the
trials for `sweep report` and `sweep plot` (`pareto.py`: the fronts of several objectives; `plots.py`: figures).
"""
