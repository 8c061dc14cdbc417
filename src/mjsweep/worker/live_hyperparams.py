"""The run's hyperparameters set on a model loaded from a checkpoint, so that they are the ones it trains with.

SB3's `load` puts back what the checkpoint saved: `ent_coef`, `gamma`, `vf_coef` from the pickled attributes,
the learning rate inside each optimizer's param_groups from the optimizer's state, SAC's fixed entropy
coefficient as the tensor built from the saved value. A PBT member that copies another's checkpoint trains with
its own, perturbed, values only if each is set where the training reads it (Ray Tune's bug #62173 is this
step missing).
"""

from __future__ import annotations

from typing import Any

import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.utils import FloatSchedule, update_learning_rate

from ..spec.pbtspec import LIVE
from ..sweepdir.models import RunSpec
from .model import schedule


def optimizers(model: BaseAlgorithm) -> list[torch.optim.Optimizer]:
    """Every optimizer SB3's train() steps: the policy's, or the actor's and critic's, and SAC's entropy one."""
    found = [getattr(getattr(model, owner, None), "optimizer", None) for owner in ("policy", "actor", "critic")]
    found.append(getattr(model, "ent_coef_optimizer", None))
    unique: list[torch.optim.Optimizer] = []
    for optimizer in found:
        if isinstance(optimizer, torch.optim.Optimizer) and all(optimizer is not o for o in unique):
            unique.append(optimizer)
    return unique


def set_live(model: BaseAlgorithm, spec: RunSpec) -> None:
    """The spec's values of the LIVE hyperparameters, set where the loaded model's training reads each."""
    given: dict[str, Any] = {k: v for k, v in spec.hyperparams.items() if k in LIVE and hasattr(model, k)}
    for key, value in given.items():
        setattr(model, key, schedule(value))
    if "learning_rate" in given:
        model._setup_lr_schedule()
        lr = model.lr_schedule(model._current_progress_remaining)
        for optimizer in optimizers(model):
            update_learning_rate(optimizer, lr)
    if "clip_range" in given:
        model.clip_range = FloatSchedule(model.clip_range)  # type: ignore[attr-defined]
    if isinstance(given.get("ent_coef"), (int, float)) and hasattr(model, "ent_coef_tensor"):
        model.ent_coef_tensor = torch.tensor(float(given["ent_coef"]), device=model.device)
    buffer = getattr(model, "rollout_buffer", None)
    for key in ("gamma", "gae_lambda"):
        if key in given and buffer is not None and hasattr(buffer, key):
            setattr(buffer, key, given[key])
