"""`device: cuda` on a real GPU: runs get GPU slots and train there, a cpu run sees no GPU, a cuda run stopped by
Ctrl-C resumes from its checkpoint on the GPU, and the Python API's policy() of a cuda-trained run acts on the
CPU. Skipped where no GPU is found (nvidia-smi) or torch cannot use one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import mjsweep
from helpers.commands import wait_for, write_spec
from mjsweep.launchers.gpus import detect_gpus

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "mjsweep.ui.cli"]


def _torch_sees_a_gpu() -> bool:
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True)
    return probe.stdout.strip() == "True"


pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not detect_gpus() or not _torch_sees_a_gpu(), reason="no GPU on this machine")]


def smoke(tmp_path: Path, name: str, variants: int = 2, **changes) -> Path:
    """configs/smoke.yaml with its first `variants` variants and the changes."""
    data = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
    data["variants"] = [{**v, "xml": str((ROOT / "configs" / v["xml"]).resolve())}
                        for v in data["variants"][:variants]]
    return write_spec(tmp_path, {**data, "name": name, "runs_dir": str(tmp_path / "runs"), **changes},
                      f"{name}.yaml")


def sweep(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args, "-q", "--report-every", "0"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"})


def results(tmp_path: Path, name: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((tmp_path / "runs" / name).glob("*/result.json"))]


def test_cuda_runs_share_a_gpu_and_cpu_runs_see_none(tmp_path):
    gpu = detect_gpus()[0]
    done = sweep("run", str(smoke(tmp_path, "cuda", device="cuda", runs_per_gpu=2)), "--workers", "4",
                 "--gpus", gpu)
    assert done.returncode == 0, done.stderr
    trained = results(tmp_path, "cuda")
    assert [(r["device"], r["cuda_visible_devices"]) for r in trained] == [("cuda", gpu)] * 4
    assert all(r["eval_mean_return"] is not None for r in trained)
    best = mjsweep.load(tmp_path / "runs" / "cuda").best("walker").policy()
    env = best.make_env()
    observation, _ = env.reset(seed=0)
    action, _ = best.predict(observation)
    assert action.shape == env.action_space.shape and best.model.device.type == "cpu"

    done = sweep("run", str(smoke(tmp_path, "cpu", seeds=1)))
    assert done.returncode == 0, done.stderr
    assert [(r["device"], r["cuda_visible_devices"]) for r in results(tmp_path, "cpu")] == [("cpu", "")] * 2


def test_a_cuda_run_stopped_by_ctrl_c_resumes_on_the_gpu(tmp_path):
    spec = smoke(tmp_path, "resume", variants=1, device="cuda", seeds=1, total_timesteps=24_576,
                 checkpoint_every=1024)
    launcher = subprocess.Popen([*CLI, "run", str(spec), "-q", "--report-every", "0"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: len(list((tmp_path / "runs" / "resume").glob("*/checkpoints/*"))) >= 2, "two checkpoints")
    launcher.send_signal(signal.SIGINT)
    assert launcher.wait(timeout=300) == 130, launcher.stderr.read() if launcher.stderr else ""
    done = sweep("run", str(spec))
    assert done.returncode == 0, done.stderr
    [trained] = results(tmp_path, "resume")
    assert trained["device"] == "cuda" and trained["resumed_from"] > 0
