"""Start states, heading, reset noise and the degenerate-env checks of the pre-launch probe, on small
XMLs built from the project's quadruped (a robot sunk into the floor with a standing keyframe, ...)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.commands import run_sweep, write_spec
from helpers.models import XML_DIR
from mjsweep.robots.envs import EnvBuildError, make_env, probe_env
from mjsweep.robots.locomotion import ENV_ID

QUAD_TEXT = (XML_DIR / "quadruped.xml").read_text()
STANDING = "0 0 0.45 1 0 0 0 0 0 0 0 0 0 0 0"
SUNKEN = QUAD_TEXT.replace('<body name="torso" pos="0 0 0.45">', '<body name="torso" pos="0 0 0">')
SUNKEN_WITH_HOME = SUNKEN.replace("</mujoco>", f"""  <keyframe>
    <key name="crouch" qpos="0 0 0.3 1 0 0 0 0 30 0 30 0 30 0 30"/>
    <key name="home" qpos="{STANDING}" ctrl="0.5 0 0 0 0 0 0 0"/>
  </keyframe>
</mujoco>""")
SUNKEN_WITH_STAND = SUNKEN.replace("</mujoco>", f"""  <keyframe><key name="stand" qpos="{STANDING}"/></keyframe>
</mujoco>""")
FACING_BACK = QUAD_TEXT.replace('<body name="torso" pos="0 0 0.45">',
                                '<body name="torso" pos="0 0 0.45" quat="0 0 0 1">')
# Weightless, with a motor that cannot push: nothing ever moves.
FROZEN = """<mujoco>
  <option gravity="0 0 0"/>
  <worldbody>
    <body name="torso" pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1"/>
      <body name="arm" pos="0.1 0 0">
        <joint name="swing" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="swing" gear="0" ctrlrange="-1 1"/></actuator>
</mujoco>
"""


@pytest.fixture(autouse=True)
def _mujoco_log_elsewhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def xml_file(tmp_path, text: str, name: str = "robot") -> str:
    path = tmp_path / f"{name}.xml"
    path.write_text(text)
    return str(path)


def env_for(tmp_path, text: str, **kwargs):
    return make_env(ENV_ID, xml_file(tmp_path, text), kwargs).unwrapped


# --- keyframes ---------------------------------------------------------------------------------

def test_a_home_keyframe_is_the_start_state_and_sets_the_healthy_range(tmp_path):
    env = env_for(tmp_path, SUNKEN_WITH_HOME, reset_noise_scale=0.0)
    assert env.keyframe == "home" and "keyframe 'home'" in env.start_note()
    env.reset(seed=0)
    assert np.allclose(env.data.qpos, np.fromstring(STANDING, sep=" "))
    assert env.data.ctrl[0] == 0.5  # the keyframe's ctrl comes back at every reset
    assert env._z_range == pytest.approx((0.45 * 0.3, 0.45 * 2.0))
    _, _, terminated, _, info = env.step(np.zeros(8))
    assert info["healthy"] and not terminated


def test_a_keyframe_is_chosen_by_name_or_index(tmp_path):
    by_name = env_for(tmp_path, SUNKEN_WITH_HOME, keyframe="crouch", reset_noise_scale=0.0)
    by_name.reset(seed=0)
    assert by_name.keyframe == "crouch" and by_name.data.qpos[2] == pytest.approx(0.3)
    by_index = env_for(tmp_path, SUNKEN_WITH_HOME, keyframe=1, reset_noise_scale=0.0)
    assert by_index.keyframe == "home"
    with pytest.raises(ValueError, match=r"no keyframe named 'sit' \(the model has: 'crouch', 'home'\)"):
        env_for(tmp_path, SUNKEN_WITH_HOME, keyframe="sit")
    with pytest.raises(ValueError, match="keyframe 2 does not exist"):
        env_for(tmp_path, SUNKEN_WITH_HOME, keyframe=2)


def test_without_a_keyframe_the_start_is_qpos0_as_before(tmp_path):
    env = env_for(tmp_path, QUAD_TEXT)
    assert env.keyframe is None and env.reset_noise == "absolute"
    plain = make_env(ENV_ID, XML_DIR / "quadruped.xml", {"reset_noise": "absolute"}).unwrapped
    first, _ = env.reset(seed=3)
    second, _ = plain.reset(seed=3)
    assert np.array_equal(first, second)


# --- heading -----------------------------------------------------------------------------------

@pytest.mark.parametrize("axis, index, sign", [("-x", 0, -1), ("+x", 0, 1), ("-y", 1, -1), ("+y", 1, 1)])
def test_signed_axes_reward_motion_their_way(tmp_path, axis, index, sign):
    env = env_for(tmp_path, QUAD_TEXT, reset_noise_scale=0.0, forward_axis=axis)
    env.reset(seed=0)
    qvel = env.data.qvel.copy()
    qvel[index] = 1.0
    env.set_state(env.data.qpos.copy(), qvel)
    assert sign * env.step(np.zeros(8))[4]["forward_velocity"] > 0.5


def test_root_heading_follows_the_way_the_robot_faces(tmp_path):
    env = env_for(tmp_path, FACING_BACK, reset_noise_scale=0.0, forward_axis="root")
    assert env._heading == pytest.approx([-1.0, 0.0, 0.0])
    env.reset(seed=0)
    qvel = env.data.qvel.copy()
    qvel[0] = -1.0  # walking along -x, the way its torso faces
    env.set_state(env.data.qpos.copy(), qvel)
    assert env.step(np.zeros(8))[4]["forward_velocity"] > 0.5
    with pytest.raises(ValueError, match="forward_axis must be one of x, \\+x, -x, y, \\+y, -y, root"):
        env_for(tmp_path, QUAD_TEXT, forward_axis="z")


# --- reset noise -------------------------------------------------------------------------------

def test_relative_noise_leaves_the_root_alone_and_scales_joints_to_their_ranges(tmp_path):
    env = env_for(tmp_path, SUNKEN_WITH_HOME, reset_noise_scale=0.2)
    assert env.reset_noise == "relative"  # the default where episodes start from a keyframe
    start = np.fromstring(STANDING, sep=" ")
    ranges = env.model.jnt_range[1:]
    for seed in range(20):
        env.reset(seed=seed)
        qpos = env.data.qpos
        assert np.array_equal(qpos[:7], start[:7])
        assert np.all(qpos[7:] >= ranges[:, 0] - 1e-12) and np.all(qpos[7:] <= ranges[:, 1] + 1e-12)
        assert np.all(np.abs(qpos[7:] - start[7:]) <= 0.2 * (ranges[:, 1] - ranges[:, 0]) / 2 + 1e-12)
    absolute = env_for(tmp_path, SUNKEN_WITH_HOME, reset_noise="absolute", reset_noise_scale=0.2)
    absolute.reset(seed=0)
    assert absolute.data.qpos[2] != 0.45
    with pytest.raises(ValueError, match="reset_noise must be one of auto, absolute, relative"):
        env_for(tmp_path, QUAD_TEXT, reset_noise="gaussian")


def test_relative_noise_on_a_robot_without_keyframe(tmp_path):
    env = env_for(tmp_path, QUAD_TEXT, reset_noise="relative")
    env.reset(seed=0)
    assert env.data.qpos[2] == 0.45 and np.array_equal(env.data.qpos[3:7], [1, 0, 0, 0])


# --- degenerate envs ---------------------------------------------------------------------------

def test_a_robot_inside_the_floor_is_refused_and_its_home_keyframe_passes(tmp_path):
    with pytest.raises(EnvBuildError, match=r"degenerate env: the start state has geoms 'floor' and .* cm inside "
                       r"each other: .*\[check penetration\]"):
        probe_env(ENV_ID, xml_file(tmp_path, SUNKEN), {})
    probe = probe_env(ENV_ID, xml_file(tmp_path, SUNKEN_WITH_HOME), {})
    assert probe.keyframe == "home" and not probe.warnings
    with pytest.raises(EnvBuildError, match="penetration"):
        probe_env(ENV_ID, xml_file(tmp_path, SUNKEN_WITH_STAND), {})
    assert probe_env(ENV_ID, xml_file(tmp_path, SUNKEN_WITH_STAND), {"keyframe": "stand"}).keyframe == "stand"


def test_a_start_outside_the_healthy_range_is_refused(tmp_path):
    with pytest.raises(EnvBuildError, match=r"root starts at height 0.450, outside its healthy range \[1.000, "
                       r"2.000\].*\[check unhealthy_start\]"):
        probe_env(ENV_ID, XML_DIR / "quadruped.xml", {"healthy_z_range": [1, 2]})


def test_episodes_that_end_at_once_are_refused(tmp_path):
    with pytest.raises(EnvBuildError, match=r"episode ended (within|after) \d+ steps.*\[check short_episodes\]"):
        probe_env(ENV_ID, XML_DIR / "quadruped.xml", {"healthy_z_scale": [0.99, 2.0]})


def test_an_observation_that_never_changes_is_refused(tmp_path):
    with pytest.raises(EnvBuildError, match=r"the observation never changed over 300 random steps.*constant_obs"):
        probe_env(ENV_ID, xml_file(tmp_path, FROZEN), {"reset_noise_scale": 0.0})


def test_warn_only_turns_a_named_check_into_a_warning(tmp_path):
    kwargs = {"healthy_z_range": [1, 2]}
    with pytest.raises(EnvBuildError, match=r"warn_only: \[short_episodes, unhealthy_start\]"):
        probe_env(ENV_ID, XML_DIR / "quadruped.xml", kwargs)
    with pytest.raises(EnvBuildError, match="short_episodes") as info:
        probe_env(ENV_ID, XML_DIR / "quadruped.xml", kwargs, warn_only={"unhealthy_start"})
    assert "unhealthy_start" not in str(info.value)
    probe = probe_env(ENV_ID, XML_DIR / "quadruped.xml", kwargs, warn_only={"unhealthy_start", "short_episodes"})
    assert any("[check unhealthy_start]" in w for w in probe.warnings)


def spec_for(tmp_path, **variants: str) -> dict:
    listed = []
    for name, text in variants.items():
        (tmp_path / f"{name}.xml").write_text(text)
        listed.append({"name": name, "xml": f"{name}.xml"})
    return {"name": "starts", "env": ENV_ID, "variants": listed, "seeds": 1, "total_timesteps": 256,
            "ppo": {"n_steps": 128, "batch_size": 64}, "runs_dir": "runs"}


def test_validate_names_every_degenerate_variant_and_shows_keyframe_starts(tmp_path):
    spec = spec_for(tmp_path, sunken=SUNKEN, home=SUNKEN_WITH_HOME, frozen=FROZEN)
    spec["variants"][2]["env_kwargs"] = {"reset_noise_scale": 0.0}
    path = write_spec(tmp_path, spec)
    done = run_sweep("validate", str(path), cwd=tmp_path)
    assert done.returncode == 2
    [error] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "2 of 3 variants broken" in error and "variant 'sunken'" in error and "variant 'frozen'" in error
    assert "[check penetration]" in error and "[check constant_obs]" in error
    assert "start: keyframe 'home'" in " ".join(done.stdout.split())
    assert not (tmp_path / "runs").exists()


def test_the_spec_can_downgrade_a_check(tmp_path):
    spec = {**spec_for(tmp_path, sunken=SUNKEN), "warn_only": ["penetration", "short_episodes"]}
    done = run_sweep("validate", str(write_spec(tmp_path, spec)), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "warning:" in done.stdout
    bad = {**spec, "warn_only": ["deep_floor"]}
    done = run_sweep("validate", str(write_spec(tmp_path, bad)), cwd=tmp_path)
    assert done.returncode == 2 and "warn_only" in done.stderr


def test_a_height_check_that_is_off_is_said(tmp_path):
    floating = FROZEN.replace('<body name="torso" pos="0 0 1">', '<body name="torso" pos="0 0 0">').replace(
        'gear="0"', 'gear="1"')
    probe = probe_env(ENV_ID, xml_file(tmp_path, floating), {})
    assert probe.notes == ("no height check: the root starts at z 0.000, so healthy_z_scale gives no range "
                           "(set healthy_z_range)",)
    assert probe_env(ENV_ID, xml_file(tmp_path, floating), {"healthy_z_range": [-1, 1]}).notes == ()
