"""Shadows without dark triangles on the far floor.

MuJoCo draws a directional light's shadow map over +-shadowclip * stat.extent around the light, with
depths between the camera's near and far planes (znear, zfar * extent), reversed and in floats. A big
floor makes the extent big (10 for the project's 50 m floors), so the map spans metres of distant
floor; and a light a few metres above the floor puts the floor's depth next to the near plane, where
those floats have their coarsest steps. The far floor's depth then misses MuJoCo's shadow offset and
whole floor triangles come out in shadow. A map just around the robot, cast from a light halfway down
the depth range, keeps the distant floor out of the map and the floor's depth where floats are fine.
"""

from __future__ import annotations

import numpy as np

from .camera import Box

SHADOW_REACH = 1.5
"""The shadow map's half-width in robot diagonals: the robot and the shadow it casts."""


def fit_shadow_map(model, robot: Box) -> None:
    """Before the Renderer is made: it reads shadowclip once, when it builds its GL context."""
    model.vis.map.shadowclip = SHADOW_REACH * robot.diagonal / model.stat.extent


def cast_shadows_over(mujoco, model, scene, center) -> None:
    """After each update_scene: each directional light that casts shadows casts them from half the
    depth range above `center`, along its own direction (which alone sets how it shades)."""
    lift = 0.5 * model.vis.map.zfar * model.stat.extent
    for light in scene.lights[:scene.nlight]:
        if light.castshadow and _directional(mujoco, light):
            light.pos[:] = np.asarray(center, dtype=float) - lift * np.asarray(light.dir, dtype=float)


def _directional(mujoco, light) -> bool:
    kind = getattr(light, "type", None)  # MuJoCo 3.3 on; earlier releases have a flag instead
    return bool(light.directional) if kind is None else kind == mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
