"""An env's physics state without its model (robots/physics_state.py) and the file format it is stored in
(sweepdir/arraytree.py): put back into a fresh MjData, the next steps are the same to the bit, and so are the
quantities a reward reads before its step; the file reads back without pickle, each value as it was."""

from __future__ import annotations

import io
import random
from pathlib import Path

import mujoco
import numpy as np
import pytest

from helpers.models import TINY_XML
from mjsweep.robots.physics_state import PhysicsState
from mjsweep.sweepdir import arraytree


def stepped(model: mujoco.MjModel, steps: int, seed: int = 0) -> mujoco.MjData:
    data = mujoco.MjData(model)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        data.ctrl[:] = rng.uniform(-1, 1, model.nu)
        mujoco.mj_step(model, data)
    return data


def test_a_restored_state_steps_on_exactly_and_keeps_what_a_reward_reads_before_its_step(tmp_path):
    model = mujoco.MjModel.from_xml_path(str(TINY_XML))
    data = stepped(model, 57)
    physics = PhysicsState(model)
    path = tmp_path / "state.npz"
    with open(path, "wb") as fh:
        arraytree.write(fh, physics.capture(data))
    saved = arraytree.read(str(path))
    assert saved["arrays"].nbytes + saved["state"].nbytes == physics.nbytes < 10_000  # no model in it
    restored = mujoco.MjData(model)
    physics.restore(restored, saved)
    # after mj_step, xpos belongs to the positions before the integration: mj_forward would give others
    recomputed = mujoco.MjData(model)
    physics.restore(recomputed, saved)
    mujoco.mj_forward(model, recomputed)
    assert np.array_equal(restored.xpos, data.xpos) and not np.array_equal(recomputed.xpos, data.xpos)
    rng = np.random.default_rng(1)
    for _ in range(40):
        restored.ctrl[:] = data.ctrl[:] = rng.uniform(-1, 1, model.nu)
        mujoco.mj_step(model, data)
        mujoco.mj_step(model, restored)
    for name, _, _ in physics.layout:
        assert np.array_equal(getattr(restored, name), getattr(data, name), equal_nan=True), name
    assert restored.time == data.time


def test_a_state_of_another_model_is_refused():
    model = mujoco.MjModel.from_xml_path(str(TINY_XML))
    saved = PhysicsState(model).capture(stepped(model, 3))
    other = mujoco.MjModel.from_xml_string("<mujoco><worldbody><body><freejoint/><geom size='.1'/></body>"
                                           "</worldbody></mujoco>")
    with pytest.raises(ValueError, match="another model"):
        PhysicsState(other).restore(mujoco.MjData(other), saved)


def test_a_tree_reads_back_as_written_without_pickle(tmp_path: Path):
    tree = {"ints": [1, 2**100, -3], "float": 0.1 + 0.2, "nan": float("nan"), "flag": True, "none": None,
            "tuple": ("MT19937", np.arange(4, dtype=np.uint32), 3, 0, 0.0), "scalar": np.float32(1.5),
            "nested": {"random": random.getstate(), "empty": np.empty((0, 3))}}
    path = tmp_path / "tree.npz"
    with open(path, "wb") as fh:
        arraytree.write(fh, tree)
    back = arraytree.read(str(path))
    assert back["ints"] == [1, 2**100, -3] and back["float"] == 0.1 + 0.2 and np.isnan(back["nan"])
    assert back["flag"] is True and back["none"] is None
    assert isinstance(back["tuple"], tuple) and back["tuple"][0] == "MT19937"
    assert back["tuple"][1].dtype == np.uint32 and back["tuple"][1].tolist() == [0, 1, 2, 3]
    assert type(back["scalar"]) is np.float32 and back["scalar"] == 1.5
    assert back["nested"]["random"] == random.getstate() and back["nested"]["empty"].shape == (0, 3)
    random.setstate(back["nested"]["random"])  # as Python's generator takes it


@pytest.mark.parametrize("value", [np.array([object()]), {1: "key"}, {"__tuple__": 1}, object()])
def test_what_would_need_pickle_is_refused(value):
    with pytest.raises(TypeError):
        arraytree.write(io.BytesIO(), {"value": value})


def test_a_file_that_is_not_an_npz_is_a_value_error(tmp_path):
    path = tmp_path / "exact.npz"
    path.write_bytes(b"\x80\x04not a zip")
    with pytest.raises(ValueError):
        arraytree.read(str(path))
