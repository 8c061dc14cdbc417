"""A MuJoCo simulation's state as plain arrays, without its model: what an exact resume puts back into an env's
MjData (worker/exact.py) and what the disk estimate counts for it (plan/disk.py, through the env probe).

Two parts. MuJoCo's integration state (mj_getState with mjSTATE_INTEGRATION: time, positions, velocities,
actuator activations, the solver's warm start, controls, applied forces, mocap poses, user and plugin data),
which is everything the next mj_step reads. And every MjData array whose size the model fixes (positions of
bodies and geoms, contact forces on bodies, sensor values, ...): after mj_step these hold the quantities of the
positions before the integration, which a reward or an observation may read before its step, and which
mj_forward on the integrated state would compute differently. The arrays MuJoCo sizes per step (contacts,
constraint rows, islands) are left out: the next step computes them afresh.

The fixed arrays are packed into one byte array in the order of `layout()`, which the model and MuJoCo's
version fix; the layout is stored beside them, so a state from another model or version is refused.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

Layout = tuple[tuple[str, str, tuple[int, ...]], ...]
"""(name, dtype, shape) of each fixed MjData array, in the packed order."""


def layout(model: Any) -> Layout:
    """The fixed arrays of the model's MjData: those of non-zero size in a fresh one, which has no contacts or
    constraint rows yet, so that the arrays MuJoCo sizes per step are empty there; and views of its memory,
    not the copies the bindings give of what a step lays out in its arena (islands, their maps)."""
    import mujoco

    fresh = mujoco.MjData(model)
    names = [name for name in sorted(dir(fresh)) if not name.startswith("_")]
    return tuple((name, value.dtype.str, tuple(value.shape)) for name in names
                 if isinstance(value := getattr(fresh, name), np.ndarray) and value.size
                 and np.shares_memory(value, getattr(fresh, name)))


class PhysicsState:
    """Captures and restores the physics state of one model's MjData."""

    def __init__(self, model: Any):
        import mujoco

        self.model = model
        self.layout = layout(model)
        self.signature = int(mujoco.mjtState.mjSTATE_INTEGRATION)
        self.state_size = int(mujoco.mj_stateSize(model, self.signature))

    def _layout_list(self) -> list[list[Any]]:
        return [[name, dtype, list(shape)] for name, dtype, shape in self.layout]

    def capture(self, data: Any) -> dict[str, Any]:
        """The state of `data`, a copy: {"state": float64 array, "arrays": uint8 array, "layout": [[name,
        dtype, shape], ...]}."""
        import mujoco

        state = np.empty(self.state_size)
        mujoco.mj_getState(self.model, data, state, self.signature)
        packed = np.concatenate([np.ascontiguousarray(getattr(data, name)).reshape(-1).view(np.uint8)
                                 for name, _, _ in self.layout]) if self.layout else np.empty(0, np.uint8)
        return {"state": state, "arrays": packed, "layout": self._layout_list()}

    def fits(self, saved: dict[str, Any]) -> bool:
        """Whether `saved` (from capture()) is a state of this model under this MuJoCo version."""
        return (saved["layout"] == self._layout_list() and saved["state"].shape == (self.state_size,)
                and saved["arrays"].nbytes == self.nbytes - 8 * self.state_size)

    def restore(self, data: Any, saved: dict[str, Any]) -> None:
        """`saved` (from capture()) written into `data`; ValueError if it is another model's or MuJoCo
        version's."""
        import mujoco

        state, packed = saved["state"], saved["arrays"]
        if not self.fits(saved):
            raise ValueError("the physics state was saved for another model or MuJoCo version")
        offset = 0
        for name, dtype, shape in self.layout:
            target = getattr(data, name)
            target[...] = packed[offset:offset + target.nbytes].view(dtype).reshape(shape)
            offset += target.nbytes
        mujoco.mj_setState(self.model, data, np.asarray(state, dtype=np.float64), self.signature)

    @property
    def stored_bytes(self) -> int:
        """What capture() adds to a file: its arrays, and its layout written as JSON."""
        return self.nbytes + len(json.dumps(self._layout_list()))

    @property
    def nbytes(self) -> int:
        """The bytes of capture()'s arrays: the integration state and the fixed arrays."""
        return 8 * self.state_size + sum(np.dtype(dtype).itemsize * int(np.prod(shape))
                                         for _, dtype, shape in self.layout)
