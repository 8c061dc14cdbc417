"""How runs are started: the Launcher protocol and its implementations, each imported only when chosen."""

from __future__ import annotations

from ..spec import SweepSpec

BACKENDS = ("local",)


class LauncherConfigError(Exception):
    """The chosen backend cannot run this spec here (no GPU for device: cuda, no cluster, ...)."""


def build_launcher(backend: str, spec: SweepSpec, gpus: str | None = None, address: str | None = None):
    """The launcher for `--backend`; its module is imported only when chosen."""
    if backend == "local":
        from ..gpus import detect_gpus
        from .local import LocalLauncher

        gpu_ids = detect_gpus(gpus) if spec.device == "cuda" else []
        if spec.device == "cuda" and not gpu_ids:
            raise LauncherConfigError("device: cuda, but no GPU found (nvidia-smi, CUDA_VISIBLE_DEVICES, "
                                      "MJSWEEP_GPUS or --gpus)")
        return LocalLauncher(gpus=gpu_ids, runs_per_gpu=spec.runs_per_gpu)
    raise LauncherConfigError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
