"""How much disk a sweep will take at its peak, before it starts. Pure: runs, their envs' probes, the checkpoints
a run keeps and the runs at once in, a DiskEstimate out; judge() weighs it against the free space.

A run's files, at the sizes stable-baselines3 writes them (tests/test_disk.py compares each with a real file):
- a replay buffer (SAC, TD3): SB3's ReplayBuffer pickled whole, `buffer_size` rows however few it holds;
  per row: observation and next observation at the env's dtype (one only with optimize_memory_usage),
  the action as float32, reward, done and timeout as float32;
- a model zip: the policy's parameters (from net_arch) and the optimizer's state for those it trains (Adam:
  two more copies, RMSprop one), as float32, plus what torch.save and the zip add per tensor;
- an exact state (exact_<t>.npz): each env's physics state, whose size the env probe measured on the real
  robot (robots/physics_state.py), and the generators and counters of the training beside it;
- VecNormalize's statistics (normalize), the logs (monitor, progress, evaluations) and the small JSON files;
- beside the runs, the snapshot of the models they train (the XMLs, their includes, meshes, textures): each
  distinct file not stored yet, once (the caller measures it: `DiskEstimate.snapshot`).

A running run holds `kept` checkpoints (model, statistics, buffer, exact state) and writes one more beside them
before the oldest goes, and up to one best model per checkpoint it keeps and the best itself; a succeeded run
keeps its final checkpoint only (the launcher deletes the older ones: sweepdir.files.RunDir.keep_final_checkpoint),
its final model, its best model and its logs. The sweep is at its peak when every other run has finished and
the `at_once` runs with the most to add are at theirs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..robots.envs import EnvProbe
from ..spec.algos import ALGOS
from ..sweepdir.models import RunSpec

# SB3's defaults, for what a run's section leaves out.
DEFAULT_BUFFER_SIZE = 1_000_000
FLOAT32 = 4
# Measured on SB3 2.x files (tests/test_disk.py holds the estimate to the real sizes).
ZIP_BYTES = 10_000
"""A model zip's data, version and system info entries."""
TENSOR_BYTES = 360
"""What torch.save and the zip add per tensor (parameter, optimizer state, step count)."""
SPACE_BYTES_PER_OBS = 60
"""The pickled observation space in a model zip, per observation element."""
BUFFER_PICKLE_BYTES = 2_000
BUFFER_PICKLE_BYTES_PER_OBS = 20
VECNORMALIZE_BYTES = 1_700
VECNORMALIZE_BYTES_PER_OBS = 36
MONITOR_ROW_BYTES = 32
PROGRESS_ROW_BYTES = 64
EVALUATION_ROW_BYTES = 48
EVALUATION_BYTES_PER_EPISODE = 24
EXACT_BYTES = 17_700
"""An exact state's generators (Python's as JSON, numpy's, torch's), counters and .npz entries."""
EXACT_BYTES_PER_ENV = 1_050
"""Per env beside its physics state: its counters and generator, its last observation and episode start."""
RUN_FILES_BYTES = 48_000
"""spec.json, status.json, result.json, checkpoint.json, best.json, log.txt and the folders, in 4 KB blocks."""
DEFAULT_EPISODE_STEPS = 1000
"""Steps per episode for monitor.csv's rows when the probe did not run: Gymnasium's MuJoCo time limit."""


@dataclass(frozen=True)
class Parts:
    """Bytes by kind of file."""

    buffers: int = 0
    models: int = 0
    """Model zips, VecNormalize statistics and exact states."""
    logs: int = 0

    @property
    def total(self) -> int:
        return self.buffers + self.models + self.logs

    def __add__(self, other: Parts) -> Parts:
        return Parts(self.buffers + other.buffers, self.models + other.models, self.logs + other.logs)

    def __sub__(self, other: Parts) -> Parts:
        return Parts(self.buffers - other.buffers, self.models - other.models, self.logs - other.logs)


@dataclass(frozen=True)
class RunDisk:
    buffer: int
    """One replay buffer file (0 without one)."""
    model: int
    """One model zip."""
    kept: Parts
    """What the run's folder holds once it has succeeded."""
    peak: Parts
    """The most it holds while it runs."""


@dataclass(frozen=True)
class DiskEstimate:
    runs: int
    at_once: int
    kept_checkpoints: int
    peak: Parts
    """The sweep's runs' files at the sweep's peak."""
    buffer_runs: int
    """Runs with a replay buffer."""
    largest_buffer: int
    algos: tuple[str, ...]
    held: str = ""
    """Which checkpoints are held, where that is not `kept_checkpoints` of every run (PBT's segments)."""
    snapshot: int = 0
    """The model files the sweep's snapshot stores before its runs start: each distinct file not stored yet
    (robots/snapshot.missing_bytes), once however many runs read it."""

    @property
    def bytes(self) -> int:
        return self.peak.total + self.snapshot


def estimate(runs: Sequence[RunSpec], probes: Mapping[str, EnvProbe], kept_checkpoints: int,
             at_once: int, final_checkpoint: bool = True) -> DiskEstimate:
    """The peak of `runs` (probes: each variant's env probe) on `at_once` slots, each run keeping the last
    `kept_checkpoints` checkpoints while it runs, and its final one once it has succeeded (final_checkpoint;
    False: none, as the caller counts them)."""
    disks = [run_disk(run, probes[run.variant], kept_checkpoints, final_checkpoint) for run in runs]
    adding = sorted((d.peak - d.kept for d in disks), key=lambda p: p.total, reverse=True)
    peak = sum((d.kept for d in disks), Parts())
    for extra in adding[:max(1, at_once)]:
        peak += extra
    return DiskEstimate(len(runs), min(max(1, at_once), len(runs)), kept_checkpoints, peak,
                        sum(d.buffer > 0 for d in disks), max((d.buffer for d in disks), default=0),
                        tuple(dict.fromkeys(ALGOS[run.algo].label for run in runs)))


def population_estimate(generations: Sequence[Sequence[RunSpec]], probes: Mapping[str, EnvProbe],
                        kept_checkpoints: int, at_once: int) -> DiskEstimate:
    """The peak of PBT's segments, `generations` of them in order: every segment keeps its model, best model
    and logs (which run from step 0 along its lineage); its final checkpoint stays until every segment that
    resumed from it has ended. The peak comes while the last generation runs: the `at_once` running segments
    each at theirs (`kept_checkpoints` and one more), beside the final checkpoints of the generation before and
    of the last generation's segments that are not running."""
    runs = [run for generation in generations for run in generation]
    base = estimate(runs, probes, kept_checkpoints, at_once, final_checkpoint=False)
    last = list(generations[-1]) if generations else []
    held_runs = [*(generations[-2] if len(generations) > 1 else []), *last[max(1, at_once):]]
    held = Parts()
    for run in held_runs:
        probe = probes[run.variant]
        held += run_disk(run, probe, kept_checkpoints).kept - run_disk(run, probe, kept_checkpoints, False).kept
    return dataclasses.replace(base, peak=base.peak + held,
                               held=f"{kept_checkpoints} checkpoints held by each running segment, the final one "
                                    "by each segment the next generation resumes from")


def run_disk(run: RunSpec, probe: EnvProbe, kept_checkpoints: int, final_checkpoint: bool = True) -> RunDisk:
    """One run's files: the most it holds while it runs (at its last checkpoint, `kept_checkpoints` and the new
    one; its final model comes after the older checkpoints have gone), and what it keeps once it has succeeded
    (its final checkpoint, if final_checkpoint, its final model and best model, its logs)."""
    obs, act = math.prod(probe.obs_shape), math.prod(probe.act_shape)
    buffer = replay_buffer_bytes(run, obs, act, probe.obs_itemsize) if ALGOS[run.algo].off_policy else 0
    model = model_bytes(run.algo, run.hyperparams, obs, act)
    stats = vecnormalize_bytes(obs) if run.normalize is not None else 0
    checkpoint = model + stats + exact_state_bytes(run, probe)
    best = model + stats if run.eval_every else 0
    bests = best * best_pairs(run, kept_checkpoints)
    logs = Parts(logs=log_bytes(run, probe))
    final = 1 if final_checkpoint else 0
    kept = Parts(final * buffer, final * checkpoint + model + stats + best) + logs
    # the checkpoints the run writes; a timer may add any number (checkpoint_every_s)
    written = max(1, run.total_timesteps // max(1, run.checkpoint_every)) if run.checkpoint_every_s is None \
        else kept_checkpoints + 1
    during = min(kept_checkpoints + 1, written)  # at its last checkpoint, before the oldest goes
    at_end = min(kept_checkpoints, written)  # beside its final model, before the launcher deletes the older ones
    peak = max(Parts(during * buffer, during * checkpoint + bests),
               Parts(at_end * buffer, at_end * checkpoint + model + stats + bests), key=lambda p: p.total) + logs
    return RunDisk(buffer, model, kept, peak)


def best_pairs(run: RunSpec, kept_checkpoints: int) -> int:
    """Best models a run holds at its last checkpoint: the best of each checkpoint it holds then (the best when
    that checkpoint was taken: an evaluation before it). Those checkpoints span kept_checkpoints *
    checkpoint_every steps, so there is at most one per evaluation within the span, and the one before it."""
    if not run.eval_every:
        return 0
    evaluations = math.ceil(run.total_timesteps / run.eval_every)
    within = kept_checkpoints * max(1, run.checkpoint_every) // run.eval_every + 1
    return min(kept_checkpoints + 1, evaluations, within)


def exact_state_bytes(run: RunSpec, probe: EnvProbe) -> int:
    """An exact_<t>.npz: each env's physics state (as the probe measured it), and what the training adds."""
    return EXACT_BYTES + max(1, run.n_envs) * ((probe.physics_bytes or 0) + EXACT_BYTES_PER_ENV)


def replay_buffer_bytes(run: RunSpec, obs: int, act: int, obs_itemsize: int) -> int:
    """SB3's ReplayBuffer as save_replay_buffer pickles it: every row it allocated, filled or not."""
    params = run.hyperparams
    n_envs = max(1, run.n_envs)
    rows = max(int(params.get("buffer_size", DEFAULT_BUFFER_SIZE)) // n_envs, 1) * n_envs
    observations = 1 if (params.get("optimize_memory_usage") or False) else 2
    row = observations * obs * obs_itemsize + act * FLOAT32 + 3 * FLOAT32  # + reward, done, timeout
    return rows * row + BUFFER_PICKLE_BYTES + BUFFER_PICKLE_BYTES_PER_OBS * obs


def model_bytes(algo: str, hyperparams: Mapping[str, Any], obs: int, act: int) -> int:
    """A saved model's zip: its floats and tensors (model_tensors) and SB3's own entries."""
    stored = model_tensors(algo, hyperparams, obs, act)
    return stored.floats * FLOAT32 + stored.count * TENSOR_BYTES + ZIP_BYTES + SPACE_BYTES_PER_OBS * obs


@dataclass(frozen=True)
class Tensors:
    floats: int
    count: int

    def __add__(self, other: Tensors) -> Tensors:
        return Tensors(self.floats + other.floats, self.count + other.count)

    def times(self, n: int) -> Tensors:
        return Tensors(self.floats * n, self.count * n)


def model_tensors(algo: str, hyperparams: Mapping[str, Any], obs: int, act: int) -> Tensors:
    """What a model zip stores: each network's parameters, and per trained tensor its optimizer's state and
    step count. PPO, A2C: an actor and a critic MLP, action and value heads, log_std; SAC: an actor with mean
    and log_std heads, n_critics Q networks and their targets, log_ent_coef; TD3: an actor, n_critics Q
    networks, and targets of both."""
    policy_kwargs = hyperparams.get("policy_kwargs") or {}
    pi, qf = _net_arch(algo, policy_kwargs)
    if not ALGOS[algo].off_policy:
        features = obs
        lstm = Tensors(0, 0)
        if algo == "recurrent_ppo":  # an LSTM for the actor and (by default) one for the critic, then the MLPs
            hidden = int(policy_kwargs.get("lstm_hidden_size", 256))
            layers = int(policy_kwargs.get("n_lstm_layers", 1))
            critic_lstm = policy_kwargs.get("enable_critic_lstm", True) and not policy_kwargs.get("shared_lstm")
            lstm = _lstm(obs, hidden, layers).times(2 if critic_lstm else 1)
            features = hidden
        log_std = Tensors(act, 1)
        actor = _mlp([features, *pi]) + _mlp([pi[-1] if pi else features, act]) + log_std
        critic = _mlp([features, *qf]) + _mlp([qf[-1] if qf else features, 1])
        if algo == "trpo":  # the policy steps by natural gradient: only the critic has Adam's state
            return actor + _trained(critic)
        adam = algo != "a2c" or hyperparams.get("use_rms_prop") is False
        return _trained(actor + critic + lstm, optimizer_states=2 if adam else 1)
    critics = int(policy_kwargs.get("n_critics", 2))
    heads = _mlp([pi[-1] if pi else obs, act]).times(2)
    log_ent_coef = Tensors(1, 1)
    if algo == "sac":
        q = _mlp([obs + act, *qf, 1]).times(critics)
        return _trained(_mlp([obs, *pi]) + heads + q + log_ent_coef) + q  # + the critics' targets
    if algo == "tqc":  # each critic gives n_quantiles values
        q = _mlp([obs + act, *qf, int(policy_kwargs.get("n_quantiles", 25))]).times(critics)
        return _trained(_mlp([obs, *pi]) + heads + q + log_ent_coef) + q
    if algo == "crossq":  # batch renormalization before each layer, and no target networks
        renormed = [obs, *pi] + [obs + act, *qf] * critics if policy_kwargs.get("batch_norm", True) else []
        trained = _mlp([obs, *pi]) + heads + _mlp([obs + act, *qf, 1]).times(critics) + log_ent_coef
        return _trained(trained + _renorm(renormed)) + _renorm_state(renormed)
    q = _mlp([obs + act, *qf, 1]).times(critics)
    actor = _mlp([obs, *pi, act])
    return _trained(actor + q) + actor + q  # + the targets of both


def _mlp(sizes: Sequence[int]) -> Tensors:
    """Linear layers from each size to the next: a weight and a bias each."""
    pairs = list(zip(sizes, sizes[1:], strict=False))
    return Tensors(sum(a * b + b for a, b in pairs), 2 * len(pairs))


def _lstm(inputs: int, hidden: int, layers: int) -> Tensors:
    """torch's LSTM: per layer, input and hidden weights of four gates and their two biases."""
    first = 4 * hidden * (inputs + hidden) + 8 * hidden
    return Tensors(first + (layers - 1) * (8 * hidden * hidden + 8 * hidden), 4 * layers)


def _renorm(sizes: Sequence[int]) -> Tensors:
    """CrossQ's batch renormalization layers, one of each size: a trained scale and shift."""
    return Tensors(2 * sum(sizes), 2 * len(sizes))


def _renorm_state(sizes: Sequence[int]) -> Tensors:
    """Their running mean and variance, and a step count, saved beside the parameters."""
    return Tensors(2 * sum(sizes) + len(sizes), 3 * len(sizes))


def _trained(params: Tensors, optimizer_states: int = 2) -> Tensors:
    """The parameters with their optimizer's state (Adam: exp_avg and exp_avg_sq; RMSprop: square_avg) and a
    step count per tensor."""
    return Tensors(params.floats * (1 + optimizer_states), params.count * (2 + optimizer_states))


def _net_arch(algo: str, policy_kwargs: Mapping[str, Any]) -> tuple[list[int], list[int]]:
    """The actor's and the critic's hidden layers, as SB3 reads net_arch: a list for both, or a dict with
    pi and vf (PPO, A2C) or qf (SAC, TD3)."""
    arch = policy_kwargs.get("net_arch", ALGOS[algo].net_arch)
    if isinstance(arch, Mapping):
        critic = "qf" if ALGOS[algo].off_policy else "vf"
        return list(arch.get("pi", [])), list(arch.get(critic, []))
    return list(arch), list(arch)


def vecnormalize_bytes(obs: int) -> int:
    """VecNormalize pickled: running mean and variance of the observation (float64) and of the return."""
    return VECNORMALIZE_BYTES + VECNORMALIZE_BYTES_PER_OBS * obs


def log_bytes(run: RunSpec, probe: EnvProbe) -> int:
    """monitor.csv (a row per episode), progress.csv (a row per iteration, at most one per row_steps),
    evaluations.csv (a row per eval_every) and the run's small files."""
    episode = min(probe.episode_steps or DEFAULT_EPISODE_STEPS, run.max_episode_steps or DEFAULT_EPISODE_STEPS)
    monitor = math.ceil(run.total_timesteps / max(1.0, episode)) * MONITOR_ROW_BYTES
    iteration = run.n_envs * (int(run.hyperparams.get("n_steps", ALGOS[run.algo].defaults.get("n_steps", 1))))
    progress = math.ceil(run.total_timesteps / max(1, iteration, ALGOS[run.algo].row_steps)) * PROGRESS_ROW_BYTES
    evaluations = (math.ceil(run.total_timesteps / run.eval_every)
                   * (EVALUATION_ROW_BYTES + EVALUATION_BYTES_PER_EPISODE * run.eval_episodes)) if run.eval_every else 0
    return monitor + progress + evaluations + RUN_FILES_BYTES


class Verdict(str, Enum):
    FITS = "fits"
    TIGHT = "tight"
    """Over WARN_SHARE of the free space: warned."""
    SHORT = "short"
    """More than the free space: refused."""


WARN_SHARE = 0.8


def judge(needed: int, free: int) -> Verdict:
    if needed > free:
        return Verdict.SHORT
    return Verdict.TIGHT if needed > WARN_SHARE * free else Verdict.FITS


def human_bytes(n: float) -> str:
    """Decimal units, as disk sizes are sold: 1.7 GB, 310 MB, 48 KB."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            value = n / size
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{n:.0f} B"
