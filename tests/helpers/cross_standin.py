"""Stands in for `python -m mjsweep.crosseval.evaluator JOB.json` where only its contract with the scheduler
matters. What it does is the word in behaviour.txt beside the trained model: "ok" writes every pair's result
and its "cross: " line; "die-once" kills itself with SIGKILL at its first attempt, then does "ok"; "fail"
says "boom" and exits 1; "forget" exits 0 without writing a result; "stubborn" ignores SIGINT and waits."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from mjsweep.sweepdir.files import write_model
from mjsweep.sweepdir.models import CrossResult

job = json.loads(Path(sys.argv[1]).read_text())
trained = Path(job["model"]).parent
behaviour = (trained / "behaviour.txt").read_text().strip()
attempts = trained / "attempts.txt"
attempt = len(attempts.read_text()) + 1 if attempts.is_file() else 1
attempts.write_text("x" * attempt)
print(f"attempt {attempt}", flush=True)
if behaviour == "die-once" and attempt == 1:
    os.kill(os.getpid(), signal.SIGKILL)
if behaviour == "fail":
    print("boom", flush=True)
    sys.exit(1)
if behaviour == "stubborn":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    (trained / "waiting").write_text(str(os.getpid()))
    while True:
        time.sleep(0.01)
if behaviour != "forget":
    for target in job["targets"]:
        Path(target["result"]).parent.mkdir(parents=True, exist_ok=True)
        write_model(Path(target["result"]), CrossResult(episodes=job["episodes"], mean=1.0, std=0.0, returns=[1.0],
                                                        lengths=[1]))
        print(f"cross: {trained.name} on {target['variant']}: mean return 1.00", flush=True)
