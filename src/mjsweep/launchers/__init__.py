"""How runs are started: the Launcher protocol and its implementations, each imported only when chosen."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ..errors import LauncherConfigError

if TYPE_CHECKING:  # imported for annotations only: `sweep run` starts its template before the spec's imports
    from ..spec.sweepspec import SweepSpec
    from .base import Launcher
    from .template_client import TemplateProcess

BACKENDS = ("local", "ray", "slurm")
STARTS = ("auto", "exec", "template")
"""`--start`: how a local run's process begins. auto: template on Linux, else exec."""


def resolve_start(backend: str, start: str) -> str:
    """`--start` as the backend will use it: exec or template. auto is template for local runs on Linux
    (the chain of PDEATHSIG that keeps a forked run from outliving the launcher is Linux's)."""
    if start not in STARTS:
        raise LauncherConfigError(f"--start {start!r}: expected one of {', '.join(STARTS)}")
    if start == "template" and backend != "local":
        raise LauncherConfigError(f"--start template is for --backend local; {backend} starts every run by exec")
    if start == "auto":
        return "template" if backend == "local" and sys.platform == "linux" else "exec"
    return start


_prestarted: TemplateProcess | None = None
"""The template prestart_template started before the command line was parsed, until early_template adopts it."""


def prestart_template(run_args: list[str]) -> None:
    """Start the template for `sweep run RUN_ARGS` before the command line's own imports (typer, rich,
    pydantic: a fifth of a second), reading --backend and --start ahead of the parser: the first round of
    runs waits for the template's imports, so every moment it starts sooner is one the sweep ends sooner.
    A wrong guess costs nothing but the early start: early_template decides on the parsed options."""
    global _prestarted
    if "--dry-run" in run_args or "--help" in run_args:
        return
    options = {"--backend": "local", "--start": "auto"}
    for i, arg in enumerate(run_args):
        name, equals, value = arg.partition("=")
        if name in options:
            options[name] = value if equals else (run_args[i + 1] if i + 1 < len(run_args) else "")
    try:
        _prestarted = early_template(options["--backend"], options["--start"])
    except LauncherConfigError:
        pass  # the parser says so, in its own words


def early_template(backend: str, start: str) -> TemplateProcess | None:
    """The template process, started now so that its imports overlap the sweep's own checks (or the one
    prestart_template started, if these options want one); None when runs will not be forked. Raises
    LauncherConfigError for a bad --start."""
    global _prestarted
    prestarted, _prestarted = _prestarted, None
    wanted = False
    try:
        wanted = resolve_start(backend, start) == "template"
    finally:
        if prestarted is not None and not (wanted and prestarted.alive):
            prestarted.close()
            prestarted = None
    if not wanted:
        return None
    if prestarted is not None:
        return prestarted
    from .template_client import TemplateError, TemplateProcess

    try:
        return TemplateProcess.for_workers()
    except TemplateError:
        return None  # the launcher tries again at its first run, and says why if it fails


def build_launcher(backend: str, spec: SweepSpec, gpus: str | None = None, address: str | None = None,
                   workers: int | None = None, start: str = "auto",
                   template: TemplateProcess | None = None) -> Launcher:
    """The launcher for `--backend`; its module is imported only when chosen. A local launcher adopts
    `template` (from early_template), and closes it."""
    start = resolve_start(backend, start)
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
        from .gpus import detect_gpus
        from .local import LocalLauncher

        gpu_ids = detect_gpus(gpus) if spec.device == "cuda" else []
        if spec.device == "cuda" and not gpu_ids:
            raise LauncherConfigError("device: cuda, but no GPU found (nvidia-smi, CUDA_VISIBLE_DEVICES, "
                                      "MJSWEEP_GPUS or --gpus)")
        if template is not None and spec.device != "cpu":  # GPU runs are exec'd: nothing to fork
            template.close()
            template = None
        return LocalLauncher(gpus=gpu_ids, runs_per_gpu=spec.runs_per_gpu, start_with=start, template=template)
    raise LauncherConfigError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")

