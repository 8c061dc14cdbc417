"""SB3's own constructor checks the hyperparameters that spec.py cannot judge, before anything starts."""

from __future__ import annotations

import pytest

from helpers.commands import run_sweep, write_spec
from mjsweep.engine.modelcheck import ModelCheck, distinct_sets, needs_build
from mjsweep.engine.sweep import prepare
from mjsweep.errors import SpecError


def test_layers_sb3_refuses_are_a_spec_error_at_the_ppo_block(tmp_path, tiny_spec):
    tiny_spec["ppo"] = {**tiny_spec["ppo"], "policy_kwargs": {"net_arch": {"pi": [8], "vf": [8, -1]}}}
    with pytest.raises(SpecError, match=r"spec\.yaml:\d+: ppo: stable-baselines3 cannot build the model: "
                                        r"RuntimeError: .*negative dimension"):
        prepare(write_spec(tmp_path, tiny_spec))


def test_the_grid_point_that_sb3_refuses_is_named(tmp_path, tiny_spec):
    tiny_spec["grid"] = {"ppo.policy_kwargs": [{"net_arch": [16]}, {"bogus": 1}]}
    with pytest.raises(SpecError) as caught:
        prepare(write_spec(tmp_path, tiny_spec))
    message = str(caught.value)
    assert "grid.ppo.policy_kwargs: stable-baselines3 cannot build the model (grid point ppo.policy_kwargs=" in message
    assert "unexpected keyword argument 'bogus'" in message and "\n" not in message


def test_a_policy_class_that_does_not_fit_the_env_is_refused_by_validate(tmp_path, tiny_spec):
    tiny_spec["ppo"] = {**tiny_spec["ppo"], "policy": "CnnPolicy"}
    result = run_sweep("validate", str(write_spec(tmp_path, tiny_spec)))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "cannot build the model: AssertionError: You should use NatureCNN only with images" in result.stderr
    assert not (tmp_path / "runs").exists()


def test_a_set_sb3_contrib_refuses_names_sb3_contrib_and_is_exit_2(tmp_path, tiny_spec):
    pytest.importorskip("sb3_contrib")
    del tiny_spec["ppo"]
    # TQC's own policy argument, which the spec leaves to its class: no critic leaves nothing to optimize
    tiny_spec.update(algo="tqc", tqc={"policy_kwargs": {"n_critics": 0}})
    path = write_spec(tmp_path, tiny_spec)
    result = run_sweep("run", str(path), "--dry-run")
    assert result.returncode == 2, result.stdout + result.stderr
    at = path.read_text().splitlines().index("tqc:") + 1
    assert result.stderr.strip() == f"error: {path}:{at}: tqc: sb3-contrib cannot build the model: ValueError: " \
                                    "optimizer got an empty parameter list"
    assert not (tmp_path / "runs").exists()


def test_sets_that_build_pass_and_each_distinct_set_is_built_once(tmp_path, tiny_spec):
    tiny_spec["ppo"] = {**tiny_spec["ppo"], "policy_kwargs": {"net_arch": [16], "log_std_init": -1}}
    tiny_spec["seeds"] = 3
    tiny_spec["grid"] = {"ppo.use_sde": [False, True]}
    plan = prepare(write_spec(tmp_path, tiny_spec))
    assert len(plan.runs) == 6
    assert [run.hyperparams["use_sde"] for run in distinct_sets(plan.runs)] == [False, True]


def test_a_sweep_of_checked_keys_starts_no_check(tmp_path, tiny_spec):
    plan = prepare(write_spec(tmp_path, tiny_spec), check_envs=False)
    assert not any(needs_build(run) for run in plan.runs)
    check = ModelCheck(plan.runs, tmp_path / "unused.xml")
    assert check.problems() == [] and check._child is None
