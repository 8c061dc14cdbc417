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
HOME_KEYFRAME = "home"
"""Menagerie's name for a robot's standing pose: used as the start state when no keyframe is given."""
HEADINGS = {"x": (1.0, 0.0), "+x": (1.0, 0.0), "-x": (-1.0, 0.0),
            "y": (0.0, 1.0), "+y": (0.0, 1.0), "-y": (0.0, -1.0)}
ROOT_HEADING = "root"
"""forward_axis: the root body's own x axis at the start state, projected onto the floor."""
NOISE_MODES = ("auto", "absolute", "relative")
PENETRATION_M = 0.02
PENETRATION_OF_HEIGHT = 0.25
"""A contact deeper than PENETRATION_M and than this fraction of the root's start height means the robot
starts inside something; shallower ones MuJoCo's contact solver resolves within a few steps."""
_UNSTABLE = (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
             mujoco.mjtWarning.mjWARN_BADQACC)


def register() -> None:
    """Add ENV_ID to Gymnasium's registry (once; called when mjsweep builds an mjsweep/ env)."""
    import gymnasium as gym

    if ENV_ID not in gym.registry:
        gym.register(ENV_ID, entry_point="mjsweep.robots.locomotion:LocomotionEnv", max_episode_steps=1000)


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
                 reset_noise_scale: float = 0.1, keyframe: str | int | None = None,
                 reset_noise: str = "auto", **kwargs):
        if forward_axis not in HEADINGS and forward_axis != ROOT_HEADING:
            raise ValueError(f"forward_axis must be one of {', '.join([*HEADINGS, ROOT_HEADING])} "
                             f"(got {forward_axis!r})")
        if reset_noise not in NOISE_MODES:
            raise ValueError(f"reset_noise must be one of {', '.join(NOISE_MODES)} (got {reset_noise!r})")
        super().__init__(xml_file, frame_skip, observation_space=None, **kwargs)
        self.metadata = {**self.metadata, "render_fps": int(np.round(1.0 / self.dt))}
        self._root = find_root(self.model)
        self.keyframe = self._start_keyframe(keyframe)
        self._start_from_keyframe()
        self._heading = self._heading_vector(forward_axis)
        self._weights = (forward_reward_weight, ctrl_cost_weight, healthy_reward)
        self._terminate = terminate_when_unhealthy
        self._noise = reset_noise_scale
        self.reset_noise = reset_noise if reset_noise != "auto" else ("relative" if self.keyframe else "absolute")
        self._keep = np.array([i for i in range(self.model.nq) if i not in self._root.dropped_qpos], dtype=int)
        self._z_range = self._height_range(healthy_z_range, healthy_z_scale)
        size = len(self._keep) + self.model.nv
        self.observation_space = Box(-np.inf, np.inf, shape=(size,), dtype=np.float64)

    # --- the start state ----------------------------------------------------------------------

    def _start_keyframe(self, keyframe: str | int | None) -> str | None:
        """The keyframe episodes start from, as 'name' or '#index'; None for the model's qpos0."""
        names = [self.model.key(i).name for i in range(self.model.nkey)]
        if keyframe is None:
            return HOME_KEYFRAME if HOME_KEYFRAME in names else None
        if isinstance(keyframe, bool) or not isinstance(keyframe, (str, int)):
            raise ValueError(f"keyframe must be a keyframe's name or index (got {keyframe!r})")
        if isinstance(keyframe, int):
            if not 0 <= keyframe < self.model.nkey:
                raise ValueError(f"keyframe {keyframe} does not exist: the model has {self.model.nkey} keyframes")
            return names[keyframe] or f"#{keyframe}"
        if keyframe not in names:
            listed = ", ".join(repr(n) for n in names if n) or "none with a name"
            raise ValueError(f"no keyframe named {keyframe!r} (the model has: {listed})")
        return keyframe

    def _keyframe_id(self) -> int:
        assert self.keyframe is not None
        if self.keyframe.startswith("#"):
            return int(self.keyframe[1:])
        return [self.model.key(i).name for i in range(self.model.nkey)].index(self.keyframe)

    def _start_from_keyframe(self) -> None:
        """Make the keyframe (qpos, qvel, act, ctrl, mocap) the state every reset starts from."""
        if self.keyframe is None:
            return
        mujoco.mj_resetDataKeyframe(self.model, self.data, self._keyframe_id())
        mujoco.mj_forward(self.model, self.data)
        self.init_qpos = self.data.qpos.ravel().copy()
        self.init_qvel = self.data.qvel.ravel().copy()

    def start_note(self) -> str:
        """Where episodes start, in words (shown by `sweep validate`)."""
        noise = f"{self.reset_noise} reset noise {self._noise:g}"
        return f"keyframe {self.keyframe!r}, {noise}" if self.keyframe else f"qpos0, {noise}"

    def _heading_vector(self, forward_axis: str) -> np.ndarray:
        """Unit vector of the rewarded direction in the world's x-y plane (z component 0)."""
        if forward_axis in HEADINGS:
            return np.array([*HEADINGS[forward_axis], 0.0])
        mujoco.mj_forward(self.model, self.data)
        x_axis = self.data.xmat[self._root.body].reshape(3, 3)[:, 0]
        flat = np.array([x_axis[0], x_axis[1], 0.0])
        norm = float(np.linalg.norm(flat))
        if norm < 1e-6:
            raise ValueError("forward_axis 'root': the root body's x axis points straight up or down at the start")
        return flat / norm

    def _height_range(self, absolute, scale) -> tuple[float, float]:
        """An absolute range if given; else `scale` times the root's starting height (if above 0)."""
        if absolute is not None:
            self._start_height = float("nan")
            return float(absolute[0]), float(absolute[1])
        mujoco.mj_forward(self.model, self.data)
        z0 = self._start_height = float(self.data.xpos[self._root.body][2])
        return (z0 * scale[0], z0 * scale[1]) if z0 > 0 else (-np.inf, np.inf)

    def step(self, action):
        before = self.data.xpos[self._root.body].copy()
        self.do_simulation(action, self.frame_skip)
        after = self.data.xpos[self._root.body]
        finite = self._state_is_finite()
        velocity = float(np.dot(after - before, self._heading) / self.dt) if finite else 0.0
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
        space: Box = self.action_space  # type: ignore[assignment]  # set as a Box by MujocoEnv
        low, high = space.low, space.high
        return 2.0 * (np.asarray(action) - low) / (high - low) - 1.0

    def _get_obs(self) -> np.ndarray:
        obs = np.concatenate([self.data.qpos[self._keep], self.data.qvel])
        return np.nan_to_num(obs, nan=0.0, posinf=0.0, neginf=0.0)

    def reset_model(self):
        noise = self._noise
        if self.reset_noise == "relative":
            qpos = self._relative_qpos_noise(noise)
        else:
            qpos = self.init_qpos + self.np_random.uniform(-noise, noise, size=self.model.nq)
        qvel = self.init_qvel + noise * self.np_random.standard_normal(self.model.nv)
        if self.keyframe is not None:
            self._restore_keyframe_extras()
        self.set_state(qpos, qvel)
        return self._get_obs()

    def _restore_keyframe_extras(self) -> None:
        """The keyframe's ctrl, act and mocap poses (qpos/qvel come with the noise)."""
        key = self.model.key(self._keyframe_id())
        self.data.ctrl[:] = key.ctrl
        self.data.act[:] = key.act
        self.data.mocap_pos[:] = key.mpos.reshape(-1, 3)
        self.data.mocap_quat[:] = key.mquat.reshape(-1, 4)

    def _relative_qpos_noise(self, scale: float) -> np.ndarray:
        """Noise sized to each joint: a limited hinge or slide moves by up to scale x half its range
        (clipped to it), an unlimited hinge by up to scale radians, a ball joint turns by up to scale
        radians; the root's own joints (its height, orientation, planar slides and pitch) stay put."""
        model, qpos = self.model, self.init_qpos.copy()
        for j in range(model.njnt):
            if model.jnt_bodyid[j] == self._root.body:
                continue
            adr, kind = int(model.jnt_qposadr[j]), model.jnt_type[j]
            if kind == mujoco.mjtJoint.mjJNT_BALL:
                qpos[adr:adr + 4] = _turned(qpos[adr:adr + 4], self.np_random.uniform(-scale, scale, 3))
            elif kind in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
                qpos[adr] = self._jittered(j, qpos[adr], scale)
        return qpos

    def _jittered(self, joint: int, value: float, scale: float) -> float:
        if not self.model.jnt_limited[joint]:
            return value + self.np_random.uniform(-scale, scale)
        low, high = self.model.jnt_range[joint]
        half = 0.5 * (high - low)
        return float(np.clip(value + self.np_random.uniform(-scale, scale) * half, low, high))

    # --- checks of the start state, for the pre-launch probe ------------------------------------

    def probe_notes(self) -> list[str]:
        """What `sweep validate` should say about this env besides its verdict."""
        if self._z_range == (-np.inf, np.inf):
            return [f"no height check: the root starts at z {self._start_height:.3f}, so healthy_z_scale "
                    "gives no range (set healthy_z_range)"]
        return []

    def start_problems(self) -> list[tuple[str, str]]:
        """(check, message) for a start state no training can learn from: the root outside its healthy
        height range, or bodies inside the floor or each other. Looked at without reset noise."""
        data = mujoco.MjData(self.model)
        if self.keyframe is not None:
            mujoco.mj_resetDataKeyframe(self.model, data, self._keyframe_id())
        data.qpos[:], data.qvel[:] = self.init_qpos, self.init_qvel
        mujoco.mj_forward(self.model, data)
        problems = []
        z = float(data.xpos[self._root.body][2])
        low, high = self._z_range
        if not low <= z <= high:
            problems.append(("unhealthy_start", f"the root starts at height {z:.3f}, outside its healthy range "
                             f"[{low:.3f}, {high:.3f}]: fix healthy_z_range, or start from a keyframe"))
        deepest = self._deepest_contact(data, max(PENETRATION_M, PENETRATION_OF_HEIGHT * z))
        if deepest is not None:
            depth, pair = deepest
            problems.append(("penetration", f"the start state has {pair} {depth * 100:.1f} cm inside each other: "
                             f"start from a standing keyframe (env_kwargs.keyframe) or raise the root"))
        return problems

    def _deepest_contact(self, data, tolerance: float) -> tuple[float, str] | None:
        if data.ncon == 0:
            return None
        dist = np.array([data.contact[i].dist for i in range(data.ncon)])
        i = int(np.argmin(dist))
        if dist[i] >= -tolerance:
            return None
        geoms = [self._geom_label(int(g)) for g in data.contact[i].geom]
        return float(-dist[i]), f"geoms {geoms[0]} and {geoms[1]}"

    def _geom_label(self, geom: int) -> str:
        name = mujoco.mj_id2name(self.model, mujoco.mjtObj.mjOBJ_GEOM, geom)
        if name:
            return repr(name)
        body = mujoco.mj_id2name(self.model, mujoco.mjtObj.mjOBJ_BODY, int(self.model.geom_bodyid[geom]))
        return f"#{geom} (body {body!r})"


def _turned(quat: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """quat followed by a turn of |rotation| radians about rotation's direction (in the joint frame)."""
    turn = np.zeros(4)
    mujoco.mju_axisAngle2Quat(turn, rotation / max(float(np.linalg.norm(rotation)), 1e-12),
                              float(np.linalg.norm(rotation)))
    out = np.zeros(4)
    mujoco.mju_mulQuat(out, quat, turn)
    return out
