"""The training algorithms a spec may choose (`algo`) and the keyword arguments each takes, as data.

Kept apart from stable-baselines3 so that loading a spec never imports torch; tests/test_algos.py checks
each set against the installed class's signature. `hyperparameter_problem` checks one value before
anything starts, as the spec's errors do for every other key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm

ALGO_NAMES = ("ppo", "sac", "td3", "a2c")
_COMMON = frozenset({
    "policy", "learning_rate", "gamma", "stats_window_size", "tensorboard_log", "policy_kwargs", "verbose",
    "seed", "device", "_init_setup_model",
})
_ON_POLICY = _COMMON | {"n_steps", "gae_lambda", "ent_coef", "vf_coef", "max_grad_norm", "use_sde",
                        "sde_sample_freq", "rollout_buffer_class", "rollout_buffer_kwargs",
                        "normalize_advantage"}
_OFF_POLICY = _COMMON | {"buffer_size", "learning_starts", "batch_size", "tau", "train_freq", "gradient_steps",
                         "action_noise", "replay_buffer_class", "replay_buffer_kwargs", "optimize_memory_usage",
                         "n_steps"}


@dataclass(frozen=True)
class Algo:
    name: str
    kwargs: frozenset[str]
    """The class's keyword arguments (besides env)."""
    off_policy: bool
    scheduled: tuple[str, ...] = ("learning_rate",)
    """Arguments that take RL Zoo's lin_<start> schedules."""
    row_steps: int = 1000
    """A progress row once an SB3 iteration ends this many timesteps after the last row. PPO's iterations
    (n_steps of 2048 by default) make a row each; A2C's (5 steps), SAC's and TD3's (train_freq, 1 step)
    would write a line per handful of env steps."""

    @property
    def label(self) -> str:
        return self.name.upper()


ALGOS = {
    "ppo": Algo("ppo", _ON_POLICY | {"batch_size", "n_epochs", "clip_range", "clip_range_vf", "target_kl"},
                off_policy=False, scheduled=("learning_rate", "clip_range"), row_steps=1),
    "a2c": Algo("a2c", _ON_POLICY | {"rms_prop_eps", "use_rms_prop"}, off_policy=False),
    "sac": Algo("sac", _OFF_POLICY | {"ent_coef", "target_update_interval", "target_entropy", "use_sde",
                                      "sde_sample_freq", "use_sde_at_warmup"}, off_policy=True),
    "td3": Algo("td3", _OFF_POLICY | {"policy_delay", "target_policy_noise", "target_noise_clip"}, off_policy=True),
}
# Arguments mjsweep sets itself, from other spec keys or per run.
OWNED = {
    "seed": "use the top-level 'seeds' key",
    "device": "use the top-level 'device' key",
    "verbose": "the worker logs progress itself",
    "tensorboard_log": "use the top-level 'tensorboard' key",
    "_init_setup_model": "internal to stable-baselines3",
    "rollout_buffer_class": "classes cannot be named in YAML",
    "replay_buffer_class": "classes cannot be named in YAML",
    "action_noise": "use noise_type and noise_std, as RL Zoo does",
}
# RL Zoo's spellings that are not constructor arguments: the exploration noise of off-policy algorithms.
NOISE_KEYS = ("noise_type", "noise_std")
NOISE_TYPES = ("normal", "ornstein-uhlenbeck")
INTEGER_KWARGS = ("n_steps", "batch_size", "n_epochs", "sde_sample_freq", "stats_window_size", "buffer_size",
                  "learning_starts", "gradient_steps", "target_update_interval", "policy_delay")
_LEAST = {"sde_sample_freq": -1, "learning_starts": 0, "gradient_steps": -1}
# RL Zoo's linear schedules: "lin_3e-4" decays linearly from 3e-4 to 0 over the run.
SCHEDULE = re.compile(r"^lin_([0-9.eE+-]+)$")
_AUTO = re.compile(r"^auto(_[0-9.eE+-]+)?$")


def algorithm_class(name: str) -> type[BaseAlgorithm]:
    """The stable-baselines3 class of a run's `algo` (imports torch: for the worker's and render processes)."""
    import stable_baselines3

    cls: type[BaseAlgorithm] = getattr(stable_baselines3, ALGOS[name].label)
    return cls


def accepted(algo: Algo) -> frozenset[str]:
    """The keys a section of this algorithm may hold: its arguments, and the noise keys where it has noise."""
    return algo.kwargs | (frozenset(NOISE_KEYS) if "action_noise" in algo.kwargs else frozenset())


def schedule_start(value: Any) -> float | None:
    """The initial value of an RL Zoo schedule string such as "lin_3e-4", else None."""
    match = SCHEDULE.match(value) if isinstance(value, str) else None
    if not match:
        return None
    try:
        return float(match.group(1))
    except ValueError:
        return None


def key_problem(algo: Algo, key: str) -> str | None:
    if key not in accepted(algo):
        allowed = sorted(accepted(algo) - set(OWNED))
        return f"unknown {algo.label} keyword argument {key!r} (known: {', '.join(allowed)})"
    if key in OWNED:
        return f"{key!r} is set by mjsweep: {OWNED[key]}"
    return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def value_problem(algo: Algo, key: str, value: Any) -> str | None:
    """What is wrong with one hyperparameter value, checked before anything starts; None if nothing.
    Counts are whole numbers already (the spec reads 1e6 as 1000000 before this check)."""
    number = _number(value)
    if key in algo.scheduled:
        start = schedule_start(value)
        if isinstance(value, str):
            if start is None:
                return f"{value!r} is neither a number nor a schedule such as 'lin_3e-4'"
            value, number = start, True
        if not number or not value > 0:
            return f"must be > 0 or a schedule such as 'lin_{'3e-4' if key == 'learning_rate' else '0.2'}'" \
                f" (got {value!r})"
    elif key in ("gamma", "tau") and not (number and 0 < value <= 1):
        return f"must be in (0, 1] (got {value!r})"
    elif key == "gae_lambda" and not (number and 0 <= value <= 1):
        return f"must be in [0, 1] (got {value!r})"
    elif key in INTEGER_KWARGS and value is not None:
        whole = value
        least = _LEAST.get(key, 2 if (key, algo.name) == ("batch_size", "ppo") else 1)
        if not isinstance(whole, int) or isinstance(whole, bool) or whole < least:
            return f"must be an integer >= {least} (got {value!r})"
    elif key == "train_freq":
        return _train_freq_problem(value)
    elif key == "ent_coef" and algo.name == "sac":
        if not (number and value > 0) and not (isinstance(value, str) and _AUTO.match(value)):
            return f"must be a number > 0, 'auto' or 'auto_<initial value>' (got {value!r})"
    elif key == "target_entropy" and not (number or value == "auto"):
        return f"must be a number or 'auto' (got {value!r})"
    elif key in ("ent_coef", "vf_coef", "target_policy_noise", "target_noise_clip") and not (number and value >= 0):
        return f"must be a number >= 0 (got {value!r})"
    elif key in ("max_grad_norm", "rms_prop_eps", "noise_std") and not (number and value > 0):
        return f"must be a number > 0 (got {value!r})"
    elif key in ("clip_range_vf", "target_kl") and value is not None and not (number and value > 0):
        return f"must be a number > 0 or null (got {value!r})"
    elif key == "noise_type" and value not in NOISE_TYPES:
        return f"must be one of {', '.join(NOISE_TYPES)} (got {value!r})"
    return None


def _train_freq_problem(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return None
    if isinstance(value, list) and len(value) == 2 and value[1] in ("step", "episode"):
        count = value[0]
        if isinstance(count, int) and not isinstance(count, bool) and count >= 1:
            return None
    return f"must be an integer >= 1 or [n, 'step' | 'episode'] (got {value!r})"


def section_problem(section: dict[str, Any]) -> tuple[str, str] | None:
    """A problem of the keys together: (key, message), else None."""
    if "noise_std" in section and "noise_type" not in section:
        return "noise_std", "needs noise_type (normal or ornstein-uhlenbeck)"
    if "noise_type" in section and "noise_std" not in section:
        return "noise_type", "needs noise_std (the noise's standard deviation, in action units)"
    return None


# An off-policy checkpoint also writes the replay buffer (about 1.3 GB for 1M Ant transitions), so by default
# such runs checkpoint less often: every 100,000 timesteps or 15 minutes, whichever comes first.
OFF_POLICY_CHECKPOINT_EVERY = 100_000
OFF_POLICY_CHECKPOINT_EVERY_S = 900.0
