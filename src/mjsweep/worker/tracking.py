"""Experiment tracking with Weights & Biases: the check before launch, and the worker's logger.

wandb is imported only by a worker whose run asks for it. Each worker starts a W&B run of its own, with
everything it needs in its spec.json (project, mode, entity, tags), so workers never wait on each other;
offline runs are written to <run dir>/wandb/ and uploaded later with `wandb sync`.
"""

from __future__ import annotations

import importlib.util
import netrc
import os
from typing import Any
from urllib.parse import urlparse

from ..spec.sweepspec import SweepSpec
from ..sweepdir.csvfiles import ProgressRow
from ..sweepdir.files import RunDir
from ..sweepdir.models import RunSpec

DEFAULT_HOST = "https://api.wandb.ai"
SUMMARY_KEYS = ("eval_mean_return", "eval_std_return", "best_eval_mean_return", "best_eval_timesteps", "timesteps",
                "fps", "training_s", "eval_s", "periodic_eval_s", "save_s", "startup_s", "torch_threads")


def check_tracking(spec: SweepSpec) -> None:
    """Before anything starts: the package is there, and an online run has a login. SpecError otherwise."""
    settings = spec.tracking.wandb
    if settings is None:
        return
    where = ("tracking", "wandb")
    if importlib.util.find_spec("wandb") is None:
        raise spec.locator.error(where, "W&B tracking needs the wandb package: pip install 'mjsweep[wandb]'")
    if settings.mode == "online" and not has_login():
        raise spec.locator.error((*where, "mode"), "online W&B tracking needs a login: run `wandb login` or "
                                 "set WANDB_API_KEY (or use mode: offline and `wandb sync` later)")


def has_login() -> bool:
    """An API key in the environment, or in ~/.netrc for the W&B host (where `wandb login` puts it)."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    host = urlparse(os.environ.get("WANDB_BASE_URL", DEFAULT_HOST)).hostname or ""
    try:
        return netrc.netrc(os.environ.get("NETRC")).authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False


class WandbLogger:
    """One worker's W&B run: grouped by variant and grid point, tagged by seed, the run's spec as config.
    Its id comes from the run's content hash, so a resumed attempt continues the same W&B run."""

    def __init__(self, spec: RunSpec, run: RunDir):
        import wandb

        settings = spec.wandb
        assert settings is not None
        self._wandb = wandb
        self.run = wandb.init(
            project=settings.project, entity=settings.entity, mode=settings.mode, dir=str(run.path),
            id=f"{spec.sweep}-{spec.content_hash[:16]}", name=spec.run_id, group=spec.group, job_type="train",
            tags=[f"variant={spec.variant}", f"seed={spec.seed}", *settings.tags], resume="allow",
            config=spec.model_dump(mode="json"),
            # No console capture (log.txt has it) and no system-metrics sampler: it would take CPU from
            # the one core this run is given.
            settings=wandb.Settings(console="off", silent=True, disable_git=True, x_disable_stats=True,
                                    x_disable_machine_info=True))
        self.run.define_metric("timesteps")
        self.run.define_metric("*", step_metric="timesteps")

    def log_progress(self, row: ProgressRow) -> None:
        """A progress.csv row, against timesteps (so that a resumed run's rows join the curve)."""
        metrics = {"timesteps": row.timesteps, "train/fps": row.fps, "train/ep_rew_mean": row.ep_rew_mean,
                   "train/ep_len_mean": row.ep_len_mean, "time/rollout_s": row.rollout_s,
                   "time/train_s": row.train_s, "time/wall_s": row.wall_s}
        self.run.log({name: value for name, value in metrics.items() if value is not None})

    def log_evaluation(self, timesteps: int, mean: float, std: float) -> None:
        """A periodic evaluation (evaluations.csv's row), against timesteps."""
        self.run.log({"timesteps": timesteps, "eval/mean_return": mean, "eval/std_return": std})

    def finish(self, result: dict[str, Any] | None, exit_code: int) -> None:
        """The final result in the run's summary; the W&B run ends with the worker's exit code."""
        if result:
            self.run.summary.update({k: result[k] for k in SUMMARY_KEYS if result.get(k) is not None})
        self.run.finish(exit_code=exit_code)


def start_logger(spec: RunSpec, run: RunDir) -> WandbLogger | None:
    return WandbLogger(spec, run) if spec.wandb is not None else None
