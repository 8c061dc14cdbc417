"""Which GPUs this machine offers to runs, and how GPU slots are handed out."""

from __future__ import annotations

import os
import shutil
import subprocess


def detect_gpus(explicit: str | None = None) -> list[str]:
    """GPU ids to hand out: `explicit` ("0,1"), else $MJSWEEP_GPUS, else $CUDA_VISIBLE_DEVICES, else nvidia-smi.

    nvidia-smi rather than torch.cuda: the launcher must not import torch.
    """
    for text in (explicit, os.environ.get("MJSWEEP_GPUS"), os.environ.get("CUDA_VISIBLE_DEVICES")):
        if text is not None:
            return [g.strip() for g in text.split(",") if g.strip() and g.strip() != "-1"]
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
    except (subprocess.SubprocessError, OSError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


class GpuSlots:
    """`runs_per_gpu` slots on each GPU; a run gets the least-loaded GPU, ties broken round-robin."""

    def __init__(self, gpus: list[str], runs_per_gpu: int = 1):
        self.gpus, self.runs_per_gpu = list(gpus), runs_per_gpu
        self.in_use = dict.fromkeys(self.gpus, 0)
        self._next = 0

    def free(self) -> bool:
        return any(n < self.runs_per_gpu for n in self.in_use.values())

    def take(self) -> str:
        if not self.free():
            raise RuntimeError("no free GPU slot")
        order = self.gpus[self._next:] + self.gpus[:self._next]
        gpu = min((g for g in order if self.in_use[g] < self.runs_per_gpu), key=lambda g: self.in_use[g])
        self.in_use[gpu] += 1
        self._next = (self.gpus.index(gpu) + 1) % len(self.gpus)
        return gpu

    def give_back(self, gpu: str) -> None:
        self.in_use[gpu] -= 1
