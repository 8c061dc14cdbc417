"""mjsweep/Locomotion-v0: root detection, observation, reward, termination, registration, real PPO."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import gymnasium
import mujoco
import numpy as np
import pytest

from helpers.commands import run_sweep, write_spec
from helpers.models import XML_DIR
from mjsweep.robots.envs import EnvBuildError, make_env, probe_env
from mjsweep.robots.locomotion import ENV_ID, find_root

WALKER = XML_DIR / "planar_walker.xml"
QUAD = XML_DIR / "quadruped.xml"
GYM_ASSETS = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets"


@pytest.fixture(autouse=True)
def _mujoco_log_elsewhere(tmp_path, monkeypatch):
    """MuJoCo appends its warnings (NaN states, deprecated attributes) to MUJOCO_LOG.TXT in the working
    directory: keep it out of the repository."""
    monkeypatch.chdir(tmp_path)


def env_for(xml: Path, **kwargs):
    return make_env(ENV_ID, xml, kwargs).unwrapped


def test_roots_of_a_free_and_a_planar_robot():
    quad = find_root(mujoco.MjModel.from_xml_path(str(QUAD)))
    assert quad.free and quad.dropped_qpos == (0, 1)
    walker = find_root(mujoco.MjModel.from_xml_path(str(WALKER)))
    assert not walker.free and walker.dropped_qpos == (0,)  # slide x only; slide z stays observed


def test_a_model_without_a_movable_root_is_refused():
    arm = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><body name='base'><body name='link'><joint type='hinge'/>"
        "<geom size='0.1'/></body></body></worldbody></mujoco>")
    with pytest.raises(ValueError, match="not on a child of the world"):
        find_root(arm)


def test_observation_leaves_out_the_root_xy_only():
    env = env_for(QUAD)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (env.model.nq - 2 + env.model.nv,) == env.observation_space.shape
    qpos, qvel = env.data.qpos.copy(), env.data.qvel.copy()
    qpos[:2] += 5.0  # far away, same pose: same observation
    env.set_state(qpos, qvel)
    assert np.allclose(env._get_obs(), obs)


def test_reward_is_forward_velocity_minus_control_cost_plus_healthy():
    env = env_for(WALKER, reset_noise_scale=0.0, ctrl_cost_weight=0.5, healthy_reward=2.0)
    env.reset(seed=0)
    qvel = env.data.qvel.copy()
    qvel[0] = 1.0  # the root's slide x
    env.set_state(env.data.qpos.copy(), qvel)
    _, reward, terminated, _, info = env.step(np.zeros(env.action_space.shape))
    assert info["forward_velocity"] > 0.5 and info["healthy"] and not terminated
    assert info["ctrl_cost"] == pytest.approx(0.0)
    assert reward == pytest.approx(info["forward_velocity"] + 2.0)
    _, _, _, _, info = env.step(np.ones(env.action_space.shape))
    assert info["ctrl_cost"] == pytest.approx(0.5 * 4)


def test_forward_axis_y_rewards_sideways_motion():
    env = env_for(QUAD, reset_noise_scale=0.0, forward_axis="y")
    env.reset(seed=0)
    qvel = env.data.qvel.copy()
    qvel[1] = 1.0
    env.set_state(env.data.qpos.copy(), qvel)
    assert env.step(np.zeros(8))[4]["forward_velocity"] > 0.5


def test_a_fallen_robot_terminates():
    env = env_for(WALKER, reset_noise_scale=0.0)
    env.reset(seed=0)
    qpos = env.data.qpos.copy()
    qpos[1], qpos[2] = -0.9, np.pi / 2  # lying on the floor: torso at z 0.1, under 0.3 x its start height
    env.set_state(qpos, env.data.qvel.copy())
    _, _, terminated, _, info = env.step(np.zeros(4))
    assert terminated and not info["healthy"]
    free = env_for(WALKER, healthy_z_range=[-10, 10], reset_noise_scale=0.0)
    free.reset(seed=0)
    free.set_state(qpos, free.data.qvel.copy())
    assert not free.step(np.zeros(4))[2]


def test_a_non_finite_state_terminates_with_a_finite_observation():
    env = env_for(QUAD)
    env.reset(seed=0)
    qvel = env.data.qvel.copy()
    qvel[6] = np.nan
    env.set_state(env.data.qpos.copy(), qvel)
    obs, reward, terminated, _, _ = env.step(np.zeros(8))
    assert terminated and np.all(np.isfinite(obs)) and np.isfinite(reward)


def test_not_registered_at_import_but_when_built():
    code = ("import gymnasium, mjsweep, mjsweep.robots.envs, mjsweep.engine.sweep; "
            f"assert {ENV_ID!r} not in gymnasium.registry; "
            f"mjsweep.robots.envs.make_env({ENV_ID!r}, {str(QUAD)!r}, {{}}); "
            f"assert {ENV_ID!r} in gymnasium.registry")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_bad_kwargs_are_build_errors():
    with pytest.raises(EnvBuildError, match="forward_axis"):
        probe_env(ENV_ID, QUAD, {"forward_axis": "z"})
    with pytest.raises(EnvBuildError, match="unexpected keyword argument 'speed'"):
        probe_env(ENV_ID, QUAD, {"speed": 2})


@pytest.mark.parametrize("xml", [
    GYM_ASSETS / "hopper.xml", GYM_ASSETS / "walker2d.xml", GYM_ASSETS / "half_cheetah.xml",
    GYM_ASSETS / "humanoid.xml", GYM_ASSETS / "swimmer.xml", GYM_ASSETS / "ant.xml", XML_DIR / "ant.xml",
], ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_robots_written_elsewhere_pass_the_probe(xml):
    if not xml.exists():
        pytest.skip(f"{xml} is not there")
    model = mujoco.MjModel.from_xml_path(str(xml))
    probe = probe_env(ENV_ID, xml, {}, max_episode_steps=200)
    assert probe.act_shape == (model.nu,)
    assert probe.obs_shape == (model.nq - len(find_root(model).dropped_qpos) + model.nv,)


@pytest.mark.slow
def test_ppo_trains_the_generic_env_on_a_planar_and_a_free_joint_robot(tmp_path):
    """Our planar walker and quadruped, and Gymnasium's own hopper, through `sweep run`."""
    spec = {
        "name": "generic", "env": ENV_ID, "max_episode_steps": 200,
        "variants": [{"name": "walker", "xml": str(WALKER)}, {"name": "quad", "xml": str(QUAD)},
                     {"name": "hopper", "xml": str(GYM_ASSETS / "hopper.xml")}],
        "seeds": 1, "total_timesteps": 1024, "ppo": {"n_steps": 256, "batch_size": 64, "n_epochs": 2},
        "eval": {"episodes": 2}, "runs_dir": "runs",
    }
    done = run_sweep("run", str(write_spec(tmp_path, spec)), "-w", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    results = [json.loads(p.read_text()) for p in (tmp_path / "runs" / "generic").glob("*/result.json")]
    assert len(results) == 3
    assert all(r["timesteps"] >= 1024 and np.isfinite(r["eval_mean_return"]) for r in results)
