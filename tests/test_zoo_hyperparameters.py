"""RL Zoo's hyperparameters as its ppo.yml writes them: schedules, Python-text policy_kwargs, n_envs and
normalize inside the block."""

from __future__ import annotations

import pytest

from helpers.commands import run_sweep, write_spec
from helpers.models import REPO
from mjsweep.engine.sweep import prepare
from mjsweep.spec.literals import zoo_expression
from mjsweep.spec.sweepspec import SpecError

# RL Zoo's Hopper block (ppo.yml), as pasted.
ZOO_HOPPER = {
    "normalize": True, "n_envs": 1, "policy": "MlpPolicy", "n_timesteps": 1e6, "batch_size": 32, "n_steps": 512,
    "gamma": 0.999, "learning_rate": 9.80828e-05, "ent_coef": 0.00229519, "clip_range": 0.2, "n_epochs": 5,
    "gae_lambda": 0.99, "max_grad_norm": 0.7, "vf_coef": 0.835671,
    "policy_kwargs": "dict(\n log_std_init=-2,\n ortho_init=False,\n activation_fn=nn.ReLU,\n"
                     " net_arch=dict(pi=[256, 256], vf=[256, 256])\n )",
}


def test_zoo_block_pasted_under_ppo_validates_and_resolves(tmp_path, tiny_spec):
    del tiny_spec["total_timesteps"]
    tiny_spec["ppo"] = {**ZOO_HOPPER, "learning_rate": "lin_3e-4", "clip_range": "lin_0.2"}
    plan = prepare(write_spec(tmp_path, tiny_spec))
    [run] = plan.runs
    assert run.total_timesteps == 1_000_000 and run.n_envs == 1 and run.normalize["gamma"] == 0.999
    assert run.hyperparams["policy_kwargs"] == {"log_std_init": -2, "ortho_init": False, "activation_fn": "nn.ReLU",
                                        "net_arch": {"pi": [256, 256], "vf": [256, 256]}}
    assert run.hyperparams["learning_rate"] == "lin_3e-4" and "n_timesteps" not in run.hyperparams


def test_zoo_normalize_text_and_conflicts(tmp_path, tiny_spec):
    [run] = prepare(write_spec(tmp_path, {**tiny_spec, "normalize": "{'norm_obs': True, 'norm_reward': False}"}),
                    check_envs=False).runs
    assert run.normalize["norm_reward"] is False
    with pytest.raises(SpecError, match="ppo.n_envs and n_envs both given"):
        prepare(write_spec(tmp_path, {**tiny_spec, "n_envs": 2, "ppo": {**tiny_spec["ppo"], "n_envs": 1}}),
                check_envs=False)


def test_zoo_expressions_are_read_as_data_only():
    assert zoo_expression("dict(a=-1, b=[1, 2.5], c=nn.Tanh)") == {"a": -1, "b": [1, 2.5], "c": "nn.Tanh"}
    with pytest.raises(ValueError, match="only dict"):
        zoo_expression("__import__('os').system('true')")


def test_schedules_decay_linearly_with_the_run():
    from mjsweep.worker.model import LinearSchedule

    schedule = LinearSchedule(3e-4)
    assert schedule(1.0) == 3e-4 and schedule(0.5) == 1.5e-4 and schedule(0.0) == 0.0


def hopper_spec(tmp_path, **ppo) -> dict:
    import gymnasium

    xml = __import__("pathlib").Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "hopper.xml"
    return {"name": "hop", "env": "Hopper-v5", "variants": [{"name": "hopper", "xml": str(xml)}],
            "ppo": {"zoo": True, **ppo}, "runs_dir": str(tmp_path / "runs")}


@pytest.mark.skipif(__import__("importlib").util.find_spec("rl_zoo3") is None, reason="needs rl_zoo3")
def test_zoo_true_takes_rl_zoo_values_with_the_spec_keys_over_them(tmp_path):
    data = {**hopper_spec(tmp_path, n_epochs=2), "total_timesteps": 5000}
    plan = prepare(write_spec(tmp_path, data))
    assert plan.spec.zoo_entries == {"ppo": "Hopper-v4"}
    [run] = plan.runs
    assert run.total_timesteps == 5000 and run.hyperparams["n_epochs"] == 2 and run.hyperparams["gamma"] == 0.999
    assert run.normalize is not None and run.hyperparams["policy_kwargs"]["activation_fn"] == "nn.ReLU"
    assert "zoo" not in run.hyperparams
    proc = run_sweep("validate", str(tmp_path / "spec.yaml"))
    assert proc.returncode == 0, proc.stderr
    assert "RL Zoo's PPO for Hopper-v4" in proc.stdout and "gamma: 0.999" in proc.stdout


@pytest.mark.skipif(__import__("importlib").util.find_spec("rl_zoo3") is None, reason="needs rl_zoo3")
def test_zoo_true_reads_each_algorithms_own_file(tmp_path):
    """sac.yml, td3.yml (noise, train_freq, policy_kwargs text), trpo.yml (n_envs, normalize), and RL Zoo's
    ppo_lstm.yml for recurrent_ppo; each run takes its algorithm's values."""
    data = {**hopper_spec(tmp_path), "grid": {"algo": ["sac", "td3"]}, "total_timesteps": 5000}
    data["sac"] = {"zoo": True, "learning_starts": 100}
    data["td3"] = data.pop("ppo")
    plan = prepare(write_spec(tmp_path, data))
    assert plan.spec.zoo_entries == {"sac": "Hopper-v4", "td3": "Hopper-v4"}
    sac, td3 = sorted(plan.runs, key=lambda run: run.algo)
    assert sac.hyperparams == {"learning_starts": 100} and sac.normalize is None and sac.total_timesteps == 5000
    assert td3.hyperparams["noise_type"] == "normal" and td3.hyperparams["policy_kwargs"] == {"net_arch": [400, 300]}
    assert td3.hyperparams["learning_starts"] == 10_000 and td3.hyperparams["train_freq"] == 1
    proc = run_sweep("validate", str(tmp_path / "spec.yaml"))
    assert proc.returncode == 0, proc.stderr
    assert "RL Zoo's SAC for Hopper-v4" in proc.stdout and "RL Zoo's TD3 for Hopper-v4" in proc.stdout

    trpo = prepare(write_spec(tmp_path, {**hopper_spec(tmp_path), "algo": "trpo", "trpo": {"zoo": True},
                                         "ppo": {}}), check_envs=False)
    [run] = trpo.runs
    assert run.n_envs == 2 and run.normalize is not None and run.hyperparams["n_critic_updates"] == 20
    lstm = prepare(write_spec(tmp_path, {**hopper_spec(tmp_path), "algo": "recurrent_ppo",
                                         "recurrent_ppo": {"zoo": True}, "ppo": {}}), check_envs=False)
    [run] = lstm.runs
    assert run.policy == "MlpLstmPolicy" and run.hyperparams["gamma"] == 0.999 and run.normalize is not None


@pytest.mark.skipif(__import__("importlib").util.find_spec("rl_zoo3") is None, reason="needs rl_zoo3")
def test_zoo_sections_that_disagree_on_a_sweep_key_name_it(tmp_path):
    """RL Zoo normalizes Hopper for PPO, not for SAC: one sweep has one normalize, unless the spec writes it."""
    data = {**hopper_spec(tmp_path), "grid": {"algo": ["ppo", "sac"]}, "sac": {"zoo": True}}
    spec = write_spec(tmp_path, data)
    line = spec.read_text().splitlines().index("sac:") + 2  # its zoo: true
    with pytest.raises(SpecError, match=rf"spec.yaml:{line}: sac.zoo: normalize is False here but True in ppo, and a "
                                        "sweep has one normalize: write normalize in the spec"):
        prepare(spec, check_envs=False)
    runs = prepare(write_spec(tmp_path, {**data, "normalize": True, "total_timesteps": 2048}), check_envs=False).runs
    assert all(run.normalize is not None and run.total_timesteps == 2048 for run in runs)


def test_what_rl_zoo_builds_from_classes_is_refused_at_its_key(tmp_path, tiny_spec):
    tiny_spec["ppo"] = {**tiny_spec["ppo"], "frame_stack": 4}
    with pytest.raises(SpecError, match=r"ppo.frame_stack: RL Zoo's frame stacking \(VecFrameStack\), which mjsweep"):
        prepare(write_spec(tmp_path, tiny_spec), check_envs=False)
    tiny_spec["ppo"] = {"zoo": "yes"}
    with pytest.raises(SpecError, match=r"ppo.zoo: zoo is true or false \(got 'yes'\)"):
        prepare(write_spec(tmp_path, tiny_spec), check_envs=False)


@pytest.mark.skipif(__import__("importlib").util.find_spec("rl_zoo3") is None, reason="needs rl_zoo3")
def test_zoo_entry_with_a_wrapper_is_refused_at_zoo(tmp_path, tiny_spec):
    tiny_spec.update(env="CarRacing-v3", ppo={"zoo": True})
    with pytest.raises(SpecError, match=r"ppo.zoo: RL Zoo's ppo.yml entry for CarRacing-v3 sets "
                                        r"(env_wrapper|frame_stack)"):
        prepare(write_spec(tmp_path, tiny_spec), check_envs=False)


def test_zoo_true_for_an_env_rl_zoo_does_not_know(tmp_path, tiny_spec):
    tiny_spec["env"] = "mjsweep/Locomotion-v0"
    tiny_spec["ppo"] = {"zoo": True}
    with pytest.raises(SpecError, match="RL Zoo has no PPO hyperparameters for 'mjsweep/Locomotion-v0'|needs the"):
        prepare(write_spec(tmp_path, tiny_spec), check_envs=False)


@pytest.mark.slow
def test_hopper_learns_with_rl_zoo_hyperparameters(tmp_path):
    """A learning check, never a speed check: for this fixed seed the policy's last evaluation is above
    its first. RL Zoo's Hopper values, written out (no rl_zoo3 needed), a budget that fits CI."""
    import csv
    import json

    data = hopper_spec(tmp_path)
    data["ppo"] = {**ZOO_HOPPER, "n_timesteps": 12_288, "learning_rate": "lin_3e-4"}
    data.update({"seeds": [0], "eval": {"every": 2048, "episodes": 5}, "checkpoint_every": 4096})
    spec = write_spec(tmp_path, data)
    proc = run_sweep("run", str(spec), "--workers", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [run] = prepare(spec, check_envs=False).runs
    run_dir = tmp_path / "runs" / "hop" / run.run_id
    rows = list(csv.DictReader((run_dir / "evaluations.csv").open()))
    assert [int(r["timesteps"]) for r in rows] == list(range(2048, 12_289, 2048))
    first, last = float(rows[0]["mean_return"]), float(rows[-1]["mean_return"])
    assert last > first, [r["mean_return"] for r in rows]
    result = json.loads((run_dir / "result.json").read_text())
    assert result["best_eval_mean_return"] >= last and (run_dir / "vecnormalize.pkl").exists()


def test_the_example_config_validates():
    plan = prepare(REPO / "configs" / "ant_zoo.yaml")
    [first, *_] = plan.runs
    assert first.total_timesteps == 1_000_000 and first.normalize["gamma"] == 0.98 and first.eval_every == 20_000
    assert first.hyperparams["learning_rate"] == "lin_1e-4"


@pytest.mark.skipif(__import__("importlib").util.find_spec("rl_zoo3") is None, reason="needs rl_zoo3")
def test_the_off_policy_zoo_config_validates():
    plan = prepare(REPO / "configs" / "ant_zoo_offpolicy.yaml", check_envs=False)
    assert plan.spec.zoo_entries == {"sac": "Ant-v4", "td3": "Ant-v4", "tqc": "Ant-v4"}
    assert {run.algo for run in plan.runs} == {"sac", "td3", "tqc"} and len(plan.runs) == 9
    assert all(run.total_timesteps == 1_000_000 and run.normalize is None for run in plan.runs)
