"""Parametric variants: MjSpec edits, edit grids, their spec errors, and the generated XML in the run dir."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium
import mujoco
import numpy as np
import pytest

from helpers.commands import run_sweep
from helpers.models import XML_DIR
from mjsweep.engine.sweep import prepare
from mjsweep.errors import SpecError
from mjsweep.robots.edits import EditError, generate, grid_points, point_suffix
from mjsweep.spec import loading
from mjsweep.spec.editspec import EditSpec
from mjsweep.spec.locator import SpecLocator

WALKER = XML_DIR / "planar_walker.xml"
QUAD = XML_DIR / "quadruped.xml"


def edited(xml, *edits, point=None) -> mujoco.MjModel:
    text = generate(xml, [EditSpec.model_validate(e) for e in edits], point or {}).text
    return mujoco.MjModel.from_xml_string(text)


def test_scale_body_scales_geoms_and_child_positions_of_the_subtree():
    base = mujoco.MjModel.from_xml_path(str(WALKER))
    model = edited(WALKER, {"scale_body": {"body": "left_thigh", "factor": 1.5}})
    for name in ("left_thigh_geom", "left_shin_geom"):
        gid = base.geom(name).id
        assert np.allclose(model.geom_size[gid], 1.5 * base.geom_size[gid], atol=1e-5)
    shin = base.body("left_shin").id
    assert np.allclose(model.body_pos[shin], 1.5 * base.body_pos[shin])
    # The scaled body stays where it was attached; the other leg is untouched.
    assert np.allclose(model.body_pos[base.body("left_thigh").id], base.body_pos[base.body("left_thigh").id])
    right = base.geom("right_shin_geom").id
    assert np.allclose(model.geom_size[right], base.geom_size[right])


def test_mass_density_and_position_edits():
    base = mujoco.MjModel.from_xml_path(str(QUAD))
    torso = base.body("torso").id
    model = edited(QUAD, {"mass": {"body": "torso", "value": 3.0}},
                   {"density": {"body": "front_left_leg", "factor": 2}},
                   {"body_pos": {"body": "torso", "value": [0, 0, 0.6]}})
    assert model.body_mass[torso] == pytest.approx(3.0, rel=1e-4)
    leg = base.body("front_left_leg").id
    assert model.body_mass[leg] == pytest.approx(2 * base.body_mass[leg], rel=1e-4)
    assert np.allclose(model.body_pos[torso], [0, 0, 0.6])
    assert edited(QUAD, {"mass": {"body": "torso", "factor": 0.5}}).body_mass[torso] == pytest.approx(
        0.5 * base.body_mass[torso], rel=1e-4)


def test_actuator_and_joint_edits():
    model = edited(WALKER, {"gear": {"actuator": "left_hip", "value": 80}},
                   {"gear": {"actuator": ["right_hip", "right_knee"], "factor": 0.5}},
                   {"ctrlrange": {"actuator": "left_knee", "value": [-0.5, 0.5]}},
                   {"joint_range": {"joint": "left_hip", "value": [-30, 45]}},
                   {"damping": {"joint": "left_knee", "value": 2.0}},
                   {"stiffness": {"joint": "right_knee", "value": 7.0}})
    assert model.actuator_gear[model.actuator("left_hip").id, 0] == 80
    assert model.actuator_gear[model.actuator("right_hip").id, 0] == 20
    assert model.actuator_gear[model.actuator("right_knee").id, 0] == 20
    assert np.allclose(model.actuator_ctrlrange[model.actuator("left_knee").id], [-0.5, 0.5])
    # The XML says angle="degree": values are in degrees, the compiled model in radians.
    assert np.allclose(model.jnt_range[model.joint("left_hip").id], np.radians([-30, 45]), atol=1e-5)
    assert model.dof_damping[model.joint("left_knee").dofadr[0]] == pytest.approx(2.0)
    assert model.jnt_stiffness[model.joint("right_knee").id] == pytest.approx(7.0)


def test_a_missing_name_lists_the_names_that_exist():
    with pytest.raises(EditError) as info:
        generate(WALKER, [EditSpec.model_validate({"scale_body": {"body": "left_leg", "factor": 2}})], {})
    assert "no body named 'left_leg'" in str(info.value)
    assert "left_shin, left_thigh, right_shin, right_thigh, torso" in str(info.value)
    assert info.value.index == 0


@pytest.mark.parametrize("edit, expected", [
    ({"scale_body": {"body": "torso", "factor": -1}}, "factor must be positive"),
    ({"ctrlrange": {"actuator": "left_hip", "value": [1, -1]}}, "low < high"),
    ({"body_pos": {"body": "torso", "value": [0, 1]}}, "list of 3 numbers"),
    ({"damping": {"joint": "left_hip", "value": "soft"}}, "finite number"),
])
def test_bad_values_are_edit_errors(edit, expected):
    with pytest.raises(EditError, match=expected):
        generate(WALKER, [EditSpec.model_validate(edit)], {})


def test_generation_is_deterministic_and_the_hash_follows_the_values():
    edits = [EditSpec.model_validate({"scale_body": {"body": "left_thigh", "factor": "${legs}"}})]
    a, again = generate(WALKER, edits, {"legs": 1.25}), generate(WALKER, edits, {"legs": 1.25})
    assert (a.text, a.sha256) == (again.text, again.sha256)
    assert generate(WALKER, edits, {"legs": 1.5}).sha256 != a.sha256


def test_grid_points_and_names():
    points = grid_points({"legs": [1.0, 1.25], "gear": [20]})
    assert points == [{"legs": 1.0, "gear": 20}, {"legs": 1.25, "gear": 20}]
    assert point_suffix(points[1]) == "_legs=1.25_gear=20"
    assert grid_points({}) == [{}]


GRID_SPEC = f"""name: morph
env: mjsweep/Locomotion-v0
max_episode_steps: 50
variants:
  - name: w
    base: {WALKER}
    edits:
      - scale_body: {{body: [left_thigh, right_thigh], factor: "${{legs}}"}}
      - gear: {{actuator: left_hip, factor: "${{motors}}"}}
    edit_grid:
      legs: [0.8, 1.25]
      motors: [1.0, 2.0]
seeds: 1
total_timesteps: 256
ppo: {{n_steps: 128, batch_size: 64, n_epochs: 1}}
eval: {{episodes: 1}}
runs_dir: runs
"""


def test_edit_grid_makes_named_variants_with_distinct_run_ids(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(GRID_SPEC)
    plan = prepare(path, check_envs=False)
    names = [c.variant.name for c in plan.checks]
    assert names == ["w_legs=0.8_motors=1.0", "w_legs=0.8_motors=2.0", "w_legs=1.25_motors=1.0",
                     "w_legs=1.25_motors=2.0"]
    assert len({r.run_id for r in plan.runs}) == 4
    # Each run names its own model's content (its snapshot is written with the run's folder); nothing is written yet.
    assert len({r.xml_sha256 for r in plan.runs}) == 4
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("change, expected", [
    (('"${legs}"', '"${leg}"'), "variants[0].edits[0].scale_body: '${leg}' is not a placeholder"),
    (("      motors: [1.0, 2.0]\n", "      motors: [1.0, 2.0]\n      spare: [1]\n"),
     "variants[0].edit_grid.spare: no edit uses '${spare}'"),
    (("left_hip, factor", "left_hip, value: 3, factor"), "give exactly one of 'value' and 'factor'"),
    (("- gear: {", "- gears: {"), "unknown key (allowed: scale_body, mass, density, body_pos, gear"),
    (("{body: [left_thigh, right_thigh], factor", "{body: [left_thigh, right_thigh], scale"),
     "scale_body.scale: unknown key (allowed: body, factor)"),
    (("    base:", "    xml: x.xml\n    base:"), "give exactly one of 'xml'"),
    (("left_thigh, right_thigh", "left_thigh, right_leg"), "no body named 'right_leg' (the XML has: left_shin"),
])
def test_spec_errors_name_the_line_and_key(tmp_path, change, expected):
    path = tmp_path / "spec.yaml"
    path.write_text(GRID_SPEC.replace(*change))
    with pytest.raises(SpecError) as info:
        prepare(path, check_envs=False)
    message = str(info.value).replace(str(tmp_path) + "/", "")
    assert message.startswith("spec.yaml:")
    assert expected in message


def test_missing_body_error_points_at_the_edit_line(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(GRID_SPEC.replace("left_thigh, right_thigh", "left_thigh, right_leg"))
    with pytest.raises(SpecError) as info:
        prepare(path, check_envs=False)
    message = str(info.value).replace(str(tmp_path) + "/", "")
    assert message.startswith("spec.yaml:8: variants[0].edits[0]: variant 'w_legs=0.8_motors=1.0': scale_body:")


def test_validate_exits_2_on_a_missing_body_and_writes_nothing(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(GRID_SPEC.replace("left_thigh, right_thigh", "left_thigh, right_leg"))
    done = run_sweep("validate", str(path), cwd=tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: {path}:8: variants[0].edits[0]:")
    assert "no body named 'right_leg' (the XML has: left_shin, left_thigh, right_shin, right_thigh, torso)" in line
    assert not (tmp_path / "runs").exists()


def test_edits_on_a_robot_from_gymnasium():
    """Gymnasium's own Ant: capsules given by fromto, limits in degrees, motors without names."""
    xml = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "ant.xml"
    base = mujoco.MjModel.from_xml_path(str(xml))
    model = edited(xml, {"scale_body": {"body": "front_left_leg", "factor": 1.5}},
                   {"gear": {"joint": ["hip_1", "ankle_1"], "factor": 2}},
                   {"ctrlrange": {"joint": "hip_2", "value": [-0.5, 0.5]}},
                   {"joint_range": {"joint": "hip_1", "value": [-40, 40]}})
    for geom in ("aux_1_geom", "left_leg_geom", "left_ankle_geom"):  # radius and half-length of each capsule
        assert np.allclose(model.geom_size[base.geom(geom).id], 1.5 * base.geom_size[base.geom(geom).id])
    aux = base.body("aux_1").id
    assert np.allclose(model.body_pos[aux], 1.5 * base.body_pos[aux])
    gear = {model.joint(model.actuator_trnid[a, 0]).name: model.actuator_gear[a, 0] for a in range(model.nu)}
    assert gear["hip_1"] == gear["ankle_1"] == 300 and gear["hip_3"] == 150
    hip_2 = next(a for a in range(model.nu) if model.actuator_trnid[a, 0] == base.joint("hip_2").id)
    assert np.allclose(model.actuator_ctrlrange[hip_2], [-0.5, 0.5])
    assert np.allclose(model.jnt_range[model.joint("hip_1").id], np.radians([-40, 40]), atol=1e-5)
    with pytest.raises(EditError, match="no actuator drives joint 'root' \\(actuated: ankle_1, ankle_2"):
        generate(xml, [EditSpec.model_validate({"gear": {"joint": "root", "value": 1}})], {})


def test_resolved_spec_with_edits_loads_again(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(GRID_SPEC)
    dumped = prepare(path, check_envs=False).spec.model_dump(mode="json")
    again = loading.parse(dumped, SpecLocator(path, None))
    assert again.variants[0].edits[1].op == "gear"


def test_sweep_run_trains_the_generated_xml_from_the_sweeps_snapshot(tmp_path):
    spec = GRID_SPEC.replace("legs: [0.8, 1.25]", "legs: [1.25]").replace("motors: [1.0, 2.0]", "motors: [2.0]")
    (tmp_path / "my specs").mkdir()
    path = tmp_path / "my specs" / "spec.yaml"
    path.write_text(spec)
    done = run_sweep("run", str(path), "-w", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    [run_dir] = [p for p in (path.parent / "runs" / "morph").iterdir() if (p / "spec.json").is_file()]
    run_spec = json.loads((run_dir / "spec.json").read_text())
    xml = Path(run_spec["xml"])
    assert xml.parent == run_dir.parent / "snapshots" / "models" / run_spec["xml_sha256"]
    model = mujoco.MjModel.from_xml_path(str(xml))
    assert model.actuator_gear[model.actuator("left_hip").id, 0] == 80
    assert "eval_mean_return" in json.loads((run_dir / "result.json").read_text())
