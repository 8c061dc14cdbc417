"""Randomized variants trained: each env's episodes draw from the run's seed alone, every draw is on record in
draws.jsonl, a randomized run never shares an id or an experiment with a nominal one, and a randomized run
stopped mid-episode resumes exactly."""

from __future__ import annotations

import json
import os
import signal

import gymnasium
import numpy as np
import pytest

from helpers.commands import launcher_output, run_dirs, run_sweep, start_sweep, status_of, wait_for, write_spec
from helpers.exact_runs import ALGOS, assert_same_run, stopped_and_resumed, uninterrupted
from helpers.models import ANYMAL_XML, TINY_XML
from mjsweep.engine.sweep import prepare
from mjsweep.results import experiments
from mjsweep.robots import draws as drawlib
from mjsweep.robots.envs import EnvBuildError, make_env, probe_env
from mjsweep.robots.randomized_env import RandomizedEnv, next_episodes
from mjsweep.spec.randomspec import RandomizedEdit
from mjsweep.sweepdir.files import read_lines
from mjsweep.sweepdir.models import DrawRecord

FIELD_EDITS = [{"mass": {"body": "torso", "factor": {"uniform": [0.7, 1.4]}}},
               {"friction": {"body": "front_leg", "value": {"choice": [0.5, 0.9, 1.3]}}, "per": "env"},
               {"gear": {"joint": "back_hip", "factor": {"log_uniform": [0.5, 2]}}}]
STRUCTURAL_EDITS = [{"scale_body": {"body": "front_leg", "factor": {"uniform": [0.8, 1.2]}}},
                    {"damping": {"joint": "*_hip", "factor": {"uniform": [0.5, 2]}}}]


def randomized(spec: dict, edits: list[dict]) -> dict:
    spec["variants"][0]["randomize"] = edits
    return spec


def test_a_randomized_run_has_its_own_id_and_experiment(tmp_path, tiny_spec):
    nominal = prepare(write_spec(tmp_path / "a", tiny_spec), check_envs=False).runs[0]
    run = prepare(write_spec(tmp_path / "b", randomized(tiny_spec, FIELD_EDITS)), check_envs=False).runs[0]
    wider = randomized(tiny_spec, [*FIELD_EDITS[:2], {"gear": {"joint": "back_hip", "factor": {"uniform": [0.5, 3]}}}])
    other = prepare(write_spec(tmp_path / "c", wider), check_envs=False).runs[0]
    assert len({nominal.run_id, run.run_id, other.run_id}) == 3
    assert len({nominal.experiment, run.experiment, other.experiment}) == 3
    assert nominal.randomize == [] and "randomize" not in nominal.experiment_content()
    assert [RandomizedEdit.model_validate(e).op for e in run.randomize] == ["mass", "friction", "gear"]
    assert experiments.differences(nominal, run) == "randomized edits differ"
    assert experiments.differences(run, other) == "randomized edits differ"


@pytest.mark.parametrize("vec_env", ["dummy", pytest.param("subproc", marks=pytest.mark.slow)])
def test_each_env_draws_its_own_episodes_and_every_draw_is_recorded(tmp_path, tiny_spec, vec_env):
    tiny_spec.update({"n_envs": 2, "max_episode_steps": 40, "total_timesteps": 512, "vec_env": vec_env})
    spec = write_spec(tmp_path, randomized(tiny_spec, FIELD_EDITS))
    done = run_sweep("run", str(spec))
    assert done.returncode == 0, done.stdout + done.stderr
    [run_dir] = run_dirs(tmp_path / "runs" / "tiny")
    records = read_lines(run_dir / "draws.jsonl", DrawRecord)
    episodes = len((run_dir / "monitor.csv").read_text().splitlines()) - 2  # its comment and header lines
    # every episode monitor.csv counts was drawn (plus each env's episode under way when training stopped)
    assert len(records) >= episodes > 4
    assert {(r.env, r.episode) for r in records} == {(e, i) for e in (0, 1) for i in
                                                     range(sum(r.env == e for r in records))}
    seed = json.loads((run_dir / "spec.json").read_text())["seed"]
    slots = drawlib.slots([RandomizedEdit.model_validate(e) for e in FIELD_EDITS])
    for record in records:
        expected = drawlib.draw(slots, seed, drawlib.TRAIN, record.env, record.episode)
        assert list(record.values.values()) == list(expected.values())
    assert list(records[0].values) == ["randomize[0].mass.factor", "randomize[1].friction.value",
                                       "randomize[2].gear.factor"]
    # per: env keeps one friction per env; per episode draws afresh
    for env in (0, 1):
        mine = [r.values for r in records if r.env == env]
        assert len({v["randomize[1].friction.value"] for v in mine}) == 1
        assert len({v["randomize[0].mass.factor"] for v in mine}) == len(mine)
    first = {r.env: r.values["randomize[0].mass.factor"] for r in records if r.episode == 0}
    assert first[0] != first[1]  # each env its own stream (in subprocesses, lines of both envs interleave)


@pytest.mark.slow
def test_a_randomized_run_killed_and_retried_resumes_exactly(tmp_path, tiny_spec):
    tiny_spec.update({"total_timesteps": 3072, "max_episode_steps": 90, "checkpoint_every": 128, "n_envs": 2,
                      "eval": {"episodes": 2, "every": 512, "deterministic": False}})
    randomized(tiny_spec, STRUCTURAL_EDITS + FIELD_EDITS)
    spec = write_spec(tmp_path / "killed", tiny_spec)
    launcher = start_sweep(spec)
    [run_dir] = wait_for(lambda: [d for d in run_dirs(tmp_path / "killed" / "runs" / "tiny")
                                  if (d / "checkpoints" / "checkpoint.json").exists()
                                  and status_of(d).get("state") == "running"], what="a checkpoint", timeout=240)
    os.kill(status_of(run_dir)["pid"], signal.SIGKILL)  # the retry resumes from a regular checkpoint
    assert launcher.wait(timeout=240) == 0, launcher_output(spec)
    assert status_of(run_dir)["attempts"] == 2 and "resuming exactly" in (run_dir / "log.txt").read_text()
    whole = uninterrupted(tmp_path / "whole", tiny_spec)
    assert_same_run(whole, run_dir)
    assert draws_of(whole) == draws_of(run_dir)


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["sac", "a2c"])
def test_a_randomized_run_of_another_algorithm_resumes_exactly(tmp_path, tiny_spec, algo):
    tiny_spec.update({"algo": algo, "ppo": {}, algo: ALGOS[algo], "total_timesteps": 3000, "max_episode_steps": 90,
                      "checkpoint_every": 200, "eval": {"episodes": 1, "every": 500}})
    randomized(tiny_spec, STRUCTURAL_EDITS + FIELD_EDITS)
    resumed = stopped_and_resumed(tmp_path / "stopped", tiny_spec)
    whole = uninterrupted(tmp_path / "whole", tiny_spec)
    assert_same_run(whole, resumed)
    assert draws_of(whole) == draws_of(resumed)


def test_structural_draws_swap_the_model_of_the_generic_locomotion_env():
    edits = [RandomizedEdit.model_validate(e) for e in STRUCTURAL_EDITS]
    env = RandomizedEnv(make_env("mjsweep/Locomotion-v0", TINY_XML, {}), TINY_XML, edits, seed=4, env_index=0)
    base = env.unwrapped
    nominal = base.model.geom("front_leg_geom").size[1]
    lengths = []
    for episode in range(3):
        env.reset(seed=episode)
        factor = drawlib.draw(drawlib.slots(edits), 4, drawlib.TRAIN, 0, episode)["_draw0_factor"]
        assert base.model.geom("front_leg_geom").size[1] == pytest.approx(nominal * factor)
        for _ in range(5):
            observation, reward, *_ = env.step(env.action_space.sample())
        assert np.all(np.isfinite(observation)) and np.isfinite(reward)
        lengths.append(base.model.geom("front_leg_geom").size[1])
    assert len(set(lengths)) == 3
    env.close()


def test_a_resume_that_is_not_exact_goes_on_drawing_after_the_recorded_episodes(tmp_path):
    draws_file = tmp_path / "draws.jsonl"
    edits = [RandomizedEdit.model_validate(e) for e in FIELD_EDITS]
    for env, last in ((0, 4), (1, 2)):
        wrapped = RandomizedEnv(gymnasium.make("HalfCheetah-v5", xml_file=str(TINY_XML)), TINY_XML, edits, 3, env,
                                draws_file)
        for _ in range(last + 1):
            wrapped.reset()
        wrapped.close()
    assert next_episodes(draws_file, 3) == [5, 3, 0]
    resumed = RandomizedEnv(gymnasium.make("HalfCheetah-v5", xml_file=str(TINY_XML)), TINY_XML, edits, 3, 0,
                            draws_file, first_episode=5)
    resumed.reset()
    resumed.close()
    last = read_lines(draws_file, DrawRecord)[-1]
    assert (last.env, last.episode) == (0, 5)
    slots = drawlib.slots(edits)
    assert list(last.values.values()) == list(drawlib.draw(slots, 3, drawlib.TRAIN, 0, 5).values())


def draws_of(run_dir) -> dict:
    return {(r.env, r.episode): r.values for r in read_lines(run_dir / "draws.jsonl", DrawRecord)}


@pytest.mark.slow
@pytest.mark.parametrize("edits", [FIELD_EDITS, STRUCTURAL_EDITS], ids=["field", "structural"])
def test_a_randomized_run_stopped_mid_episode_resumes_exactly(tmp_path, tiny_spec, edits):
    tiny_spec.update({"total_timesteps": 2048, "max_episode_steps": 90, "checkpoint_every": 128, "n_envs": 2,
                      "eval": {"episodes": 2, "every": 512, "deterministic": False}})
    randomized(tiny_spec, edits)
    resumed = stopped_and_resumed(tmp_path / "stopped", tiny_spec)
    whole = uninterrupted(tmp_path / "whole", tiny_spec)
    assert_same_run(whole, resumed)
    assert draws_of(whole) == draws_of(resumed)


@pytest.mark.slow
def test_sweep_verify_reproduces_a_randomized_run(tmp_path, tiny_spec):
    tiny_spec.update({"total_timesteps": 384, "max_episode_steps": 40, "eval": {"episodes": 1, "every": 256}})
    spec = write_spec(tmp_path, randomized(tiny_spec, STRUCTURAL_EDITS + FIELD_EDITS))
    done = run_sweep("run", str(spec))
    assert done.returncode == 0, done.stdout + done.stderr
    [run_dir] = run_dirs(tmp_path / "runs" / "tiny")
    verified = run_sweep("verify", str(tmp_path / "runs" / "tiny"), "--scratch", str(tmp_path / "scratch"))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"{run_dir.name}: exact" in verified.stdout


@pytest.mark.slow
@pytest.mark.skipif(not ANYMAL_XML.exists(), reason=f"needs ANYmal C at {ANYMAL_XML}")
def test_a_randomized_anymal_c_validates_and_trains(tmp_path, tiny_spec):
    tiny_spec.update({"env": "mjsweep/Locomotion-v0", "total_timesteps": 256, "max_episode_steps": 40,
                      "variants": [{"name": "anymal", "xml": str(ANYMAL_XML), "randomize": [
                          {"mass": {"body": "base", "factor": {"uniform": [0.8, 1.25]}}},
                          {"kp": {"actuator": "*_KFE", "factor": {"normal": {"mean": 1, "std": 0.1, "low": 0.7,
                                                                             "high": 1.3}}}},
                          {"friction": {"body": "*_SHANK", "factor": {"uniform": [0.5, 1.5]}}, "per": "env"}]}]})
    spec = write_spec(tmp_path, tiny_spec)
    checked = run_sweep("validate", str(spec))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    done = run_sweep("run", str(spec))
    assert done.returncode == 0, done.stdout + done.stderr
    [run_dir] = run_dirs(tmp_path / "runs" / "tiny")
    records = read_lines(run_dir / "draws.jsonl", DrawRecord)
    assert len(records) >= 256 // 40
    assert all(0.8 <= r.values["randomize[0].mass.factor"] <= 1.25 for r in records)



def test_the_probe_draws_as_training_does_and_refuses_an_env_without_mujoco():
    edits = [RandomizedEdit.model_validate(e) for e in STRUCTURAL_EDITS + FIELD_EDITS]
    probe = probe_env("mjsweep/Locomotion-v0", TINY_XML, {}, max_episode_steps=20, randomize=edits)
    assert probe.act_shape == (2,)
    with pytest.raises(EnvBuildError, match="randomize needs an env that simulates with MuJoCo "
                                            r"\(PlainEnv has no MjModel and MjData"):
        probe_env("helpers.plain_env:PlainEnv", TINY_XML, {}, randomize=edits)


def _env_layers(venv) -> list[type]:
    """The gymnasium wrappers of the first env of the worker's vec env, outermost first, then the env."""
    while not hasattr(venv, "envs"):
        venv = venv.venv
    env, layers = venv.envs[0], []
    while isinstance(env, gymnasium.Wrapper):
        layers.append(type(env))
        env = env.env
    return [*layers, type(env)]


@pytest.mark.parametrize("edits", [[], FIELD_EDITS], ids=["nominal", "randomized"])
def test_only_a_randomized_variant_trains_through_the_randomized_wrapper(tmp_path, tiny_spec, edits):
    from mjsweep.engine.sweep import write_run_dir
    from mjsweep.sweepdir.files import RunDir
    from mjsweep.worker.train_envs import make_vec_env

    run = prepare(write_spec(tmp_path, randomized(tiny_spec, edits)), check_envs=False).runs[0]
    run_dir = RunDir(tmp_path / "run")
    write_run_dir(run_dir, run, None)
    venv = make_vec_env(run, run_dir, None)
    venv.reset()
    venv.step(np.zeros((1, 2)))
    layers = _env_layers(venv)
    venv.close()
    assert (RandomizedEnv in layers) == bool(edits), layers
    assert run_dir.draws_jsonl.exists() == bool(edits)  # a nominal run draws nothing and records nothing
