"""How runs are started: the Launcher protocol and its implementations, each imported only when chosen."""

from __future__ import annotations

import sys

from ..errors import LauncherConfigError
from ..spec import SweepSpec
from .base import Launcher

BACKENDS = ("local", "ray", "slurm")
STARTS = ("auto", "exec", "template")
"""`--start`: how a local run's process begins. auto: template on Linux, else exec."""


def build_launcher(backend: str, spec: SweepSpec, gpus: str | None = None, address: str | None = None,
                   workers: int | None = None, start: str = "auto") -> Launcher:
    """The launcher for `--backend`; its module is imported only when chosen."""
    if start not in STARTS:
        raise LauncherConfigError(f"--start {start!r}: expected one of {', '.join(STARTS)}")
    if start == "template" and backend != "local":
        raise LauncherConfigError(f"--start template is for --backend local; {backend} starts every run by exec")
    if backend == "ray":
        try:
            from .ray import RayLauncher
        except ImportError as exc:
            raise LauncherConfigError(f"--backend ray needs Ray ({exc}): pip install 'mjsweep[ray]'") from None
        return RayLauncher(address, runs_per_gpu=spec.runs_per_gpu)
    if backend == "slurm":
        from .slurm import SlurmLauncher

        return SlurmLauncher(spec.slurm, throttle=workers)
    if backend == "local":
        from ..gpus import detect_gpus
        from .local import LocalLauncher

        gpu_ids = detect_gpus(gpus) if spec.device == "cuda" else []
        if spec.device == "cuda" and not gpu_ids:
            raise LauncherConfigError("device: cuda, but no GPU found (nvidia-smi, CUDA_VISIBLE_DEVICES, "
                                      "MJSWEEP_GPUS or --gpus)")
        if start == "auto":
            start = "template" if sys.platform == "linux" else "exec"  # prctl(PDEATHSIG) is Linux's
        return LocalLauncher(gpus=gpu_ids, runs_per_gpu=spec.runs_per_gpu, start_with=start)
    raise LauncherConfigError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")

