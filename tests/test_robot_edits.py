"""Edits for real robots, on MuJoCo Menagerie's ANYmal C (../shared/robots): scaling bodies with visual
meshes and explicit inertials, servo gains and limits, joint armature and friction, geom friction, and
elements addressed by glob or regular expression."""

from __future__ import annotations

from pathlib import Path

import mujoco
import pytest

from mjsweep.robots.edits import EditError, generate
from mjsweep.spec.editspec import EditSpec

ROBOTS = Path(__file__).resolve().parents[2] / "shared" / "robots"
ANYMAL = ROBOTS / "anybotics_anymal_c" / "scene.xml"
H1 = ROBOTS / "unitree_h1" / "scene.xml"

pytestmark = pytest.mark.skipif(not ROBOTS.is_dir(), reason=f"{ROBOTS} is not there")


@pytest.fixture(scope="module")
def base():
    return mujoco.MjModel.from_xml_path(str(ANYMAL))


def edited(tmp_path, *edits: dict, xml: Path = ANYMAL) -> mujoco.MjModel:
    generated = generate(xml, [EditSpec.model_validate(e) for e in edits], {})
    path = tmp_path / "variant.xml"
    path.write_text(generated.text)
    return mujoco.MjModel.from_xml_path(str(path))


def test_scaling_a_leg_scales_its_meshes_mass_and_inertia(tmp_path, base):
    model = edited(tmp_path, {"scale_body": {"body": "LF_SHANK", "factor": 1.2}})
    shank = base.body("LF_SHANK").id
    assert model.body_mass[shank] == pytest.approx(1.2 ** 3 * base.body_mass[shank])
    assert model.body_inertia[shank] == pytest.approx(1.2 ** 5 * base.body_inertia[shank], rel=1e-5)
    assert model.body_ipos[shank] == pytest.approx(1.2 * base.body_ipos[shank])
    meshes = [g for g in range(model.ngeom) if model.geom_bodyid[g] == shank and model.geom_type[g] == 7]
    assert meshes and all(model.geom_rbound[g] == pytest.approx(1.2 * base.geom_rbound[g]) for g in meshes)
    other = base.body("LH_SHANK").id  # shares the shank mesh: left as it was
    others = [g for g in range(model.ngeom) if model.geom_bodyid[g] == other and model.geom_type[g] == 7]
    assert all(model.geom_rbound[g] == pytest.approx(base.geom_rbound[g]) for g in others)
    assert model.body_mass[other] == base.body_mass[other]


def test_a_kp_edit_keeps_the_servo_target(tmp_path, base):
    model = edited(tmp_path, {"kp": {"actuator": "LF_KFE", "value": 250}})
    knee = model.actuator("LF_KFE").id
    assert model.actuator_gainprm[knee, 0] == 250 and model.actuator_biasprm[knee, 1] == -250
    data = mujoco.MjData(model)
    joint = model.joint("LF_KFE")
    data.qpos[joint.qposadr[0]] = data.ctrl[knee] = 0.7  # at its target, a servo pushes not at all
    mujoco.mj_forward(model, data)
    assert data.actuator_force[knee] == pytest.approx(0.0, abs=1e-9)
    data.qpos[joint.qposadr[0]] = 0.6
    mujoco.mj_forward(model, data)
    assert data.actuator_force[knee] == pytest.approx(250 * 0.1)


def test_edits_address_elements_by_glob_regex_or_list(tmp_path, base):
    model = edited(tmp_path, {"kp": {"actuator": "*_KFE", "factor": 2}},
                   {"kv": {"joint": "re:[LR]F_H.*", "value": 3}},
                   {"forcerange": {"actuator": ["LH_HAA", "RH_HAA"], "factor": 1.5}})
    gains = {model.actuator(a).name: model.actuator_gainprm[a, 0] for a in range(model.nu)}
    assert {n: g for n, g in gains.items() if n.endswith("KFE")} == {n: 200 for n in gains if n.endswith("KFE")}
    assert gains["LF_HFE"] == 100
    damping = {model.actuator(a).name: -model.actuator_biasprm[a, 2] for a in range(model.nu)}
    assert [n for n, kv in damping.items() if kv == 3] == ["LF_HAA", "LF_HFE", "RF_HAA", "RF_HFE"]
    assert model.actuator_forcerange[model.actuator("LH_HAA").id] == pytest.approx([-120, 120])
    assert model.actuator_forcerange[model.actuator("LF_HAA").id] == pytest.approx([-80, 80])
    with pytest.raises(EditError, match=r"kp: no actuator name matches '\*_KNEE' \(the XML has: LF_HAA"):
        generate(ANYMAL, [EditSpec.model_validate({"kp": {"actuator": "*_KNEE", "value": 1}})], {})
    with pytest.raises(EditError, match="not a valid regular expression"):
        generate(ANYMAL, [EditSpec.model_validate({"kp": {"actuator": "re:(", "value": 1}})], {})


def test_joint_and_contact_edits(tmp_path, base):
    model = edited(tmp_path, {"armature": {"joint": "*_HAA", "value": 0.05}},
                   {"frictionloss": {"joint": "LF_KFE", "factor": 3}},
                   {"friction": {"body": "re:.*_SHANK", "value": 1.2}})
    haa = [model.jnt_dofadr[model.joint(f"{leg}_HAA").id] for leg in ("LF", "RF", "LH", "RH")]
    assert all(model.dof_armature[dof] == 0.05 for dof in haa)
    knee = model.jnt_dofadr[model.joint("LF_KFE").id]
    assert model.dof_frictionloss[knee] == pytest.approx(3 * base.dof_frictionloss[knee])
    shank = model.body("RH_SHANK").id
    colliding = [g for g in range(model.ngeom) if model.geom_bodyid[g] == shank and model.geom_contype[g]]
    visual = [g for g in range(model.ngeom) if model.geom_bodyid[g] == shank and not model.geom_contype[g]]
    assert colliding and all(model.geom_friction[g, 0] == 1.2 for g in colliding)
    assert all(model.geom_friction[g, 0] == base.geom_friction[g, 0] for g in visual)


def test_servo_edits_refuse_what_would_change_their_meaning(tmp_path):
    with pytest.raises(EditError, match="gear: actuator 'LF_KFE' is a position servo: gear would change its "
                       "target and its gain together; use kp, kv or forcerange"):
        generate(ANYMAL, [EditSpec.model_validate({"gear": {"actuator": "LF_KFE", "factor": 2}})], {})
    with pytest.raises(EditError, match="kp: actuator 'left_knee' is not a position servo"):
        generate(H1, [EditSpec.model_validate({"kp": {"actuator": "left_knee", "value": 50}})], {})
    with pytest.raises(EditError, match="kp must be positive"):
        generate(ANYMAL, [EditSpec.model_validate({"kp": {"actuator": "LF_KFE", "value": 0}})], {})


FROM_GEOMS = """<mujoco>
  <compiler inertiafromgeom="{mode}"/>
  <worldbody>
    <body name="torso" pos="0 0 1">
      <freejoint/>
      <inertial pos="0 0 0" mass="2" diaginertia="0.1 0.1 0.1"/>
      <geom type="capsule" size="0.05" fromto="0 0 0 0.3 0 0" density="1000"/>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.mark.parametrize("mode, mass_factor", [("auto", 1.5 ** 3), ("true", 1.5 ** 3), ("false", 1.5 ** 3)])
def test_scaled_mass_follows_the_inertial_or_the_geoms_as_the_model_asks(tmp_path, mode, mass_factor):
    xml = tmp_path / "body.xml"
    xml.write_text(FROM_GEOMS.format(mode=mode))
    before = mujoco.MjModel.from_xml_path(str(xml))
    after = edited(tmp_path, {"scale_body": {"body": "torso", "factor": 1.5}}, xml=xml)
    torso = before.body("torso").id
    assert after.body_mass[torso] == pytest.approx(mass_factor * before.body_mass[torso], rel=1e-5)
    if mode == "true":  # computed from the capsule: mass and inertia of a bigger capsule
        assert after.body_inertia[torso] == pytest.approx(1.5 ** 5 * before.body_inertia[torso], rel=1e-4)
    else:
        assert before.body_mass[torso] == 2
