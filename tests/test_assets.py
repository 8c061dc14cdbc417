"""Models beyond one file: <include> and meshes relative to the XML's folder, from any working directory,
in generated variants, and in the content hash behind the run ids."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import mujoco
import pytest

from helpers.commands import run_sweep, write_spec
from helpers.models import XML_DIR
from mjsweep.engine.sweep import prepare
from mjsweep.robots.edits import generate
from mjsweep.robots.modelfiles import model_files, model_sha256
from mjsweep.robots.variants import materialize
from mjsweep.spec.editspec import EditSpec

MAIN = """<mujoco model="meshbot">
  <compiler meshdir="meshes" autolimits="true"/>
  <asset><mesh name="hull" file="hull.obj"/></asset>
  <worldbody>
    <geom name="floor" type="plane" size="10 10 0.1"/>
    <body name="torso" pos="0 0 0.3">
      <freejoint/>
      <geom name="hull" type="mesh" mesh="hull" density="300"/>
      <body name="leg" pos="0.1 0 -0.05">
        <joint name="hip" axis="0 1 0" range="-0.5 0.5"/>
        <geom name="leg_geom" type="capsule" size="0.03" fromto="0 0 0 0 0 -0.2"/>
      </body>
    </body>
  </worldbody>
  <include file="parts/actuators.xml"/>
</mujoco>
"""
ACTUATORS = """<mujoco>
  <actuator><motor name="hip" joint="hip" gear="5" ctrlrange="-1 1"/></actuator>
</mujoco>
"""


def box_obj(half: float) -> str:
    """A closed box mesh in OBJ format, 2*half wide."""
    corners = [(x, y, z) for z in (-half, half) for y in (-half, half) for x in (-half, half)]
    faces = [(1, 3, 4), (1, 4, 2), (5, 6, 8), (5, 8, 7), (1, 2, 6), (1, 6, 5),
             (3, 7, 8), (3, 8, 4), (1, 5, 7), (1, 7, 3), (2, 4, 8), (2, 8, 6)]
    return "".join(f"v {x} {y} {z}\n" for x, y, z in corners) + "".join(f"f {a} {b} {c}\n" for a, b, c in faces)


@pytest.fixture
def robot(tmp_path) -> Path:
    """robot dir/main.xml including parts/actuators.xml, with meshes/hull.obj; paths with spaces."""
    folder = tmp_path / "robot dir"
    (folder / "parts").mkdir(parents=True)
    (folder / "meshes").mkdir()
    (folder / "main.xml").write_text(MAIN)
    (folder / "parts" / "actuators.xml").write_text(ACTUATORS)
    (folder / "meshes" / "hull.obj").write_text(box_obj(0.1))
    return folder / "main.xml"


def spec_for(variant: dict) -> dict:
    return {"name": "assets", "env": "mjsweep/Locomotion-v0", "max_episode_steps": 50, "variants": [variant],
            "seeds": 1, "total_timesteps": 256, "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1},
            "eval": {"episodes": 1}, "runs_dir": "runs"}


def test_model_files_lists_the_includes_and_meshes(robot):
    folder = robot.parent
    assert model_files(robot) == [robot, folder / "parts" / "actuators.xml", folder / "meshes" / "hull.obj"]


def test_a_nested_include_next_to_the_file_that_includes_it(robot):
    """MuJoCo looks for an include in the main XML's folder, then next to the including file."""
    parts = robot.parent / "parts"
    (parts / "actuators.xml").write_text("<mujoco><include file='motor.xml'/></mujoco>")
    (parts / "motor.xml").write_text(ACTUATORS)
    assert model_files(robot)[1:3] == [parts / "actuators.xml", parts / "motor.xml"]
    assert mujoco.MjModel.from_xml_path(str(robot)).nu == 1
    before = model_sha256(robot)
    (parts / "motor.xml").write_text(ACTUATORS.replace('gear="5"', 'gear="6"'))
    assert model_sha256(robot) != before


def test_a_single_file_model_hashes_as_its_bytes():
    xml = XML_DIR / "planar_walker.xml"
    assert model_sha256(xml) == hashlib.sha256(xml.read_bytes()).hexdigest()


def test_editing_an_included_file_or_a_mesh_gives_new_run_ids(robot, tmp_path):
    path = write_spec(tmp_path / "specs", spec_for({"name": "bot", "xml": str(robot)}))

    def run_id() -> str:
        [run] = prepare(path, check_envs=False).runs
        return run.run_id

    first = run_id()
    assert run_id() == first
    (robot.parent / "parts" / "actuators.xml").write_text(ACTUATORS.replace('gear="5"', 'gear="6"'))
    second = run_id()
    (robot.parent / "meshes" / "hull.obj").write_text(box_obj(0.12))
    third = run_id()
    assert len({first, second, third}) == 3


def test_validate_and_run_from_another_working_directory(robot, tmp_path):
    """The model as is and an edited variant of it, both reading the include and the mesh."""
    spec = spec_for({"name": "bot", "xml": "../robot dir/main.xml"})
    spec["variants"].append({"name": "edited", "base": "../robot dir/main.xml",
                             "edits": [{"scale_body": {"body": "leg", "factor": 1.2}}]})
    path = write_spec(tmp_path / "specs", spec)
    elsewhere = tmp_path / "somewhere else"
    elsewhere.mkdir()
    checked = run_sweep("validate", str(path), cwd=elsewhere)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.count(" ok ") == 2
    done = run_sweep("run", str(path), "-w", "2", cwd=elsewhere)
    assert done.returncode == 0, done.stdout + done.stderr
    results = sorted((tmp_path / "specs" / "runs" / "assets").glob("*/result.json"))
    assert len(results) == 2 and all("eval_mean_return" in json.loads(r.read_text()) for r in results)
    [edited] = (tmp_path / "specs" / "runs" / "assets").glob("edited_*/spec.json")
    variant_xml = json.loads(edited.read_text())["xml"]
    assert variant_xml.startswith(str(tmp_path / "specs" / "runs" / "assets" / "snapshots"))
    assert mujoco.MjModel.from_xml_path(variant_xml).nmesh == 1


def test_a_generated_variant_keeps_includes_and_meshes_working(robot, tmp_path):
    edits = [EditSpec.model_validate({"gear": {"actuator": "hip", "factor": 2}}),
             EditSpec.model_validate({"scale_body": {"body": "leg", "factor": 1.5}})]
    generated = generate(robot, edits, {})
    elsewhere = tmp_path / "another folder"
    elsewhere.mkdir()
    (elsewhere / "variant.xml").write_text(generated.text)
    model = mujoco.MjModel.from_xml_path(str(elsewhere / "variant.xml"))
    assert model.nmesh == 1 and model.actuator_gear[0, 0] == 10  # the motor came from the include
    (robot.parent / "meshes" / "hull.obj").write_text(box_obj(0.12))
    assert generate(robot, edits, {}).sha256 != generated.sha256


def test_a_generated_variant_runs_through_prepare(robot, tmp_path):
    variant = {"name": "bot", "base": str(robot), "edits": [{"gear": {"actuator": "hip", "factor": "${g}"}}],
               "edit_grid": {"g": [1.0, 3.0]}}
    plan = prepare(write_spec(tmp_path / "specs", spec_for(variant)))
    assert [c.problem for c in plan.checks] == [None, None]
    local = materialize(plan.checks[1].variant, tmp_path)
    assert mujoco.MjModel.from_xml_path(str(local.xml)).actuator_gear[0, 0] == 15


def test_scale_body_scales_mesh_geoms_through_a_scaled_copy_of_their_mesh(robot, tmp_path):
    base = mujoco.MjModel.from_xml_path(str(robot))
    generated = generate(robot, [EditSpec.model_validate({"scale_body": {"body": "torso", "factor": 2}})], {})
    (tmp_path / "variant.xml").write_text(generated.text)
    model = mujoco.MjModel.from_xml_path(str(tmp_path / "variant.xml"))
    hull = model.geom("hull").id
    assert model.mesh(int(model.geom_dataid[hull])).name == "hull_scaled_2"
    assert model.geom_rbound[hull] == pytest.approx(2 * base.geom_rbound[base.geom("hull").id])
    torso = base.body("torso").id  # the mesh's volume, and with its density its mass, grow 8 times
    assert model.body_mass[torso] == pytest.approx(8 * base.body_mass[torso], rel=1e-6)
