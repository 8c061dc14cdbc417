"""Deep validation: every variant is compiled, built and stepped with random actions before anything
runs; all broken variants are named in one error line, and `sweep validate` still prints its table."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

from helpers.commands import run_sweep, write_spec
from helpers.models import XML_DIR
from mjsweep.engine.sweep import BrokenVariantsError, prepare
from mjsweep.robots.envs import EnvBuildError, probe_env

WALKER = XML_DIR / "planar_walker.xml"

SYNTAX_ERROR = "<mujoco><worldbody><body name='a'><geom size='0.1'/></worldbody></mujoco>"
UNKNOWN_ATTRIBUTE = WALKER.read_text().replace('<geom name="torso_geom"', '<geom name="torso_geom" sise="1"')
# A massless whip on a very strong motor with a coarse time step: MuJoCo diverges at once.
UNSTABLE = """<mujoco model="unstable">
  <option timestep="0.05"/>
  <worldbody>
    <geom name="floor" type="plane" size="10 10 0.1"/>
    <body name="torso" pos="0 0 0.5">
      <joint name="x" type="slide" axis="1 0 0"/>
      <joint name="z" type="slide" axis="0 0 1"/>
      <joint name="pitch" type="hinge" axis="0 1 0"/>
      <geom type="capsule" size="0.05" fromto="0 0 0 0.3 0 0" density="1"/>
      <body name="whip" pos="0.3 0 0">
        <joint name="crack" type="hinge" axis="0 1 0"/>
        <geom type="capsule" size="0.01" fromto="0 0 0 0.3 0 0" density="0.001"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="crack" gear="100000" ctrlrange="-1 1"/></actuator>
</mujoco>
"""
NO_ACTUATORS = WALKER.read_text().split("<actuator>")[0] + "</mujoco>\n"


def spec_with(tmp_path, **xmls: str) -> dict:
    variants = [{"name": "good", "xml": str(WALKER)}]
    for name, text in xmls.items():
        (tmp_path / f"{name}.xml").write_text(text)
        variants.append({"name": name, "xml": f"{name}.xml"})
    return {"name": "deep", "env": "mjsweep/Locomotion-v0", "variants": variants, "seeds": 1,
            "total_timesteps": 256, "ppo": {"n_steps": 128, "batch_size": 64}, "runs_dir": "runs"}


def test_every_broken_variant_is_found_and_named(tmp_path):
    path = write_spec(tmp_path, spec_with(tmp_path, syntax=SYNTAX_ERROR, attribute=UNKNOWN_ATTRIBUTE,
                                          unstable=UNSTABLE, inert=NO_ACTUATORS))
    with pytest.raises(BrokenVariantsError) as info:
        prepare(path)
    message = str(info.value)
    assert "\n" not in message
    assert "4 of 5 variants broken" in message
    assert "variant 'syntax': MuJoCo cannot compile it: XML parse error" in message
    assert "variant 'attribute': MuJoCo cannot compile it:" in message and "sise" in message
    assert "variant 'unstable': env 'mjsweep/Locomotion-v0': unstable: MuJoCo warned BADQACC" in message
    assert "variant 'inert':" in message and "does the XML have actuators?" in message
    verdicts = {c.variant.name: c.problem for c in info.value.plan.checks}
    assert verdicts["good"] is None and all(verdicts[n] for n in ("syntax", "attribute", "unstable", "inert"))


def test_validate_prints_the_table_and_exits_2(tmp_path):
    path = write_spec(tmp_path, spec_with(tmp_path, syntax=SYNTAX_ERROR, unstable=UNSTABLE))
    done = run_sweep("validate", str(path), cwd=tmp_path)
    assert done.returncode == 2
    assert "huge value in QACC" not in done.stdout + done.stderr  # MuJoCo's own print is muted
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()
    rows = {line.split("│")[1].strip(): line for line in done.stdout.splitlines() if line.count("│") > 5}
    assert set(rows) >= {"good", "syntax", "unstable"}
    assert "ok" in rows["good"] and "BROKEN" in rows["syntax"] and "BROKEN" in rows["unstable"]
    assert "13" in rows["good"]  # the obs size of the planar walker
    [error] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "variant 'syntax'" in error and "variant 'unstable'" in error


def test_run_refuses_broken_variants_and_writes_nothing(tmp_path):
    path = write_spec(tmp_path, spec_with(tmp_path, unstable=UNSTABLE))
    done = run_sweep("run", str(path))
    assert done.returncode == 2
    assert "variant 'unstable'" in done.stderr
    assert not (tmp_path / "runs").exists()


def test_validate_and_dry_run_pass_good_variants(tmp_path):
    path = write_spec(tmp_path, spec_with(tmp_path))
    done = run_sweep("validate", str(path))
    assert done.returncode == 0, done.stderr
    assert "ok" in done.stdout and "BROKEN" not in done.stdout
    dry = run_sweep("run", str(path), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    [row] = [line for line in dry.stdout.splitlines() if "planar_walker.xml" in line]
    assert "│ 13 " in row and " ok " in row  # the variant table: obs size and verdict
    assert "dry run: 1 to start" in dry.stdout and not (tmp_path / "runs").exists()


class NaNAfterSteps(gymnasium.Env):
    """An env whose observation turns NaN after a while, as a diverging simulation's would."""

    observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (3,))
    action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,))

    def __init__(self, xml_file: str):
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(3, dtype=np.float32), {}

    def step(self, action):
        self.steps += 1
        obs = np.full(3, np.nan if self.steps >= 150 else 0.0, dtype=np.float32)
        return obs, 0.0, False, False, {}


def test_a_nan_observation_is_caught_at_its_step():
    with pytest.raises(EnvBuildError, match="the observation is not finite at random step 150"):
        probe_env("test_deep_validation:NaNAfterSteps", WALKER, {})
