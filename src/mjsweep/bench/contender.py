"""The contender a careful user writes by hand: GNU parallel -j N over a plain training script, with
OMP_NUM_THREADS and MKL_NUM_THREADS set to 1 and torch.set_num_threads(1) in the script.

The script trains exactly what the naive batch trains (bench/naive.py: same env, PPO, steps, one evaluation
episode), records its episodes in a monitor.csv as an mjsweep run does, and writes its figures as JSON; the
bench times the whole `parallel` invocation. Without GNU parallel
on PATH the contender is skipped, and the bench says so in one line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from statistics import mean

from ..childproc import THREAD_VARS
from .figures import Batch, BenchConfig
from .naive import NaiveJob, NaiveResult

SCRIPT = '''\
"""One PPO training with every thread pool at one thread, as a user runs it under GNU parallel."""
import json
import sys

import torch

torch.set_num_threads(1)
torch.set_num_interop_threads(1)

from mjsweep.bench.naive import NaiveJob, train_default_threads  # noqa: E402

job_file, seed, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
job = NaiveJob(**{**json.load(open(job_file)), "seed": seed})
result = train_default_threads(job, monitor_csv=out.removesuffix(".json") + ".monitor.csv")
with open(out, "w") as f:
    json.dump(result.__dict__, f)
'''


def gnu_parallel() -> str | None:
    """The path of GNU parallel, or None when `parallel` is missing or another program (moreutils has one)."""
    path = shutil.which("parallel")
    if path is None:
        return None
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30,
                                 stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if "GNU parallel" in version.stdout else None


MISSING = "GNU parallel is not installed (apt-get install parallel): its contender is skipped"


def command(parallel: str, n: int, script: Path, job_file: Path, out: Path) -> list[str]:
    """`parallel -j N python script.py job.json SEED out/SEED.json ::: 0 .. N-1`: one training per seed."""
    return [parallel, "--will-cite", "-j", str(n), "--halt", "never", sys.executable, str(script), str(job_file),
            "{}", str(out / "{}.json"), ":::", *(str(seed) for seed in range(n))]


def parallel_batch(config: BenchConfig, xml: Path, n: int, folder: Path, parallel: str) -> Batch:
    """N trainings launched at once by GNU parallel -j N, every thread pool capped at one thread."""
    from .batches import children_cpu_s, training_fps

    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "results"
    out.mkdir(exist_ok=True)
    script, job_file = folder / "train_one.py", folder / "job.json"
    script.write_text(SCRIPT, encoding="utf-8")
    job = NaiveJob(config.env, str(xml), dict(config.env_kwargs), config.max_episode_steps, dict(config.ppo),
                   config.steps, seed=0)
    job_file.write_text(json.dumps({k: v for k, v in asdict(job).items() if k != "seed"}), encoding="utf-8")
    env = {**os.environ, **dict.fromkeys(THREAD_VARS, "1")}
    children_before, started = children_cpu_s(), time.monotonic()
    subprocess.run(command(parallel, n, script, job_file, out), env=env, cwd=folder, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.monotonic() - started
    workers_cpu = children_cpu_s() - children_before
    results = _read(out, n)
    fps = [training_fps(r.timesteps, r.rollout_s, r.train_s) for r in results]
    return Batch(
        kind="parallel", n=n, wall_s=round(wall, 3), timesteps=sum(r.timesteps for r in results),
        run_fps=round(mean(fps), 1) if fps else 0.0,
        rollout_s=round(mean(r.rollout_s for r in results), 3) if results else None,
        train_s=round(mean(r.train_s for r in results), 3) if results else None,
        startup_s=round(max(r.startup_s for r in results), 3) if results else None,
        peak_rss_mb=round(max(r.peak_rss_mb for r in results), 1) if results else None,
        torch_threads=max(r.torch_threads for r in results) if results else None,
        workers_cpu_s=round(workers_cpu, 2), failed=n - len(results),
    )


def _read(out: Path, n: int) -> list[NaiveResult]:
    """The figures of each training that wrote them (a failed one wrote none)."""
    results = []
    for seed in range(n):
        try:
            results.append(NaiveResult(**json.loads((out / f"{seed}.json").read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError):
            continue
    return results
