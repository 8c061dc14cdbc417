"""The gymnasium wrapper that gives each episode of a training env its draw of the variant's randomized edits.

It wraps any env whose unwrapped layer holds a MuJoCo `model` and `data` (Gymnasium's MujocoEnv, and so
`mjsweep/Locomotion-v0` and every env that takes `xml_file`). At each reset it applies the next draw of its
env's stream (robots/draws.py) from the nominal model, then resets the env on it, and appends the draw to the
run's draws.jsonl. `draws_done` is its one counter: the exact state keeps it, and `mjsweep_redraw` puts back
the model of the episode under way after an exact resume.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium
import mujoco
import numpy as np

from ..spec.randomspec import RandomizedEdit
from ..sweepdir.files import read_lines
from ..sweepdir.models import DrawRecord
from . import draws as drawlib
from .randomize import Randomizer


class RandomizedEnv(gymnasium.Wrapper):
    def __init__(self, env: gymnasium.Env, xml: Path, edits: list[RandomizedEdit], seed: int, env_index: int,
                 draws_file: Path | None = None, stream: int = drawlib.TRAIN, first_episode: int = 0):
        super().__init__(env)
        if not isinstance(getattr(env.unwrapped, "data", None), mujoco.MjData):
            raise ValueError(f"randomize needs an env that simulates with MuJoCo ({type(env.unwrapped).__name__} "
                             "has no MjModel and MjData as its model and data)")
        self._randomizer = Randomizer(xml, edits)
        self._seed, self._env_index, self._stream = seed, env_index, stream
        self._names = [slot_name(slot, edits) for slot in self._randomizer.slots]
        self._file = open(draws_file, "a", encoding="utf-8", buffering=1) if draws_file else None
        self._applied: dict[str, float] | None = None
        self.draws_done = first_episode
        """Episodes drawn so far: the next reset takes draw number draws_done."""

    def reset(self, **kwargs: Any):
        values = self._apply(self.draws_done)
        if self._file is not None:
            record = DrawRecord(env=self._env_index, episode=self.draws_done,
                                values=dict(zip(self._names, values.values(), strict=True)))
            self._file.write(record.model_dump_json(by_alias=True) + "\n")
        self.draws_done += 1
        return self.env.reset(**kwargs)

    def mjsweep_redraw(self) -> None:
        """The model of the episode under way, after draws_done was set back by an exact resume."""
        if self.draws_done:
            self._apply(self.draws_done - 1)

    def _apply(self, episode: int) -> dict[str, float]:
        values = drawlib.draw(self._randomizer.slots, self._seed, self._stream, self._env_index, episode)
        if values == self._applied:  # per-env draws only: the model already is this draw's
            return values
        base: Any = self.env.unwrapped
        model = self._randomizer.model_for(base.model, base.data, values)
        if model is not base.model:
            _swap_model(base, model)
        self._applied = values
        return values

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        super().close()


def next_episodes(draws_file: Path, n_envs: int) -> list[int]:
    """Each env's first episode not in draws_file: where a resume that is not exact goes on drawing, so that it
    never trains on an episode's draw twice (an exact resume sets the count from its checkpoint)."""
    following = [0] * n_envs
    for record in read_lines(draws_file, DrawRecord):
        if record.env < n_envs:
            following[record.env] = max(following[record.env], record.episode + 1)
    return following


def _swap_model(base: Any, model: Any) -> None:
    """A recompiled model (and new data) in place of the env's; its start pose follows the new model's qpos0
    where the env took its start pose from the model's."""
    import mujoco

    old_qpos0 = np.array(base.model.qpos0)
    took_qpos0 = hasattr(base, "init_qpos") and np.array_equal(base.init_qpos, old_qpos0)
    base.model, base.data = model, mujoco.MjData(model)
    if took_qpos0:
        base.init_qpos = np.array(model.qpos0)
    renderer = getattr(base, "mujoco_renderer", None)
    if renderer is not None:
        renderer.model, renderer.data = base.model, base.data


def slot_name(slot: drawlib.Slot, edits: list[RandomizedEdit]) -> str:
    """randomize[0].mass.factor, randomize[2].forcerange.value[1]: where the spec wrote the distribution."""
    index = "" if slot.index is None else f"[{slot.index}]"
    return f"randomize[{slot.edit}].{edits[slot.edit].op}.{slot.key}{index}"
