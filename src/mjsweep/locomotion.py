"""mjsweep/Locomotion-v0: one Gymnasium env that trains any robot XML to move forward.

The root is the body of the model's first joint, a child of the world. It either carries a free
joint (quadrupeds, humanoids) or slide/hinge joints (planar cheetahs, hoppers, walkers: slide x,
slide z, hinge y). Observation: every joint position except the root's x/y, then every velocity.
Reward: forward velocity of the root minus a control cost plus a reward for staying healthy.
An episode ends when the root height leaves its range or the state stops being finite.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
from gymnasium.envs.mujoco.mujoco_env import MujocoEnv
from gymnasium.spaces import Box

ENV_ID = "mjsweep/Locomotion-v0"
_UNSTABLE = (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
             mujoco.mjtWarning.mjWARN_BADQACC)


def register() -> None:
    """Add ENV_ID to Gymnasium's registry (once; called when mjsweep builds an mjsweep/ env)."""
    import gymnasium as gym

    if ENV_ID not in gym.registry:
        gym.register(ENV_ID, entry_point="mjsweep.locomotion:LocomotionEnv", max_episode_steps=1000)


@dataclass(frozen=True)
class Root:
    body: int
    """Body id of the root."""
    free: bool
    """A free joint (else a planar root of slide/hinge joints)."""
    dropped_qpos: tuple[int, ...]
    """qpos indices of the root's world x/y: left out of the observation, like Gymnasium's envs."""


def find_root(model: mujoco.MjModel) -> Root:
    """The root body and the qpos entries of its horizontal position. ValueError if there is none."""
    if model.njnt == 0:
        raise ValueError("the model has no joints, so nothing can move")
    body = int(model.jnt_bodyid[0])
    if model.body_parentid[body] != 0:
        raise ValueError("the first joint is not on a child of the world body: no free or planar root")
    joints = [j for j in range(model.njnt) if model.jnt_bodyid[j] == body]
    free = [j for j in joints if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
    if free:
        adr = int(model.jnt_qposadr[free[0]])
        return Root(body, True, (adr, adr + 1))
    slides = [j for j in joints if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_SLIDE]
    horizontal = tuple(int(model.jnt_qposadr[j]) for j in slides
                       if max(abs(model.jnt_axis[j][0]), abs(model.jnt_axis[j][1])) > 0.99)
    if not horizontal:
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, body)
        raise ValueError(f"root body {name!r} has neither a free joint nor a slide joint along x or y")
    return Root(body, False, horizontal)


class LocomotionEnv(MujocoEnv):
    """Keyword arguments (set through the spec's env_kwargs) are documented in docs/variants.md."""

    # render_fps depends on the XML's timestep, so it is set per instance after loading.
    metadata = {"render_modes": ["human", "rgb_array", "depth_array"]}

    def __init__(self, xml_file: str, frame_skip: int = 5, forward_axis: str = "x",
                 forward_reward_weight: float = 1.0, ctrl_cost_weight: float = 0.05,
                 healthy_reward: float = 1.0, healthy_z_range: tuple[float, float] | None = None,
                 healthy_z_scale: tuple[float, float] = (0.3, 2.0), terminate_when_unhealthy: bool = True,
                 reset_noise_scale: float = 0.1, **kwargs):
        if forward_axis not in ("x", "y"):
            raise ValueError(f"forward_axis must be 'x' or 'y' (got {forward_axis!r})")
        super().__init__(xml_file, frame_skip, observation_space=None, **kwargs)
        self.metadata = {**self.metadata, "render_fps": int(np.round(1.0 / self.dt))}
        self._root = find_root(self.model)
        self._axis = "xy".index(forward_axis)
        self._weights = (forward_reward_weight, ctrl_cost_weight, healthy_reward)
        self._terminate = terminate_when_unhealthy
        self._noise = reset_noise_scale
        self._keep = np.array([i for i in range(self.model.nq) if i not in self._root.dropped_qpos], dtype=int)
        self._z_range = self._height_range(healthy_z_range, healthy_z_scale)
        size = len(self._keep) + self.model.nv
        self.observation_space = Box(-np.inf, np.inf, shape=(size,), dtype=np.float64)

    def _height_range(self, absolute, scale) -> tuple[float, float]:
        """An absolute range if given; else `scale` times the root's starting height (if above 0)."""
        if absolute is not None:
            return float(absolute[0]), float(absolute[1])
        mujoco.mj_forward(self.model, self.data)
        z0 = float(self.data.xpos[self._root.body][2])
        return (z0 * scale[0], z0 * scale[1]) if z0 > 0 else (-np.inf, np.inf)

    def step(self, action):
        before = self.data.xpos[self._root.body].copy()
        self.do_simulation(action, self.frame_skip)
        after = self.data.xpos[self._root.body]
        finite = self._state_is_finite()
        velocity = float((after[self._axis] - before[self._axis]) / self.dt) if finite else 0.0
        healthy = finite and self._z_range[0] <= after[2] <= self._z_range[1]
        forward_w, ctrl_w, healthy_w = self._weights
        ctrl_cost = ctrl_w * float(np.sum(np.square(self._normalized(action))))
        reward = forward_w * velocity - ctrl_cost + (healthy_w if healthy else 0.0)
        terminated = not finite or (self._terminate and not healthy)
        info = {"forward_velocity": velocity, "ctrl_cost": ctrl_cost, "healthy": healthy}
        return self._get_obs(), reward, terminated, False, info

    def _state_is_finite(self) -> bool:
        """False on NaN/inf, or when MuJoCo has reset a diverging state (its bad-value warnings)."""
        warned = any(self.data.warning[w].number > 0 for w in _UNSTABLE)
        return not warned and bool(np.all(np.isfinite(self.data.qpos)) and np.all(np.isfinite(self.data.qvel)))

    def _normalized(self, action) -> np.ndarray:
        """The action mapped to [-1, 1] per actuator, so the cost does not depend on ctrlrange units."""
        low, high = self.action_space.low, self.action_space.high
        return 2.0 * (np.asarray(action) - low) / (high - low) - 1.0

    def _get_obs(self) -> np.ndarray:
        obs = np.concatenate([self.data.qpos[self._keep], self.data.qvel])
        return np.nan_to_num(obs, nan=0.0, posinf=0.0, neginf=0.0)

    def reset_model(self):
        noise = self._noise
        qpos = self.init_qpos + self.np_random.uniform(-noise, noise, size=self.model.nq)
        qvel = self.init_qvel + noise * self.np_random.standard_normal(self.model.nv)
        self.set_state(qpos, qvel)
        return self._get_obs()
