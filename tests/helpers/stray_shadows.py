"""A render process (`python -m helpers.stray_shadows JOB.json`) that counts the shadow pixels of a
picture which fall on the floor far from the robot: the picture drawn by mjsweep.media.pictures.render,
once as drawn and once with no light casting shadows; where the first is darker, a ray from the camera
finds what that pixel shows. JOB.json: {"xml": [paths], "out": path}; writes {xml: count} to out."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

from mjsweep.media.camera import framing
from mjsweep.media.gl import open_gl_or_exit, run_job
from mjsweep.media.pictures import render, robot_box

SIZE = (480, 360)


def world_points(mujoco, model, data, pose, pixels: np.ndarray) -> np.ndarray:
    """Where the ray through each (row, column) pixel hits a geom (nan where it hits none)."""
    width, height = SIZE
    az, el = math.radians(pose.azimuth), math.radians(pose.elevation)
    forward = np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
    right = np.array([math.sin(az), -math.cos(az), 0.0])
    up = np.cross(right, forward)
    eye = np.array(pose.lookat) - pose.distance * forward
    tan_v = math.tan(math.radians(model.vis.global_.fovy) / 2)
    tan_h = tan_v * width / height
    points = np.full((len(pixels), 3), np.nan)
    geom = np.zeros(1, dtype=np.int32)
    for i, (row, col) in enumerate(pixels):
        u, v = (col + 0.5) / width * 2 - 1, 1 - (row + 0.5) / height * 2
        ray = forward + u * tan_h * right + v * tan_v * up
        ray /= np.linalg.norm(ray)
        distance = mujoco.mj_ray(model, data, eye, ray, None, 1, -1, geom)
        if distance >= 0:
            points[i] = eye + distance * ray
    return points


def stray_shadow_pixels(mujoco, xml: str) -> int:
    model = mujoco.MjModel.from_xml_path(xml)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    robot = robot_box(model, data)
    pose = framing(robot, float(model.vis.global_.fovy), SIZE[0] / SIZE[1])
    drawn = render(mujoco, model, data, pose, *SIZE).astype(int)
    model.light_castshadow[:] = 0
    unshadowed = render(mujoco, model, data, pose, *SIZE).astype(int)
    shadowed = np.argwhere((unshadowed - drawn).max(axis=-1) > 20)
    points = world_points(mujoco, model, data, pose, shadowed)
    # The models' lights shine straight down: the robot's own shadow lies under its box.
    diagonal = np.linalg.norm(np.subtract(robot.high, robot.low))
    away = np.linalg.norm(points[:, :2] - np.array(robot.center[:2]), axis=1) > diagonal
    return int(np.sum(away))


def main(job_path: str) -> None:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    mujoco = open_gl_or_exit(*SIZE)
    counts = {xml: stray_shadow_pixels(mujoco, xml) for xml in job["xml"]}
    Path(job["out"]).write_text(json.dumps(counts), encoding="utf-8")
    print(f"stray shadows: {counts}", file=sys.stderr)


if __name__ == "__main__":
    run_job(main)
