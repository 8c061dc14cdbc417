"""`python -m mjsweep.media.pictures JOB.json`: the render process for pictures of variants.

JOB.json: {"width", "height", "folder", "items": [{"name", "xml", "env", "env_kwargs", "caption", "group"}]}.
Writes <folder>/<name>.png per item and <folder>/contact_sheet.png; prints one line per picture on
stderr and, on success, nothing else.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from ..sweepdir.files import CONTACT_SHEET_PNG
from .camera import Box, CameraPose, framing
from .gl import open_gl_or_exit, run_job
from .lighting import cast_shadows_over, fit_shadow_map
from .sheet import contact_sheet, save_png


def start_state(item: dict):
    """The variant's env (built as a run builds it) in the state its episodes start from, before reset
    noise: its keyframe where it has one. Returns the env, to be closed by the caller."""
    from ..robots.envs import make_env

    env = make_env(item["env"], Path(item["xml"]), item["env_kwargs"])
    base = env.unwrapped
    base.set_state(base.init_qpos, base.init_qvel)  # MuJoCo envs keep their noise-free start here
    return env


def robot_box(model, data) -> Box:
    """The box around every geom that is not part of the world body (the floor, walls)."""
    robot = model.geom_bodyid > 0
    if not robot.any():
        robot = np.ones(model.ngeom, dtype=bool)
    return Box.around(data.geom_xpos[robot], model.geom_rbound[robot])


def render(mujoco, model, data, pose: CameraPose, width: int, height: int) -> np.ndarray:
    robot = robot_box(model, data)
    fit_shadow_map(model, robot)
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
    model.vis.global_.offheight = max(model.vis.global_.offheight, height)
    camera = mujoco.MjvCamera()
    camera.type = mujoco.mjtCamera.mjCAMERA_FREE
    camera.lookat[:] = pose.lookat
    camera.distance, camera.azimuth, camera.elevation = pose.distance, pose.azimuth, pose.elevation
    renderer = mujoco.Renderer(model, height, width)
    try:  # closed here: a Renderer left to the garbage collector raises at interpreter exit
        renderer.update_scene(data, camera=camera)
        cast_shadows_over(mujoco, model, renderer.scene, robot.center)
        return renderer.render().copy()
    finally:
        renderer.close()


def main(job_path: str) -> None:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    width, height, folder = job["width"], job["height"], Path(job["folder"])
    mujoco = open_gl_or_exit(width, height)
    envs = [start_state(item) for item in job["items"]]
    scenes = [(item, env.unwrapped.model, env.unwrapped.data, robot_box(env.unwrapped.model, env.unwrapped.data))
              for item, env in zip(job["items"], envs, strict=True)]
    boxes: dict[str, Box] = {}
    for item, _, _, box in scenes:
        group = item["group"]
        boxes[group] = boxes[group].union(box) if group in boxes else box
    tiles = []
    for i, (item, model, data, _) in enumerate(scenes, 1):
        pose = framing(boxes[item["group"]], float(model.vis.global_.fovy), width / height)
        tiles.append(render(mujoco, model, data, pose, width, height))
        save_png(tiles[-1], folder / f"{item['name']}.png")
        print(f"pictures: {i}/{len(scenes)} {item['name']}", file=sys.stderr, flush=True)
    save_png(contact_sheet(tiles, [item["caption"] for item in job["items"]]), folder / CONTACT_SHEET_PNG)
    for env in envs:
        env.close()


if __name__ == "__main__":
    run_job(main)
