"""The run's model for any algo (SB3's or sb3-contrib's): built from the spec's hyperparameters in SB3's terms
(schedules, activation classes, action noise), or loaded from a checkpoint with its replay buffer."""

from __future__ import annotations

import importlib.util
import inspect
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.noise import ActionNoise, NormalActionNoise, OrnsteinUhlenbeckActionNoise
from stable_baselines3.common.vec_env import VecEnv

from ..plan.runs import RunSpec
from ..spec.activations import ACTIVATION_CLASSES, activation_name
from ..spec.algos import ALGOS, NOISE_KEYS, algorithm_class, schedule_start
from ..sweepdir.files import RunDir
from ..sweepdir.models import CheckpointRecord
from .checkpoints import Checkpointer


def tensorboard_dir(spec: RunSpec, run: RunDir) -> str | None:
    """<run dir>/tensorboard when the run's spec.json sets tensorboard (from the sweep's spec) and the
    package is installed."""
    if not spec.tensorboard:
        return None
    if importlib.util.find_spec("tensorboard") is None:
        print("mjsweep.worker: warning: the spec sets tensorboard: true, but the tensorboard package is not "
              "installed (pip install tensorboard); training without TensorBoard logs", flush=True)
        return None
    return str(run.tensorboard)


class LinearSchedule:
    """RL Zoo's lin_<start>: start at the beginning of training, decaying linearly to 0 at its end.

    SB3 calls it with the fraction of the run still to go (1 -> 0), computed from the run's timesteps
    and total, so a resumed run continues the decay where its checkpoint left it.
    """

    def __init__(self, start: float):
        self.start = start

    def __call__(self, progress_remaining: float) -> float:
        return progress_remaining * self.start

    def __repr__(self) -> str:
        return f"lin_{self.start}"


def build_model(spec: RunSpec, venv: VecEnv, checkpointer: Checkpointer,
                resume: CheckpointRecord | None, exact: bool = False) -> BaseAlgorithm:
    """exact: the resume puts the checkpoint's exact state back (worker/exact.py), so the envs are neither
    reset nor re-seeded."""
    tensorboard_log = tensorboard_dir(spec, checkpointer.run)
    cls = algorithm_class(spec.algo)
    if resume:
        model = cls.load(str(checkpointer.run.checkpoints / resume.model_file), env=venv, device=spec.device,
                         tensorboard_log=tensorboard_log, custom_objects=schedules(spec), force_reset=not exact)
        checkpointer.load_replay_buffer(model, resume)
        if not exact:
            # A different env seed than the first attempt's, so the resumed episodes are not replays.
            venv.seed(spec.seed + resume.timesteps)
        return _quiet(model, tensorboard_log)
    kwargs = sb3_kwargs(spec, venv)
    return _quiet(cls(spec.policy, venv, seed=spec.seed, device=spec.device, verbose=0,
                      tensorboard_log=tensorboard_log, **kwargs), tensorboard_log)


def _quiet(model: BaseAlgorithm, tensorboard_log: str | None) -> BaseAlgorithm:
    """Without TensorBoard, a logger that writes nowhere: SB3's own default makes an empty /tmp/SB3-<time>
    folder for every training, outside the sweep folder. progress.csv is the worker's (iterations.py)."""
    if tensorboard_log is None:
        from stable_baselines3.common.logger import Logger

        model.set_logger(Logger(folder=None, output_formats=[]))
    return model


def sb3_kwargs(spec: RunSpec, venv: VecEnv) -> dict[str, Any]:
    """The run's hyperparameters as SB3 takes them: schedules, activation classes, train_freq as a tuple,
    RL Zoo's noise_type / noise_std as an action noise."""
    kwargs = dict(spec.hyperparams)
    for key in ALGOS[spec.algo].scheduled:
        if key in kwargs:
            kwargs[key] = schedule(kwargs[key])
    policy_kwargs = dict(kwargs.pop("policy_kwargs", None) or {})
    if isinstance(policy_kwargs.get("activation_fn"), str):
        name = activation_name(policy_kwargs["activation_fn"])
        assert name is not None, "the spec checked the activation's name"
        policy_kwargs["activation_fn"] = getattr(torch.nn, ACTIVATION_CLASSES[name])
    kwargs["policy_kwargs"] = policy_kwargs or None
    if isinstance(kwargs.get("train_freq"), list):
        kwargs["train_freq"] = tuple(kwargs["train_freq"])
    noise = {key: kwargs.pop(key) for key in NOISE_KEYS if key in kwargs}
    if noise:
        kwargs["action_noise"] = action_noise(noise["noise_type"], float(noise["noise_std"]),
                                              int(np.prod(venv.action_space.shape or (1,))))
    return kwargs


def schedule(value: Any) -> Any:
    """A scheduled argument's value as SB3 takes it: RL Zoo's lin_<start> as a LinearSchedule, else as is."""
    start = schedule_start(value)
    return LinearSchedule(start) if start is not None else value


def schedules(spec: RunSpec) -> dict[str, Any]:
    """The run's scheduled arguments (spec.algos: learning_rate, PPO's clip_range) as a fresh model of its
    spec gets them, the constructor's default where the spec sets none; and lr_schedule.

    A resume loads the checkpoint with these as SB3's custom_objects, in place of the pickled ones: a
    LinearSchedule is pickled by its module path, and the class has lived in other modules before
    (mjsweep.training, mjsweep.worker.training), so no checkpoint needs it where it was.
    """
    defaults = inspect.signature(algorithm_class(spec.algo)).parameters
    values = {key: schedule(spec.hyperparams.get(key, defaults[key].default)) for key in ALGOS[spec.algo].scheduled}
    # SB3 derives lr_schedule from learning_rate again once the model is loaded (_setup_lr_schedule);
    # this stands in for the pickled one until then.
    values["lr_schedule"] = values["learning_rate"]
    return values


def action_noise(kind: str, std: float, n_actions: int) -> ActionNoise:
    """RL Zoo's noise_type and noise_std: Gaussian or Ornstein-Uhlenbeck exploration noise on each action."""
    mean, sigma = np.zeros(n_actions), std * np.ones(n_actions)
    if kind == "normal":
        return NormalActionNoise(mean=mean, sigma=sigma)
    return OrnsteinUhlenbeckActionNoise(mean=mean, sigma=sigma)
