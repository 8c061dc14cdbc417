"""Randomized edits applied to compiled models: field writes equal to a recompile, no compounding, and
draws that follow their laws and come from the run's seed alone."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from scipy import stats

from helpers.models import ANYMAL_XML, XML_DIR
from mjsweep.robots import draws
from mjsweep.robots.randomize import Randomizer, compile_draw
from mjsweep.spec.randomspec import RandomizedEdit, parse_distribution

WALKER = XML_DIR / "tiny_walker.xml"

WALKER_EDITS = [
    {"mass": {"body": "torso", "factor": {"uniform": [0.5, 2]}}},
    {"friction": {"body": "front_leg", "value": {"uniform": [0.2, 1.5]}}},
    {"damping": {"joint": "*_hip", "factor": {"log_uniform": [0.2, 3]}}},
    {"armature": {"joint": "back_hip", "value": {"uniform": [0.01, 0.2]}}},
    {"frictionloss": {"joint": "back_hip", "value": {"uniform": [0.0, 0.2]}}},
    {"stiffness": {"joint": "front_hip", "value": {"normal": {"mean": 1, "std": 0.5, "low": 0, "high": 2}}}},
    {"gear": {"joint": "front_hip", "factor": {"choice": [0.5, 1, 2]}}},
    {"ctrlrange": {"actuator": "back_hip", "factor": {"uniform": [0.5, 2]}}},
    {"forcerange": {"actuator": "back_hip", "value": [{"uniform": [-30, -10]}, {"uniform": [10, 30]}]}},
]

ANYMAL_EDITS = [
    {"mass": {"body": "base", "value": {"uniform": [15, 25]}}},
    {"kp": {"actuator": "re:.*_KFE", "factor": {"uniform": [0.7, 1.3]}}},
    {"kv": {"actuator": "*_HAA", "value": {"uniform": [0.5, 5]}}},
    {"forcerange": {"actuator": "LF_HFE", "factor": {"uniform": [0.6, 1.0]}}},
    {"friction": {"body": "*_SHANK", "factor": {"uniform": [0.4, 1.2]}}},
]


def randomized(edits) -> list[RandomizedEdit]:
    return [RandomizedEdit.model_validate(e) for e in edits]


def numeric_fields(model) -> dict[str, np.ndarray]:
    return {name: value for name in dir(model) if not name.startswith("_")
            and isinstance(value := getattr(model, name), np.ndarray)}


def assert_same_fields(model, reference) -> None:
    ours, theirs = numeric_fields(model), numeric_fields(reference)
    assert ours.keys() == theirs.keys()
    differing = [name for name, value in theirs.items()
                 if value.shape != ours[name].shape or not np.allclose(ours[name], value, rtol=1e-9, atol=1e-12)]
    assert differing == []


@pytest.mark.parametrize("xml, edits, episodes", [
    (WALKER, WALKER_EDITS, 4),
    # Compiling ANYmal C reads its meshes and textures: seconds per compile.
    pytest.param(ANYMAL_XML, ANYMAL_EDITS, 2, marks=pytest.mark.slow),
], ids=["tiny_walker", "anymal_c"])
def test_field_writes_equal_the_recompiled_model_field_by_field(xml, edits, episodes):
    randomizer = Randomizer(xml, randomized(edits))
    assert not randomizer.structural
    model = mujoco.MjModel.from_xml_path(str(xml))
    data = mujoco.MjData(model)
    for episode in range(episodes):
        values = draws.draw(randomizer.slots, seed=3, stream=draws.TRAIN, env_index=0, episode=episode)
        assert randomizer.model_for(model, data, values) is model  # written in place
        assert_same_fields(model, compile_draw(xml, randomizer.template, values))


def test_no_compounding_after_ten_thousand_resets():
    randomizer = Randomizer(WALKER, randomized(WALKER_EDITS))
    model = mujoco.MjModel.from_xml_path(str(WALKER))
    data = mujoco.MjData(model)
    for episode in range(10_000):
        values = draws.draw(randomizer.slots, seed=11, stream=draws.TRAIN, env_index=1, episode=episode)
        randomizer.model_for(model, data, values)
    # Every field is nominal x the last draw, as the draw compiled from the nominal XML has it.
    assert_same_fields(model, compile_draw(WALKER, randomizer.template, values))


def test_a_structural_edit_recompiles_from_the_nominal_model():
    randomizer = Randomizer(WALKER, randomized([
        {"scale_body": {"body": "front_leg", "factor": {"uniform": [0.8, 1.2]}}},
        {"mass": {"body": "torso", "factor": {"uniform": [0.5, 2]}}}]))
    assert randomizer.structural
    nominal = mujoco.MjModel.from_xml_path(str(WALKER))
    geom = nominal.geom("front_leg_geom").id
    for episode in range(3):
        values = draws.draw(randomizer.slots, seed=0, stream=draws.TRAIN, env_index=0, episode=episode)
        model = randomizer.model_for(nominal, mujoco.MjData(nominal), values)
        assert model is not nominal
        assert model.geom_size[geom][1] == pytest.approx(nominal.geom_size[geom][1] * values["_draw0_factor"])
        assert model.body_mass[1] == pytest.approx(nominal.body_mass[1] * values["_draw1_factor"])


@pytest.mark.parametrize("raw, law", [
    ({"uniform": [0.5, 2.0]}, stats.uniform(0.5, 1.5)),
    ({"log_uniform": [0.1, 10.0]}, stats.loguniform(0.1, 10.0)),
    ({"normal": {"mean": 1.0, "std": 0.3, "low": 0.5, "high": 1.6}},
     stats.truncnorm((0.5 - 1.0) / 0.3, (1.6 - 1.0) / 0.3, loc=1.0, scale=0.3)),
])
def test_each_continuous_distribution_draws_its_law(raw, law):
    slot = draws.Slot(0, "factor", None, parse_distribution(raw), per_env=False)
    sample = [draws.draw([slot], seed=5, stream=draws.TRAIN, env_index=0, episode=i)[slot.label] for i in range(3000)]
    assert stats.kstest(sample, law.cdf).pvalue > 0.001


def test_choice_draws_each_value_equally_often():
    slot = draws.Slot(0, "factor", None, parse_distribution({"choice": [1, 2, 4]}), per_env=False)
    sample = [draws.draw([slot], seed=5, stream=draws.TRAIN, env_index=0, episode=i)[slot.label] for i in range(3000)]
    counts = [sample.count(v) for v in (1.0, 2.0, 4.0)]
    assert sum(counts) == 3000
    assert stats.chisquare(counts).pvalue > 0.001


def test_held_out_draws_are_disjoint_from_training_draws_and_vary_every_slot():
    slots = draws.slots(randomized([{"mass": {"body": "torso", "factor": {"uniform": [0.5, 2]}}},
                                    {"gear": {"joint": "front_hip", "factor": {"uniform": [0.5, 2]}}, "per": "env"}]))
    training = {value for env in range(4) for episode in range(250)
                for value in draws.draw(slots, 9, draws.TRAIN, env, episode).values()}
    held = [draws.held_out(slots, 9, i) for i in range(1000)]
    assert held[3] == draws.held_out(slots, 9, 3)
    assert not training & {value for values in held for value in values.values()}
    assert len({values["_draw1_factor"] for values in held}) == 1000  # a per-env slot too draws afresh


def test_draws_come_from_seed_env_and_episode_alone():
    slots = draws.slots(randomized(WALKER_EDITS[:2] + [{"gear": {"joint": "front_hip", "factor": {"uniform": [0.5, 2]},
                                                                 }, "per": "env"}]))
    first = draws.draw(slots, seed=1, stream=draws.TRAIN, env_index=0, episode=7)
    assert draws.draw(slots, seed=1, stream=draws.TRAIN, env_index=0, episode=7) == first
    other_env = draws.draw(slots, seed=1, stream=draws.TRAIN, env_index=1, episode=7)
    other_episode = draws.draw(slots, seed=1, stream=draws.TRAIN, env_index=0, episode=8)
    held_out = draws.draw(slots, seed=1, stream=draws.HELD_OUT, env_index=0, episode=7)
    for other in (other_env, other_episode, held_out, draws.draw(slots, seed=2, stream=draws.TRAIN, env_index=0,
                                                                 episode=7)):
        assert other["_draw0_factor"] != first["_draw0_factor"]
    # per: env draws once for the env, the same at every episode
    assert other_episode["_draw2_factor"] == first["_draw2_factor"]
    assert other_env["_draw2_factor"] != first["_draw2_factor"]
