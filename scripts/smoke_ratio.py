"""The smoke ratio (BENCHMARKS.md, "The final report.html"): the wall time of `sweep run configs/smoke.yaml`
(4 runs of 2,048 steps, 2 at a time, report.html written at its end) against one plain stable-baselines3
run of the same size in a fresh interpreter (the smoke spec's env, XML, PPO settings and steps on one torch
thread, then its 2 evaluation episodes), and against the same sweep with `--report-every 0`, alternated
in one invocation; the median of each over the repeats. The goal is a ratio <= 1.4.

    .venv/bin/python scripts/smoke_ratio.py [REPEATS]      # 3 by default: about a minute on 2 idle cores
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "smoke.yaml"
PLAIN = f"""
import torch
torch.set_num_threads(1)
import gymnasium as gym
from stable_baselines3 import PPO
from stable_baselines3.common.evaluation import evaluate_policy
env = gym.make("HalfCheetah-v5", xml_file={str(ROOT / "xml_models" / "tiny_walker.xml")!r}, max_episode_steps=200)
model = PPO("MlpPolicy", env, n_steps=256, batch_size=64, n_epochs=4, seed=0, device="cpu")
model.learn(2048)
evaluate_policy(model, env, n_eval_episodes=2)
"""


def timed(command: list[str]) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    sweep = str(Path(sys.executable).with_name("sweep"))
    times: dict[str, list[float]] = {"sweep": [], "sweep --report-every 0": [], "plain SB3": []}
    with tempfile.TemporaryDirectory(prefix="smoke-ratio-") as tmp:
        for i in range(repeats):
            times["sweep"].append(timed([sweep, "run", str(SMOKE), "--runs-dir", f"{tmp}/a{i}", "-q"]))
            times["sweep --report-every 0"].append(
                timed([sweep, "run", str(SMOKE), "--runs-dir", f"{tmp}/b{i}", "-q", "--report-every", "0"]))
            times["plain SB3"].append(timed([sys.executable, "-c", PLAIN]))
    medians = {name: statistics.median(values) for name, values in times.items()}
    load = os.getloadavg()[0]
    for name, values in times.items():
        print(f"{name:24s} median {medians[name]:5.2f} s  ({', '.join(f'{v:.2f}' for v in values)})")
    plain = medians["plain SB3"]
    print(f"smoke ratio: {medians['sweep'] / plain:.2f} (report off: {medians['sweep --report-every 0'] / plain:.2f}); "
          f"{repeats} alternated repeats, load {load:.1f} at the end")


if __name__ == "__main__":
    main()
