"""Searches beyond the grid: random, Sobol and TPE studies over PPO settings, env arguments and robot edits.

The spec's `search:` section is spec/searchspace.py; `samplers.py` proposes points (random and Sobol without Optuna,
`tpe.py` with it); `record.py` is the study's append-only record (trials.jsonl), its source of truth;
`trials.py` turns a trial into ordinary runs; `source.py` hands the scheduler the next run whenever a slot
is free and tells each trial its objective (`objective.py`), stopping trials that `prune.py` judges behind;
`execute.py` hands engine.sweep.execute a search's runs and previews its first trials; `results.py` ranks the
trials for `sweep report` and `sweep plot`.
"""
