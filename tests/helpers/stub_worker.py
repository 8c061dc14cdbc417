"""Stands in for `python -m mjsweep.worker RUN_DIR` where only the worker's contract with its launcher
matters: it trains (sleeps) total_timesteps // 100 ticks of 10 ms holding 64 MiB, writes progress.csv
first, stops on SIGINT or SIGTERM with a checkpoint and exit 130, and ends with result.json."""

from __future__ import annotations

import json
import resource
import signal
import sys
import time
from pathlib import Path

run_dir = Path(sys.argv[1])
spec = json.loads((run_dir / "spec.json").read_text())
stop = []
signal.signal(signal.SIGINT, lambda *_: stop.append(1))
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
held = bytearray(64 * 2**20)  # resident: bytearray zero-fills what it allocates
(run_dir / "progress.csv").write_text("iteration,timesteps\n")
print("training", flush=True)
for tick in range(spec["total_timesteps"] // 100):
    if stop:
        (run_dir / "checkpoints").mkdir(exist_ok=True)
        (run_dir / "checkpoints" / "checkpoint.json").write_text(json.dumps({"timesteps": tick * 100}))
        print("stopped by a signal", flush=True)
        sys.exit(130)
    time.sleep(0.01)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
(run_dir / "result.json").write_text(json.dumps({"eval_mean_return": 0.0, "peak_rss_mb": peak}))
