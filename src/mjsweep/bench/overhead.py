"""What a training through the worker costs beyond plain stable-baselines3, per algorithm: the worker's env
stack (the non-finite check, the monitor that sums returns as SB3's Monitor does) and its recorder (timing,
progress rows, the parameter check), against the same model trained by plain SB3 as its documentation
writes it (make_vec_env, which puts a Monitor on each env, and VecNormalize), nothing else.

Two figures. The whole trainings: each pair runs in one spawned process on one torch thread, plain and
worker alternated ROUNDS times (which goes first alternates too); the ratio is the median of the pairs'
CPU-time ratios (the time others take on a shared machine is not counted). Both build their model with the
worker's own `build_model`, so the hyperparameters are the same. On a shared machine two trainings differ by
a few percent from noise alone, so the worker's additions are also timed in place, and that is the figure
the target judges: the recorder's hooks, timed at every call within the worker's trainings, and the env
stack's cost per step over plain SB3's, timed around an env that replays one real step at no cost. Those
are the only code the worker's training runs that plain SB3's does not.
"""

from __future__ import annotations

import multiprocessing
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median
from typing import Any

from .figures import AlgoOverhead, BenchConfig

ROUNDS = 3
OFF_POLICY = {"learning_starts": 100, "train_freq": 1, "gradient_steps": 1}
"""SB3's defaults but a short warm-up: an update at every env step, where the worker's per-iteration work
weighs most."""


def steps_for(algo: str, config_steps: int) -> int:
    """Env steps per training, at most the bench's `--steps`: two of PPO's rollouts (4,096); for the off-policy
    ones 600 (an update at each of 500 steps after the warm-up)."""
    from ..spec.algos import ALGOS

    return min(config_steps, 600 if ALGOS[algo].off_policy else 4096)


def measure_overhead(config: BenchConfig, xml: Path, algos: list[str], on_step=lambda line: None
                     ) -> list[AlgoOverhead]:
    out = []
    for algo in algos:
        on_step(f"overhead: {algo} through the worker against plain SB3, {ROUNDS} rounds alternated")
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            out.append(pool.apply(time_pair, (config.env, str(xml), algo, steps_for(algo, config.steps))))
    return out


def time_pair(env: str, xml: str, algo: str, steps: int) -> AlgoOverhead:
    """In the spawned process: the CPU seconds of plain SB3's and the worker's training of `steps`, alternated,
    and what the worker adds timed in place."""
    import torch

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="mjsweep-overhead-") as tmp:
        spec = _run_spec(env, xml, algo, steps, Path(tmp))
        plain, worker, hooks = [], [], []
        for round_ in range(ROUNDS):
            timed: dict[str, tuple[float, float]] = {}
            for which in ("plain", "worker") if round_ % 2 == 0 else ("worker", "plain"):  # either goes first
                timed[which] = _plain(spec) if which == "plain" else _worker(spec, Path(tmp) / f"run-{round_}")
            plain.append(timed["plain"][0])
            worker.append(timed["worker"][0])
            hooks.append(timed["worker"][1] - timed["plain"][1])
        stack_us = env_stack_us(spec)
    ratios = [w / p for w, p in zip(worker, plain, strict=True)]
    plain_s = median(plain)
    return AlgoOverhead(algo=algo, steps=steps, plain_s=round(plain_s, 3), worker_s=round(median(worker), 3),
                        ratio=round(median(ratios), 4), spread=round(max(ratios) - min(ratios), 4),
                        rounds=ROUNDS, env_stack_us=round(stack_us, 2), recorder_s=round(median(hooks), 4),
                        added=round((stack_us * 1e-6 * steps + median(hooks)) / plain_s, 5))


def _run_spec(env: str, xml: str, algo: str, steps: int, folder: Path) -> Any:
    """The run `sweep run` would make of a one-variant spec training `algo` with normalize: true."""
    import yaml

    from ..engine.sweep import prepare
    from ..spec.algos import ALGOS

    section = {**OFF_POLICY, "learning_starts": min(OFF_POLICY["learning_starts"], steps // 2)} \
        if ALGOS[algo].off_policy else {}
    spec = {"name": "overhead", "env": env, "variants": [{"name": "bench", "xml": xml}], "seeds": 1,
            "total_timesteps": steps, "algo": algo, algo: section, "normalize": True, "eval": {"episodes": 1},
            "checkpoint_every": 10**9, "checkpoint_every_s": None, "runs_dir": str(folder)}
    (folder / "spec.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    return prepare(folder / "spec.yaml", check_envs=False).runs[0]


def _plain(spec: Any) -> tuple[float, float]:
    """Plain SB3 as its documentation writes it: make_vec_env (a Monitor on each env), VecNormalize, the
    model, learn; nothing else. Its CPU seconds, and the seconds in the hooks of the callback SB3 makes of
    `callback=None` (a ConvertCallback of None), timed as the worker's recorder is: SB3 calls them all the
    same."""
    from stable_baselines3.common.callbacks import ConvertCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    from ..robots.envs import make_env
    from ..sweepdir.files import RunDir
    from ..worker.checkpoints import Checkpointer
    from ..worker.model import build_model

    venv = VecNormalize(make_vec_env(lambda: make_env(spec.env, Path(spec.xml), spec.env_kwargs,
                                                      spec.max_episode_steps), n_envs=spec.n_envs), **spec.normalize)
    with tempfile.TemporaryDirectory() as tmp:
        model = build_model(spec, venv, Checkpointer(RunDir(Path(tmp)), spec.checkpoint_every), None)
        callback = ConvertCallback(None)
        hooks = HookTimer(callback)
        started = time.thread_time()
        model.learn(spec.total_timesteps, callback=callback)
        spent = time.thread_time() - started
    venv.close()
    return spent, hooks.seconds()


def _worker(spec: Any, run_path: Path) -> tuple[float, float]:
    """The worker's training: its env stack, its model, its recorder, as worker/main.py assembles them; its CPU
    seconds, and the seconds spent in the recorder's hooks."""
    from ..engine.sweep import write_run_dir
    from ..spec.algos import ALGOS
    from ..sweepdir.files import RunDir
    from ..worker.checkpoints import Checkpointer
    from ..worker.iterations import IterationRecorder
    from ..worker.model import build_model
    from ..worker.train_envs import make_vec_env

    run = RunDir(run_path)
    write_run_dir(run, spec, None)
    venv = make_vec_env(spec, run, None)
    checkpointer = Checkpointer(run, spec.checkpoint_every, spec.checkpoint_every_s, normalized=True,
                                off_policy=ALGOS[spec.algo].off_policy, kept=spec.checkpoints_kept)
    model = build_model(spec, venv, checkpointer, None)
    recorder = IterationRecorder(checkpointer, None, lambda: None, None, row_steps=ALGOS[spec.algo].row_steps)
    hooks = HookTimer(recorder)
    started = time.thread_time()
    model.learn(spec.total_timesteps, callback=recorder)
    spent = time.thread_time() - started
    venv.close()
    return spent, hooks.seconds()


class HookTimer:
    """Times every call SB3 makes into a callback's on_* hooks, in place: the hooks are replaced on the
    instance by timed ones. perf_counter_ns, not a CPU clock: a CPU clock is a system call that would cost
    more than some hooks; the timer's own cost is measured and taken off.

    update_locals, SB3's own in both callbacks (the recorder does not override it), is left out: it frees
    the tensors the last step's locals held, tens of milliseconds of a training with a noise of their own,
    the same work in plain SB3's training and the worker's."""

    HOOKS = ("on_training_start", "on_rollout_start", "on_step", "on_rollout_end", "on_training_end")

    def __init__(self, callback: Any):
        self.ns = self.calls = 0
        self.timer_ns = self._timer_cost_ns()
        for name in self.HOOKS:
            setattr(callback, name, self._timed(getattr(callback, name)))

    def _timed(self, hook: Callable[..., Any]) -> Callable[..., Any]:
        clock = time.perf_counter_ns

        def timed(*args: Any) -> Any:
            started = clock()
            try:
                return hook(*args)
            finally:
                self.ns += clock() - started
                self.calls += 1
        return timed

    def _timer_cost_ns(self, n: int = 20_000) -> float:
        """What timing a call adds to the sum, per call: the clock reads and the bookkeeping."""
        nothing = self._timed(lambda *args: None)
        for _ in range(n):
            nothing()
        cost = self.ns / n
        self.ns = self.calls = 0
        return cost

    def seconds(self) -> float:
        return max(0.0, self.ns - self.calls * self.timer_ns) / 1e9


def env_stack_us(spec: Any, steps: int = 10_000, rounds: int = 15) -> float:
    """CPU microseconds per env step that the worker's env stack adds to plain SB3's (a Monitor in a
    DummyVecEnv), both around an env that replays one real step at no cost of its own: the median of
    alternated rounds (a few seconds in all). VecNormalize, which both have, is left out."""
    import numpy as np
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    from ..robots.envs import make_env
    from ..worker.monitor import EnvReturnMonitor, with_episode_return
    from ..worker.train_envs import NamedNonFiniteCheck

    real = make_env(spec.env, Path(spec.xml), spec.env_kwargs, spec.max_episode_steps)
    replay = _replaying(real)
    plain = DummyVecEnv([lambda: Monitor(replay)])
    worker = EnvReturnMonitor(NamedNonFiniteCheck(DummyVecEnv([lambda: with_episode_return(replay)])))
    actions = np.stack([real.action_space.sample()])
    plain.reset()
    worker.reset()
    differences = []
    for _ in range(rounds):
        plain_us = _us_per_step(plain, actions, steps)
        differences.append(_us_per_step(worker, actions, steps) - plain_us)
    real.close()
    return median(differences)


def _us_per_step(venv: Any, actions: Any, steps: int) -> float:
    started = time.thread_time()
    for _ in range(steps):
        venv.step(actions)
    return (time.thread_time() - started) / steps * 1e6


def _replaying(env: Any) -> Any:
    """A gymnasium env that hands back one real step of `env` at no cost, its episodes as long as env's time
    limit (so that the monitors' work at an episode's end is timed too)."""
    import gymnasium

    first, _ = env.reset(seed=0)
    observation, reward, _, _, info = env.step(env.action_space.sample())
    limit = env.spec.max_episode_steps if env.spec and env.spec.max_episode_steps else 1000

    class Replay(gymnasium.Env):
        observation_space, action_space = env.observation_space, env.action_space
        t = 0

        def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
            self.t = 0
            return first, {}

        def step(self, action: Any) -> Any:
            self.t += 1
            return observation, reward, False, self.t >= limit, dict(info)

    return Replay()
