"""Population-based training: the spec's refusals."""

from __future__ import annotations

import pytest

from helpers.commands import write_spec
from mjsweep.errors import SpecError
from mjsweep.spec.sweepspec import load

SPACE = {"ppo.learning_rate": {"log_uniform": [1.0e-4, 1.0e-2]}, "ppo.ent_coef": {"uniform": [0.0, 0.1]}}


def pbt_spec(tiny_spec: dict, **pbt_changes) -> dict:
    tiny_spec.pop("seeds")
    tiny_spec.update(total_timesteps=384, ppo={"n_steps": 64, "batch_size": 32, "n_epochs": 1},
                     pbt={"population": 2, "interval": 128, "space": SPACE, "seed": 3, **pbt_changes})
    return tiny_spec


@pytest.mark.parametrize(("change", "where", "says"), [
    ({"space": {"ppo.n_steps": {"uniform": [32, 64]}}}, "pbt.space.ppo.n_steps", "cannot change in a running model"),
    ({"space": {"sac.tau": {"uniform": [0.01, 0.02]}}}, "pbt.space.sac.tau", "explore ppo.<kwarg>"),
    ({"interval": 100}, "pbt.interval", "multiple of interval"),
    ({"interval": 96}, "pbt.interval", "multiple of n_steps * n_envs"),
    ({"space": {"ppo.gamma": {"uniform": [0.9, 1.5]}}}, "pbt.space.ppo.gamma", "must be in (0, 1]"),
])
def test_the_spec_refuses_what_a_population_cannot_explore(tmp_path, tiny_spec, change, where, says):
    with pytest.raises(SpecError) as error:
        load(write_spec(tmp_path, pbt_spec(tiny_spec, **change)))
    assert where in str(error.value) and says in str(error.value)


def test_a_population_takes_no_seeds_and_a_schedule_covers_every_generation(tmp_path, tiny_spec):
    data = pbt_spec(tiny_spec)
    with pytest.raises(SpecError, match="seeds: pbt trains pbt.population members"):
        load(write_spec(tmp_path, {**data, "seeds": 2}))
    replay = {"population": 2, "interval": 128, "schedule": [{"ppo.learning_rate": 1e-3}] * 2}
    with pytest.raises(SpecError, match="pbt.schedule: 2 generations scheduled; total_timesteps / interval is 3"):
        load(write_spec(tmp_path, {**data, "pbt": replay}))
    with pytest.raises(SpecError, match="a space to explore or a schedule to replay"):
        load(write_spec(tmp_path, {**data, "pbt": {**replay, "space": SPACE}}))
    three = [{"ppo.learning_rate": 1e-3}, {"ppo.learning_rate": 5e-4}, {"ppo.learning_rate": 2e-4}]
    assert load(write_spec(tmp_path, {**data, "pbt": {**replay, "schedule": three}})).pbt.schedule == three
