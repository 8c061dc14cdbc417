"""RL Zoo's hyperparameters as its ppo.yml writes them: schedules, Python-text policy_kwargs, n_envs and
normalize inside the block."""

from __future__ import annotations

import pytest

from helpers.commands import run_sweep, write_spec
from helpers.models import REPO
from mjsweep.engine.sweep import prepare
from mjsweep.errors import SpecError
from mjsweep.spec.literals import zoo_expression

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


needs_rl_zoo = pytest.mark.skipif(__import__("importlib").util.find_spec("rl_zoo3") is None, reason="needs rl_zoo3")


def hopper_spec(tmp_path, **ppo) -> dict:
    import gymnasium

    xml = __import__("pathlib").Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "hopper.xml"
    return {"name": "hop", "env": "Hopper-v5", "variants": [{"name": "hopper", "xml": str(xml)}],
            "ppo": {"zoo": True, **ppo}, "runs_dir": str(tmp_path / "runs")}


@pytest.mark.skipif(__import__("importlib").util.find_spec("rl_zoo3") is None, reason="needs rl_zoo3")
@pytest.mark.slow
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
@pytest.mark.slow
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


@pytest.mark.slow
@needs_rl_zoo
def test_each_zoo_algorithm_of_a_grid_takes_its_own_n_envs_normalize_and_timesteps(tmp_path):
    """RL Zoo normalizes Hopper for PPO and TRPO, not for SAC, and gives TRPO 2 envs: each run takes its own
    algorithm's values, as `python -m rl_zoo3.train --algo ALGO` would; the spec's own keys are every run's."""
    data = {**hopper_spec(tmp_path), "grid": {"algo": ["ppo", "sac", "trpo"]}, "sac": {"zoo": True},
            "trpo": {"zoo": True, "n_timesteps": 4096}}
    spec = write_spec(tmp_path, data)
    ppo, sac, trpo = prepare(spec).runs
    assert (ppo.n_envs, ppo.normalize["gamma"], ppo.total_timesteps) == (1, 0.999, 1_000_000)
    assert (sac.n_envs, sac.normalize, sac.total_timesteps) == (1, None, 1_000_000)
    assert (trpo.n_envs, trpo.normalize["gamma"], trpo.total_timesteps) == (2, 0.99, 4096)
    proc = run_sweep("validate", str(spec))
    assert proc.returncode == 0, proc.stderr
    printed = {block.split(" for ")[0]: block for block in proc.stdout.split("hyperparameters: RL Zoo's ")[1:]}
    assert "  n_envs: 1\n" in printed["PPO"] and "  normalize: True\n" in printed["PPO"]
    assert "  normalize: False\n" in printed["SAC"] and "  total_timesteps: 1000000\n" in printed["SAC"]
    assert "  n_envs: 2\n" in printed["TRPO"] and "  total_timesteps: 4096\n" in printed["TRPO"]
    subproc = prepare(write_spec(tmp_path, {**data, "vec_env": "subproc"}), check_envs=False).runs
    assert [run.cpus for run in subproc] == [1, 1, 2]  # a process per env: TRPO's 2

    with pytest.raises(SpecError, match=r"trpo.n_timesteps and total_timesteps both given: keep one"):
        prepare(write_spec(tmp_path, {**data, "total_timesteps": 2048}), check_envs=False)
    del data["trpo"]["n_timesteps"]
    written = {**data, "n_envs": 2, "normalize": False, "total_timesteps": 2048}
    runs = prepare(write_spec(tmp_path, written), check_envs=False).runs
    assert [(run.algo, run.n_envs, run.normalize, run.total_timesteps) for run in runs] == [
        ("ppo", 2, None, 2048), ("sac", 2, None, 2048), ("trpo", 2, None, 2048)]


@needs_rl_zoo
def test_a_plain_section_beside_a_zoo_one_keeps_the_spec_values(tmp_path):
    """RL Zoo's PPO values are PPO's alone: the SAC runs beside them take the spec's, or their section's."""
    data = {**hopper_spec(tmp_path), "grid": {"algo": ["ppo", "sac"]}, "sac": {"learning_starts": 100}}
    with pytest.raises(SpecError, match=r"spec.yaml:\d+: total_timesteps: required key is missing: the SAC runs have "
                                        r"no n_timesteps of their own in their section"):
        prepare(write_spec(tmp_path, data), check_envs=False)
    ppo, sac = prepare(write_spec(tmp_path, {**data, "total_timesteps": 3000}), check_envs=False).runs
    assert ppo.normalize is not None and (sac.n_envs, sac.normalize, sac.total_timesteps) == (1, None, 3000)
    data["sac"]["n_timesteps"] = 3000  # a block pasted under sac: SAC's own
    ppo, sac = prepare(write_spec(tmp_path, data), check_envs=False).runs
    assert (ppo.normalize is not None, ppo.total_timesteps) == (True, 1_000_000)
    assert (sac.n_envs, sac.normalize, sac.total_timesteps) == (1, None, 3000)
    with pytest.raises(SpecError, match=r"td3: TD3 hyperparameters, but no run trains TD3"):
        prepare(write_spec(tmp_path, {**data, "td3": {"n_envs": 2}}), check_envs=False)


@pytest.mark.slow
@needs_rl_zoo
def test_a_grid_run_writes_its_own_algorithms_values(tmp_path):
    """A real sweep of PPO and SAC with RL Zoo's values and a budget each: each spec.json holds its algorithm's
    normalize and total_timesteps, only PPO's run keeps VecNormalize statistics, and sweep.yaml records each
    section's own keys."""
    import json

    import yaml

    data = {**hopper_spec(tmp_path), "grid": {"algo": ["ppo", "sac"]}, "seeds": [0], "eval": {"episodes": 1},
            "sac": {"zoo": True, "n_timesteps": 300}}
    data["ppo"]["n_timesteps"] = 512
    spec = write_spec(tmp_path, data)
    proc = run_sweep("run", str(spec), "--workers", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sweep = tmp_path / "runs" / "hop"
    ppo, sac = (json.loads((sweep / run.run_id / "spec.json").read_text()) for run in prepare(spec).runs)
    assert (ppo["algo"], ppo["total_timesteps"], ppo["normalize"]["gamma"]) == ("ppo", 512, 0.999)
    assert (sac["algo"], sac["total_timesteps"], sac["normalize"], sac["n_envs"]) == ("sac", 300, None, 1)
    assert (sweep / ppo["run_id"] / "vecnormalize.pkl").exists()
    assert not (sweep / sac["run_id"] / "vecnormalize.pkl").exists()
    recorded = yaml.safe_load((sweep / "sweep.yaml").read_text())
    assert recorded["total_timesteps"] is None and recorded["n_envs"] == 1 and recorded["normalize"] is False
    assert (recorded["ppo"]["n_timesteps"], recorded["ppo"]["normalize"]) == (512, True)
    assert (recorded["sac"]["n_timesteps"], recorded["sac"]["normalize"]) == (300, False)


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
