"""Sweep's views of a search and of population-based training, on real tiny-walker sweeps run with
mjsweep.run: a search's ranked trials and its best run by the objective, a population's lineage."""

from __future__ import annotations

import pytest

import mjsweep
from helpers.models import TINY_XML


@pytest.mark.slow
def test_a_searchs_trials_are_ranked_and_its_best_run_is_by_its_objective(tmp_path, tiny_spec):
    del tiny_spec["seeds"]
    spec = {**tiny_spec, "total_timesteps": 256, "ppo": {"n_steps": 64, "batch_size": 32, "n_epochs": 1},
            "search": {"method": "random", "trials": 3, "seeds_per_trial": 1, "seed": 5,
                       "space": {"ppo.learning_rate": {"log_uniform": [1.0e-5, 1.0e-2]}}}}
    sweep = mjsweep.run(spec, runs_dir=tmp_path / "runs", options=mjsweep.RunOptions(workers=2))
    trials = sweep.trials()
    assert all(isinstance(t, mjsweep.TrialRow) for t in trials) and len(trials) == 3
    values = [t.value for t in trials]
    assert None not in values and values == sorted(values, reverse=True)  # best first: eval_iqm is maximized
    best = sweep.best(metric="objective")
    assert best.run_id == trials[0].record.runs[0] and best.final_return == trials[0].value
    assert sweep.best(metric="objective", mode="min").run_id == trials[-1].record.runs[0]


@pytest.mark.slow
def test_a_populations_lineage_has_its_members_copies_and_best_schedule(tmp_path, tiny_spec):
    del tiny_spec["seeds"]
    space = {"ppo.learning_rate": {"log_uniform": [1.0e-4, 1.0e-2]}}
    spec = {**tiny_spec, "variants": [{"name": "walker", "xml": str(TINY_XML)}], "total_timesteps": 384,
            "ppo": {"n_steps": 64, "batch_size": 32, "n_epochs": 1},
            "pbt": {"population": 2, "interval": 128, "space": space, "seed": 3, "quantile": 0.5}}
    sweep = mjsweep.run(spec, runs_dir=tmp_path / "runs", options=mjsweep.RunOptions(workers=2))
    (lineage,) = sweep.lineage()
    assert isinstance(lineage, mjsweep.Lineage)
    assert lineage.members == [0, 1] and lineage.generations == 3 and len(lineage.segments) == 6
    assert len(sweep) == 6
    # With a quantile of one half, the bottom member copies the top one each generation after the first.
    assert [c.generation for c in lineage.copies] == [1, 2]
    for copy in lineage.copies:
        assert copy.member != copy.copied_from and set(copy.explored) == {"ppo.learning_rate"}
    last = [s for s in lineage.segments if s.generation == 2]
    scores = {s.member: sweep.runs[[r.run_id for r in sweep].index(s.run)].final_return for s in last}
    assert lineage.best_member == max(scores, key=lambda m: (scores[m], -m))
    assert lineage.best_score == scores[lineage.best_member]
    assert len(lineage.best_schedule) == 3 and all("ppo.learning_rate" in step for step in lineage.best_schedule)
    best_last = next(s for s in last if s.member == lineage.best_member)
    assert lineage.best_schedule[-1] == best_last.hyperparams
