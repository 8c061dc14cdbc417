"""The training algorithms a spec may choose (`algo`) and the keyword arguments each takes, as data.

Kept apart from stable-baselines3 so that loading a spec never imports torch; tests/test_algos.py checks
each set against the installed class's signature. `value_problem` checks one value before anything
starts, as the spec's errors do for every other key. TQC, CrossQ, TRPO and RecurrentPPO come from
sb3-contrib, an optional extra: `missing_package` says so before anything starts.
"""

from __future__ import annotations

import importlib.util
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

from ..errors import shown
from .limits import MAX_COUNT

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm

AlgoName = Literal["ppo", "sac", "td3", "a2c", "tqc", "crossq", "trpo", "recurrent_ppo"]
"""Every algorithm a spec may name: the one list (the spec's `algo`, its sections, ALGOS, the disk estimate)."""
ALGO_NAMES: tuple[str, ...] = get_args(AlgoName)
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
_ENTROPY = frozenset({"ent_coef", "target_entropy", "use_sde", "sde_sample_freq", "use_sde_at_warmup"})
"""SAC's maximum-entropy arguments, which TQC and CrossQ share."""
_CLIPPED = frozenset({"batch_size", "n_epochs", "clip_range", "clip_range_vf", "target_kl"})
CONTRIB = "sb3_contrib"


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
    class_name: str | None = None
    """The class's name in its package; default: the name in capitals."""
    package: str = "stable_baselines3"
    policy: str = "MlpPolicy"
    """The policy a run trains unless its section names another."""
    defaults: dict[str, Any] = field(default_factory=dict, hash=False)
    """An on-policy class's defaults of the arguments the spec's rollout check reads (n_steps, batch_size,
    normalize_advantage)."""
    nullable: frozenset[str] = frozenset()
    """Integer arguments the class takes as None too (RecurrentPPO's batch_size: the whole rollout)."""
    fails_on_batch_of_one: bool = False
    """Normalizes the advantages of a minibatch of one sample too, where PPO leaves them: they come out NaN
    and the run fails at its first update."""
    net_arch: list[int] | dict[str, list[int]] = field(default_factory=lambda: [64, 64], hash=False)
    """The default policy's layers when the section's policy_kwargs name none (the disk estimate)."""

    @property
    def label(self) -> str:
        return self.class_name or self.name.upper()

    @property
    def distribution(self) -> str:
        """The package as pip names it (stable-baselines3, sb3-contrib), for messages."""
        return self.package.replace("_", "-")

    @property
    def has_rollout(self) -> bool:
        """Collects n_steps per env before each update, as on-policy algorithms do (off-policy ones take
        n_steps too, for n-step returns)."""
        return not self.off_policy and "n_steps" in self.kwargs


ALGOS = {algo.name: algo for algo in (
    Algo("ppo", _ON_POLICY | _CLIPPED, off_policy=False, scheduled=("learning_rate", "clip_range"), row_steps=1,
         defaults={"n_steps": 2048, "batch_size": 64, "normalize_advantage": True}),
    Algo("a2c", _ON_POLICY | {"rms_prop_eps", "use_rms_prop"}, off_policy=False,
         defaults={"n_steps": 5, "normalize_advantage": False}),
    Algo("sac", _OFF_POLICY | _ENTROPY | {"target_update_interval"}, off_policy=True, net_arch=[256, 256]),
    Algo("td3", _OFF_POLICY | {"policy_delay", "target_policy_noise", "target_noise_clip"}, off_policy=True,
         net_arch=[400, 300]),
    # sb3-contrib's: SAC with a distributional critic that drops the top quantiles; SAC without target
    # networks (batch normalization instead) that updates the actor every policy_delay steps.
    Algo("tqc", _OFF_POLICY | _ENTROPY | {"target_update_interval", "top_quantiles_to_drop_per_net"},
         off_policy=True, package=CONTRIB, net_arch=[256, 256]),
    Algo("crossq", (_OFF_POLICY - {"tau"}) | _ENTROPY | {"policy_delay"}, off_policy=True,
         class_name="CrossQ", package=CONTRIB, net_arch={"pi": [256, 256], "qf": [1024, 1024]}),
    # A natural-gradient step with a line search in place of PPO's clipped epochs; PPO with an LSTM policy,
    # whose state the worker, cross-evaluation and videos carry from step to step.
    Algo("trpo", (_ON_POLICY - {"ent_coef", "vf_coef", "max_grad_norm"})
         | {"batch_size", "target_kl", "cg_max_steps", "cg_damping", "line_search_shrinking_factor",
            "line_search_max_iter", "n_critic_updates", "sub_sampling_factor"},
         off_policy=False, row_steps=1, package=CONTRIB,
         defaults={"n_steps": 2048, "batch_size": 128, "normalize_advantage": True}),
    Algo("recurrent_ppo", (_ON_POLICY - {"rollout_buffer_class", "rollout_buffer_kwargs"}) | _CLIPPED,
         off_policy=False, scheduled=("learning_rate", "clip_range"), class_name="RecurrentPPO", package=CONTRIB,
         policy="MlpLstmPolicy", defaults={"n_steps": 128, "batch_size": 128, "normalize_advantage": True},
         nullable=frozenset({"batch_size"}), fails_on_batch_of_one=True),
)}
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
# RL Zoo's keys for what its trainer builds around the model from Python classes, which a run does not build.
NOT_APPLIED = {
    "frame_stack": "RL Zoo's frame stacking (VecFrameStack), which mjsweep does not apply",
    "env_wrapper": "RL Zoo's env wrapper classes, which mjsweep does not apply",
    "vec_env_wrapper": "RL Zoo's VecEnv wrapper classes, which mjsweep does not apply",
    "callback": "RL Zoo's callback classes, which mjsweep does not run",
    "monitor_kwargs": "RL Zoo's Monitor arguments: mjsweep writes monitor.csv itself",
    "env_kwargs": "write the env's keyword arguments under the spec's env_kwargs",
}
# RL Zoo's spellings that are not constructor arguments: the exploration noise of off-policy algorithms.
NOISE_KEYS = ("noise_type", "noise_std")
NOISE_TYPES = ("normal", "ornstein-uhlenbeck")
INTEGER_KWARGS = ("n_steps", "batch_size", "n_epochs", "sde_sample_freq", "stats_window_size", "buffer_size",
                  "learning_starts", "gradient_steps", "target_update_interval", "policy_delay",
                  "top_quantiles_to_drop_per_net", "cg_max_steps", "line_search_max_iter", "n_critic_updates",
                  "sub_sampling_factor")
_LEAST = {"sde_sample_freq": -1, "learning_starts": 0, "gradient_steps": -1, "top_quantiles_to_drop_per_net": 0}
# PPO's minibatches normalize advantages over the batch, which needs two samples.
_BATCHES_OF_TWO = ("ppo", "recurrent_ppo")
# RL Zoo's linear schedules: "lin_3e-4" decays linearly from 3e-4 to 0 over the run.
SCHEDULE = re.compile(r"^lin_([0-9.eE+-]+)$")
_AUTO = re.compile(r"^auto(_[0-9.eE+-]+)?$")


def algorithm_class(name: str) -> type[BaseAlgorithm]:
    """The class of a run's `algo`, from SB3 or sb3-contrib (imports torch: for the worker's and render
    processes)."""
    import importlib

    algo = ALGOS[name]
    cls: type[BaseAlgorithm] = getattr(importlib.import_module(algo.package), algo.label)
    return cls


def label_of(name: str) -> str:
    """An algorithm's name as its class spells it (RecurrentPPO); a name from elsewhere in capitals."""
    return ALGOS[name].label if name in ALGOS else name.upper()


def missing_package(name: str) -> str | None:
    """What to install for an algorithm whose package is missing (found, not imported: it imports torch)."""
    if ALGOS[name].package == CONTRIB and importlib.util.find_spec(CONTRIB) is None:
        return f'{name} needs sb3-contrib (pip install "mjsweep[contrib]")'
    return None


def accepted(algo: Algo) -> frozenset[str]:
    """The keys a section of this algorithm may hold: its arguments, and the noise keys where it has noise."""
    return algo.kwargs | (frozenset(NOISE_KEYS) if "action_noise" in algo.kwargs else frozenset())


def schedule_start(value: Any) -> float | None:
    """The initial value of an RL Zoo schedule string such as "lin_3e-4", else None."""
    match = SCHEDULE.match(value) if isinstance(value, str) else None
    if not match:
        return None
    try:
        start = float(match.group(1))
    except ValueError:
        return None
    return start if math.isfinite(start) else None


def key_problem(algo: Algo, key: str) -> str | None:
    if key in NOT_APPLIED:
        return NOT_APPLIED[key]
    if key not in accepted(algo):
        allowed = sorted(accepted(algo) - set(OWNED))
        return f"unknown {algo.label} keyword argument {key!r} (known: {', '.join(allowed)})"
    if key in OWNED:
        return f"{key!r} is set by mjsweep: {OWNED[key]}"
    return None


def _number(value: Any) -> bool:
    """A finite number: SB3 asserts on an infinite learning rate and fails on an infinite coefficient."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def value_problem(algo: Algo, key: str, value: Any) -> str | None:
    """What is wrong with one hyperparameter value, checked before anything starts; None if nothing.
    Counts are whole numbers already (the spec reads 1e6 as 1000000 before this check)."""
    if key in algo.scheduled:
        return _scheduled_problem(key, value)
    if key in INTEGER_KWARGS:
        return None if value is None and key in algo.nullable else _count_problem(algo, key, value)
    if key == "train_freq":
        return _train_freq_problem(value)
    if key == "ent_coef" and "target_entropy" in algo.kwargs:  # SAC, TQC, CrossQ
        if not (_number(value) and value > 0) and not (isinstance(value, str) and _AUTO.match(value)):
            return f"must be a number > 0, 'auto' or 'auto_<initial value>' (got {shown(value)})"
        return None
    return _range_problem(algo, key, value)


def _scheduled_problem(key: str, value: Any) -> str | None:
    """A value that may also be one of RL Zoo's linear schedules ('lin_3e-4')."""
    number = _number(value)
    if isinstance(value, str):
        start = schedule_start(value)
        if start is None:
            return f"{shown(value)} is neither a number nor a schedule such as 'lin_3e-4'"
        value, number = start, True
    if not number or not value > 0:
        return f"must be > 0 or a schedule such as 'lin_{'3e-4' if key == 'learning_rate' else '0.2'}'" \
            f" (got {shown(value)})"
    return None


def _count_problem(algo: Algo, key: str, value: Any) -> str | None:
    least = _LEAST.get(key, 2 if key == "batch_size" and algo.name in _BATCHES_OF_TWO else 1)
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        return f"must be an integer >= {least} (got {shown(value)})"
    if value > MAX_COUNT:
        return f"must be at most 2**31 - 1 = {MAX_COUNT:,}: torch and numpy take counts as C integers " \
            f"(got {shown(value)})"
    return None


def _range_problem(algo: Algo, key: str, value: Any) -> str | None:
    """A number's range, for the keys that have one."""
    number = _number(value)
    if key in ("gamma", "tau") and not (number and 0 < value <= 1):
        return f"must be in (0, 1] (got {shown(value)})"
    if key == "gae_lambda" and not (number and 0 <= value <= 1):
        return f"must be in [0, 1] (got {shown(value)})"
    if key == "target_entropy" and not (number or value == "auto"):
        return f"must be a number or 'auto' (got {shown(value)})"
    if key in ("ent_coef", "vf_coef", "target_policy_noise", "target_noise_clip") and not (number and value >= 0):
        return f"must be a number >= 0 (got {shown(value)})"
    if key in ("max_grad_norm", "rms_prop_eps", "noise_std", "cg_damping") and not (number and value > 0):
        return f"must be a number > 0 (got {shown(value)})"
    if key == "line_search_shrinking_factor" and not (number and 0 < value < 1):
        return f"must be in (0, 1) (got {shown(value)})"
    if key == "target_kl" and algo.name == "trpo" and not (number and value > 0):
        return f"must be a number > 0: TRPO's step size (got {shown(value)})"
    if key in ("clip_range_vf", "target_kl") and value is not None and not (number and value > 0):
        return f"must be a number > 0 or null (got {shown(value)})"
    if key == "noise_type" and value not in NOISE_TYPES:
        return f"must be one of {', '.join(NOISE_TYPES)} (got {shown(value)})"
    return None


def _train_freq_problem(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return None
    if isinstance(value, list) and len(value) == 2 and value[1] in ("step", "episode"):
        count = value[0]
        if isinstance(count, int) and not isinstance(count, bool) and count >= 1:
            return None
    return f"must be an integer >= 1 or [n, 'step' | 'episode'] (got {shown(value)})"


def section_problem(section: dict[str, Any]) -> tuple[str, str] | None:
    """A problem of the keys together: (key, message), else None."""
    if "noise_std" in section and "noise_type" not in section:
        return "noise_std", "needs noise_type (normal or ornstein-uhlenbeck)"
    if "noise_type" in section and "noise_std" not in section:
        return "noise_type", "needs noise_std (the noise's standard deviation, in action units)"
    return None


# An off-policy checkpoint (SAC, TD3, TQC, CrossQ) also writes the replay buffer (about 1.3 GB for 1M Ant
# transitions), so by default such runs checkpoint less often: every 100,000 timesteps or 15 minutes,
# whichever comes first.
OFF_POLICY_CHECKPOINT_EVERY = 100_000
OFF_POLICY_CHECKPOINT_EVERY_S = 900.0
