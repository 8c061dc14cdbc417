"""`python -m mjsweep.media.policy_render JOB.json`: the render process for videos of trained policies.

JOB.json: {"width", "height", "seconds", "gif", "items": [{"run_dir", "model", "vecnormalize", "title",
"output"}]}. For each item: the run's env (from its spec.json), its policy acting deterministically
(a recurrent policy's state carried from step to step), the saved normalization statistics frozen where
the run has them; frames drawn by a camera that follows the robot, labelled with the title and the
episode's return so far; MP4 (and GIF) written through imageio's ffmpeg wheel.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..worker.loaded_policy import Actor, load_policy, require_run_files
from ..worker.normalization import load_frozen
from .camera import framing
from .gl import open_gl_or_exit, run_job
from .lighting import cast_shadows_over, fit_shadow_map
from .pictures import robot_box
from .sheet import label

MAX_FPS = 30  # a video of a 2 ms-timestep robot would otherwise ask for 100 frames per simulated second


def rollout_frames(mujoco, item: dict, width: int, height: int, seconds: float):
    """First the frame rate and the frame count, then the labelled frames of the policy acting in its
    env for `seconds` of simulated time."""
    import torch
    from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

    from ..robots.envs import make_env
    from ..sweepdir.files import RunDir
    from ..sweepdir.models import RunSpec

    torch.set_num_threads(1)
    run = RunDir(Path(item["run_dir"]))
    spec = RunSpec.model_validate_json(run.spec_json.read_text(encoding="utf-8"))
    xml = run.model_xml(spec)
    plain = DummyVecEnv([lambda: make_env(spec.env, xml, spec.env_kwargs, spec.max_episode_steps)])
    venv: VecEnv = load_frozen(item["vecnormalize"], plain) if item.get("vecnormalize") else plain
    actor = Actor(load_policy(spec.algo, item["model"]))
    env: Any = plain.envs[0].unwrapped  # a MuJoCo env: model, data and dt
    model, data = env.model, env.data
    every = max(1, round(1 / (env.dt * MAX_FPS)))
    fps = 1 / (env.dt * every)
    frames = max(1, round(seconds * fps))
    yield fps, frames
    venv.seed(spec.seed)  # the run's own start: the same video every time, not one random start in many
    obs = venv.reset()
    robot = robot_box(model, data)
    pose = framing(robot, float(model.vis.global_.fovy), width / height)
    camera = mujoco.MjvCamera()
    camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
    camera.trackbodyid = 1  # the robot's root body: the camera keeps it in view as it walks
    camera.distance, camera.azimuth, camera.elevation = pose.distance, pose.azimuth, pose.elevation
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
    model.vis.global_.offheight = max(model.vis.global_.offheight, height)
    fit_shadow_map(model, robot)
    renderer = mujoco.Renderer(model, height, width)
    episode_return = 0.0
    try:  # closed here: a Renderer left to the garbage collector raises at interpreter exit
        for frame in range(frames):
            renderer.update_scene(data, camera=camera)
            cast_shadows_over(mujoco, model, renderer.scene, data.subtree_com[camera.trackbodyid])
            yield label(renderer.render(), [item["title"], f"return {episode_return:9.1f}"])
            if frame == frames - 1:
                break
            for _ in range(every):
                obs, rewards, dones, _ = venv.step(actor.act(obs))
                actor.stepped(dones)
                # A finished episode restarts at once (the vec env resets it), and so does its return.
                episode_return = 0.0 if dones[0] else episode_return + float(rewards[0])
    finally:
        renderer.close()
        venv.close()


def write_video(mujoco, item: dict, width: int, height: int, seconds: float, gif: bool) -> None:
    import imageio.v2 as imageio

    frames: list[np.ndarray] = []
    rollout = rollout_frames(mujoco, item, width, height, seconds)
    fps, total = next(rollout)
    for frame in rollout:
        frames.append(frame)
        if len(frames) % 25 == 0 or len(frames) == total:
            print(f"video: {item['title']}: {len(frames)}/{total} frames", file=sys.stderr, flush=True)
    output = Path(item["output"])
    video: Any = frames  # imageio's stubs do not list ndarray frames
    imageio.mimwrite(output, video, fps=fps, codec="libx264", quality=7, macro_block_size=8)
    if gif:
        imageio.mimwrite(output.with_suffix(".gif"), video, duration=1000 / fps, loop=0)


def main(job_path: str) -> None:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    for item in job["items"]:
        require_run_files(item["model"], item.get("vecnormalize"))
    mujoco = open_gl_or_exit(job["width"], job["height"])
    for item in job["items"]:
        write_video(mujoco, item, job["width"], job["height"], job["seconds"], job["gif"])


if __name__ == "__main__":
    run_job(main)
