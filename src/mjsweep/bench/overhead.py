"""What a training through the worker costs beyond plain stable-baselines3, per algorithm: the worker's env
stack (the non-finite check, the monitor that sums returns as SB3's Monitor does) and its recorder (timing,
progress rows, the parameter check), against the same model trained by plain SB3 as its documentation
writes it (make_vec_env, which puts a Monitor on each env, and VecNormalize), nothing else.

Each pair runs in one spawned process on one torch thread, plain and worker alternated ROUNDS times; the
figure is the median of the pairs' CPU-time ratios (the time others take on a shared machine is not
counted). Both build their model with the worker's own `build_model`, so the hyperparameters are the same.
"""

from __future__ import annotations

import multiprocessing
import tempfile
import time
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
    """In the spawned process: the CPU seconds of plain SB3's and the worker's training of `steps`, alternated."""
    import torch

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="mjsweep-overhead-") as tmp:
        spec = _run_spec(env, xml, algo, steps, Path(tmp))
        plain, worker = [], []
        for round_ in range(ROUNDS):
            plain.append(_plain(spec))
            worker.append(_worker(spec, Path(tmp) / f"run-{round_}"))
    ratios = [w / p for w, p in zip(worker, plain, strict=True)]
    return AlgoOverhead(algo=algo, steps=steps, plain_s=round(median(plain), 3), worker_s=round(median(worker), 3),
                        ratio=round(median(ratios), 4), spread=round(max(ratios) - min(ratios), 4),
                        rounds=ROUNDS)


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


def _plain(spec: Any) -> float:
    """Plain SB3 as its documentation writes it: make_vec_env (a Monitor on each env), VecNormalize, the
    model, learn; nothing else."""
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
        started = time.thread_time()
        model.learn(spec.total_timesteps)
        spent = time.thread_time() - started
    venv.close()
    return spent


def _worker(spec: Any, run_path: Path) -> float:
    """The worker's training: its env stack, its model, its recorder, as worker/main.py assembles them."""
    from ..engine.sweep import write_run_dir
    from ..spec.algos import ALGOS
    from ..sweepdir.files import RunDir
    from ..worker.checkpoints import Checkpointer
    from ..worker.envs import make_vec_env
    from ..worker.model import build_model
    from ..worker.recording import IterationRecorder

    run = RunDir(run_path)
    write_run_dir(run, spec, None)
    venv = make_vec_env(spec, run, None)
    checkpointer = Checkpointer(run, spec.checkpoint_every, spec.checkpoint_every_s, normalized=True,
                                off_policy=ALGOS[spec.algo].off_policy, kept=spec.checkpoints_kept)
    model = build_model(spec, venv, checkpointer, None)
    recorder = IterationRecorder(checkpointer, None, lambda: None, None, row_steps=ALGOS[spec.algo].row_steps)
    started = time.thread_time()
    model.learn(spec.total_timesteps, callback=recorder)
    spent = time.thread_time() - started
    venv.close()
    return spent
