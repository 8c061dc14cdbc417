"""monitor.csv's episode returns as RL Zoo's monitor files have them: summed as SB3's Monitor sums them."""

from __future__ import annotations

import numpy as np

from helpers.models import TINY_XML


def test_monitor_csv_sums_returns_as_sb3_monitor_does():
    """Each env's float64 rewards summed in Python floats, as Monitor (RL Zoo's monitor files) sums them,
    not the vec env's float32 rewards in float32 as VecMonitor does."""
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

    from mjsweep.robots.envs import make_env
    from mjsweep.worker.monitor import EnvReturnMonitor, with_episode_return

    def tiny():
        return make_env("HalfCheetah-v5", TINY_XML, {}, 40)

    def episodes(venv) -> list[tuple[float, int]]:
        venv.seed(0)
        venv.reset()
        actions, out = np.random.default_rng(0), []
        while len(out) < 8:
            *_, dones, infos = venv.step(actions.uniform(-1, 1, (2, *venv.action_space.shape)))
            out += [(info["episode"]["r"], info["episode"]["l"])
                    for done, info in zip(dones, infos, strict=True) if done]
        return out

    monitor = episodes(DummyVecEnv([lambda: Monitor(tiny())] * 2))
    ours = episodes(EnvReturnMonitor(DummyVecEnv([lambda: with_episode_return(tiny())] * 2)))
    float32 = episodes(VecMonitor(DummyVecEnv([tiny] * 2)))
    assert ours == monitor
    assert [length for _, length in float32] == [length for _, length in monitor]
    assert [r for r, _ in float32] != [r for r, _ in monitor]  # what the worker's monitor did before
