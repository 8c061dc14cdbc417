"""Checkpoint cost (BENCHMARKS.md, "Checkpoints"): one PPO run of the tiny walker and one of ANYmal C
(../shared/robots/anybotics_anymal_c/scene.xml with mjsweep/Locomotion-v0), each trained through `sweep run`
with a checkpoint every 512 steps; per robot, the median seconds a checkpoint took to write (checkpoint.json's
save_s, model, statistics and exact state together), the exact state's file, the whole checkpoint, and the
run folder's size once it has finished.

    .venv/bin/python scripts/checkpoint_size.py [ANYMAL_XML]     # about a minute on 2 cores
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "xml_models" / "tiny_walker.xml"
ANYMAL = ROOT.parent / "shared" / "robots" / "anybotics_anymal_c" / "scene.xml"
STEPS, EVERY = 2048, 512


def spec(name: str, env: str, xml: Path) -> dict:
    return {"name": name, "env": env, "variants": [{"name": name, "xml": str(xml)}], "seeds": 1,
            "max_episode_steps": 1000, "total_timesteps": STEPS, "normalize": True, "checkpoint_every": EVERY,
            "ppo": {"n_steps": EVERY, "batch_size": 64, "n_epochs": 1}, "eval": {"episodes": 1}, "runs_dir": "runs"}


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def measure(folder: Path, data: dict) -> dict:
    """One run trained; its checkpoints' save times polled from checkpoint.json as they are written."""
    path = folder / "spec.yaml"
    folder.mkdir()
    path.write_text(yaml.safe_dump(data))
    sweep = subprocess.Popen([str(Path(sys.executable).with_name("sweep")), "run", str(path), "--report-every", "0"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen: dict[int, dict] = {}
    peak = 0
    while sweep.poll() is None:
        for record in folder.glob("runs/*/*/checkpoints/checkpoint.json"):
            try:
                checkpoint = json.loads(record.read_text())
            except (OSError, ValueError):
                continue
            seen[checkpoint["timesteps"]] = checkpoint
        peak = max(peak, folder_bytes(folder / "runs"))
        time.sleep(0.05)
    out = sweep.communicate()[0]
    if sweep.returncode:
        raise SystemExit(out)
    [run] = [p.parent for p in folder.glob("runs/*/*/spec.json")]
    last = max(seen.values(), key=lambda c: c["timesteps"])
    return {"save_s": statistics.median(c["save_s"] for c in seen.values()),
            "exact_bytes": (run / "checkpoints" / last["exact_file"]).stat().st_size,
            "checkpoint_bytes": last["bytes"], "peak_bytes": max(peak, folder_bytes(run)),
            "finished_bytes": folder_bytes(run)}


def main() -> None:
    anymal = Path(sys.argv[1]) if len(sys.argv) > 1 else ANYMAL
    robots = {"tiny walker": spec("tiny", "HalfCheetah-v5", TINY),
              "ANYmal C": spec("anymal", "mjsweep/Locomotion-v0", anymal)}
    print("| robot | checkpoint save (median s) | exact state | checkpoint | run folder at peak | finished |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in robots.items():
            m = measure(Path(tmp) / data["name"], data)
            print(f"| {name} | {m['save_s']:.3f} | {m['exact_bytes'] / 1e3:,.0f} KB | "
                  f"{m['checkpoint_bytes'] / 1e3:,.0f} KB | {m['peak_bytes'] / 1e3:,.0f} KB | "
                  f"{m['finished_bytes'] / 1e3:,.0f} KB |", flush=True)


if __name__ == "__main__":
    main()
