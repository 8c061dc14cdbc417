"""GPU slots on one workstation, with a fake device list (no GPU is needed)."""

from __future__ import annotations

import ast
import sys

import pytest

from helpers.commands import run_sweep, write_spec
from helpers.fake_sweep import numbered_run
from mjsweep.engine.scheduler import Scheduler, SchedulerOptions
from mjsweep.launchers.gpus import GpuSlots, detect_gpus
from mjsweep.launchers.local import LocalLauncher
from mjsweep.sweepdir.files import SweepDir

RECORD = """
import os, sys, time
with open(sys.argv[1], "a") as fh:
    fh.write(f"start {os.path.basename(os.getcwd())} {time.monotonic()} {os.environ['CUDA_VISIBLE_DEVICES']!r}\\n")
time.sleep(0.3)
with open(sys.argv[1], "a") as fh:
    fh.write(f"end {os.path.basename(os.getcwd())} {time.monotonic()} -\\n")
open("result.json", "w").write('{"eval_mean_return": 0}')
"""


def test_slots_round_robin_and_runs_per_gpu():
    slots = GpuSlots(["0", "1"], runs_per_gpu=2)
    assert [slots.take() for _ in range(4)] == ["0", "1", "0", "1"]
    assert not slots.free()
    with pytest.raises(RuntimeError):
        slots.take()
    slots.give_back("1")
    assert slots.take() == "1"


def test_detect_gpus_prefers_explicit_lists(monkeypatch):
    monkeypatch.setenv("MJSWEEP_GPUS", "2, 3")
    assert detect_gpus() == ["2", "3"]
    assert detect_gpus("5") == ["5"]
    monkeypatch.setenv("MJSWEEP_GPUS", "")
    assert detect_gpus() == []


def test_cuda_runs_share_gpus_by_slot_and_cpu_runs_see_none(tmp_path):
    log = tmp_path / "events.txt"
    launcher = LocalLauncher(command=lambda d: [sys.executable, "-c", RECORD, str(log)], gpus=["0", "1"])
    runs = [numbered_run(i).model_copy(update={"device": "cuda"}) for i in range(5)] + [numbered_run(9)]
    sweep = SweepDir(tmp_path / "sweep")
    for run in runs:
        sweep.run(run.run_id).path.mkdir(parents=True)
    options = SchedulerOptions(max_workers=4, poll_s=0.05)
    outcome = Scheduler(launcher, sweep, options).run(runs)
    assert outcome.exit_code == 0 and len(outcome.succeeded) == 6
    holding: dict[str, str] = {}
    seen_gpus = set()
    for line in sorted(log.read_text().splitlines(), key=lambda line: float(line.split()[2])):
        kind, run_id, _, gpu = line.split()
        if kind == "end":
            holding.pop(run_id, None)
            continue
        gpu = ast.literal_eval(gpu)  # the repr written above
        if run_id == "r9":
            assert gpu == ""  # a CPU run sees no GPU
            continue
        assert gpu in ("0", "1") and gpu not in holding.values()  # one run per GPU at a time
        holding[run_id] = gpu
        seen_gpus.add(gpu)
    assert seen_gpus == {"0", "1"}


def test_cuda_spec_without_a_gpu_is_invalid_input(tmp_path, tiny_spec):
    tiny_spec["device"] = "cuda"
    spec = write_spec(tmp_path, tiny_spec)
    proc = run_sweep("run", str(spec), env={"MJSWEEP_GPUS": ""})
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("error: device: cuda, but no GPU found (nvidia-smi, CUDA_VISIBLE_DEVICES, "
                                   "MJSWEEP_GPUS or --gpus)")
    assert not (tmp_path / "runs").exists()
