"""`normalize`: VecNormalize statistics in the run's hash, saved with each checkpoint, restored on resume,
frozen for evaluation."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from helpers.commands import wait_for, write_spec
from mjsweep.engine.sweep import prepare
from mjsweep.sweepdir.files import RunDir, read_model
from mjsweep.sweepdir.models import BestRecord, RunSpec


def runs_of(tmp_path: Path, spec: dict) -> list[RunSpec]:
    return prepare(write_spec(tmp_path, spec), check_envs=False).runs


def test_normalize_is_resolved_into_the_run_and_its_hash(tmp_path, tiny_spec):
    [plain] = runs_of(tmp_path, tiny_spec)
    [off] = runs_of(tmp_path, {**tiny_spec, "normalize": False})
    assert plain.normalize is None and off.run_id == plain.run_id  # runs without it keep their ids
    [on] = runs_of(tmp_path, {**tiny_spec, "normalize": True, "ppo": {**tiny_spec["ppo"], "gamma": 0.98}})
    assert on.normalize == {"norm_obs": True, "norm_reward": True, "clip_obs": 10.0, "clip_reward": 10.0,
                            "gamma": 0.98, "epsilon": 1e-8}
    [obs_only] = runs_of(tmp_path, {**tiny_spec, "normalize": {"norm_reward": False}})
    assert obs_only.normalize["norm_reward"] is False and obs_only.normalize["gamma"] == 0.99
    assert len({plain.content_hash, obs_only.content_hash}) == 2


def test_normalize_per_variant_and_as_a_grid_key(tmp_path, tiny_spec):
    walker = tiny_spec["variants"][0]
    tiny_spec["variants"] = [walker, {**walker, "name": "normed", "normalize": True}]
    plain, normed = runs_of(tmp_path, tiny_spec)
    assert plain.normalize is None and normed.normalize is not None
    tiny_spec["variants"] = [walker]
    tiny_spec["grid"] = {"normalize": [False, {"norm_obs": True, "norm_reward": False}]}
    off, on = runs_of(tmp_path, tiny_spec)
    assert off.normalize is None and on.normalize["norm_reward"] is False


def test_bad_normalize_values_name_their_key(tmp_path, tiny_spec):
    from mjsweep.errors import SpecError

    for change, expected in [({"normalize": {"clip_obs": -1}}, "normalize.clip_obs: Input should be greater than 0"),
                             ({"normalize": {"norm_obz": True}}, "normalize.norm_obz: unknown key .allowed: norm_obs"),
                             ({"grid": {"normalize": [True, 3]}}, "grid.normalize: each value is true, false")]:
        with pytest.raises(SpecError, match=expected):
            prepare(write_spec(tmp_path, {**tiny_spec, **change}), check_envs=False)


def test_evaluation_sees_observations_normalized_with_the_training_statistics(tmp_path, tiny_spec):
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from mjsweep.robots.envs import make_env
    from mjsweep.worker.evaluation import evaluate

    [run] = runs_of(tmp_path, {**tiny_spec, "normalize": True})
    venv = VecNormalize(DummyVecEnv([lambda: make_env(run.env, Path(run.xml), run.env_kwargs, 20)]),
                        clip_obs=7.0)
    venv.obs_rms.mean = np.full_like(venv.obs_rms.mean, 1e6)  # every observation far below the mean
    model = PPO("MlpPolicy", venv, n_steps=64, batch_size=32, seed=0)
    seen: list[np.ndarray] = []
    predict = model.predict
    model.predict = lambda obs, *a, **k: (seen.append(np.array(obs)), predict(obs, *a, **k))[1]
    evaluate(run.model_copy(update={"max_episode_steps": 20}), model, lambda: None, venv)
    assert seen and all(np.allclose(obs, -7.0) for obs in seen)  # clipped at -clip_obs: the statistics' doing
    assert venv.obs_rms.mean[0] == 1e6  # and the training statistics were not updated


@pytest.mark.slow
def test_statistics_survive_sigint_and_resume(tmp_path, tiny_spec):
    from stable_baselines3.common.vec_env import VecNormalize

    from mjsweep.worker.train_envs import make_vec_env

    tiny_spec.update({"normalize": True, "total_timesteps": 4096, "checkpoint_every": 256,
                      "eval": {"every": 256, "episodes": 1}})
    tiny_spec["ppo"].update({"learning_rate": "lin_3e-4", "clip_range": "lin_0.2",
                             "policy_kwargs": "dict(ortho_init=False, activation_fn=nn.ReLU, log_std_init=-1)"})
    [run_spec] = runs_of(tmp_path, tiny_spec)
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    run.spec_json.write_text(json.dumps(run_spec.model_dump(mode="json")))
    worker = [sys.executable, "-m", "mjsweep.worker", str(run.path)]
    proc = subprocess.Popen(worker, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    wait_for(lambda: run.read_checkpoint() is not None and run.read_checkpoint().timesteps >= 512,
             what="a checkpoint", timeout=300)
    time.sleep(0.3)  # in the middle of an iteration, most likely
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=300) == 130, proc.stdout.read().decode()
    ckpt = run.read_checkpoint()
    assert ckpt.vecnormalize_file == f"vecnormalize_{ckpt.timesteps}.pkl"
    # The statistics of each checkpoint kept (checkpoints_kept: 2), the newest checkpoint's last.
    kept = [f"vecnormalize_{c.timesteps}.pkl" for c in ckpt.kept()]
    assert sorted(p.name for p in run.checkpoint_vecnormalizes()) == sorted(kept)
    assert kept[-1] == ckpt.vecnormalize_file
    saved = VecNormalize.load(str(run.checkpoints / ckpt.vecnormalize_file), make_vec_env(run_spec, run, None))
    # The statistics are those of the checkpoint's timesteps: as many observations as steps taken (+ resets).
    assert ckpt.timesteps <= saved.obs_rms.count <= ckpt.timesteps + 64

    resumed = make_vec_env(run_spec, run, ckpt)
    assert isinstance(resumed, VecNormalize) and resumed.training
    for name in ("obs_rms", "ret_rms"):
        a, b = getattr(saved, name), getattr(resumed, name)
        assert np.array_equal(a.mean, b.mean) and np.array_equal(a.var, b.var) and a.count == b.count
    resumed.close()
    saved.close()

    done = subprocess.run(worker, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    final = VecNormalize.load(str(run.vecnormalize), make_vec_env(run_spec, run, None))
    assert final.obs_rms.count > ckpt.timesteps and run.read_result().resumed_from == ckpt.timesteps
    final.close()
    # evaluations.csv went on where the checkpoint left it: every multiple of 256 once, no torn row.
    lines = run.evaluations_csv.read_text().splitlines()
    assert lines[0] == "timesteps,mean_return,std_return,returns,lengths,wall_s"
    assert [int(line.split(",")[0]) for line in lines[1:]] == list(range(256, 4097, 256))
    assert all(len(line.split(",")) == 6 for line in lines[1:])
    # The best pair is the best evaluation's, on the resumed timeline, and best.json says which it is.
    best_row = max((line.split(",") for line in lines[1:]), key=lambda row: float(row[1]))
    best = read_model(run.best_json, BestRecord)
    assert best.timesteps == int(best_row[0]) == run.read_result().best_eval_timesteps
    assert run.best_model_zip.samefile(run.best / best.model_file)
    assert run.best_vecnormalize.samefile(run.best / best.vecnormalize_file)
    assert sorted(p.name for p in run.best_files()) == sorted([best.model_file, best.vecnormalize_file])
    # The schedules continued over the resume: the last update ran at progress 0, learning rate 0 (a
    # resume that restarted the decay would end at a negative progress and learning rate).
    from stable_baselines3 import PPO

    model = PPO.load(str(run.model_zip))
    assert model._current_progress_remaining == 0.0
    assert model.policy.optimizer.param_groups[0]["lr"] == 0.0
