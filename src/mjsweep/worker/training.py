"""The worker's training pieces: vec env with monitor, model construction (PPO, SAC, TD3, A2C), progress
rows, checkpoints (with the replay buffer of off-policy algorithms).

Imported only by the worker process (it imports torch and stable-baselines3).
"""

from __future__ import annotations

import copy
import csv
import importlib.util
import os
import platform
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor, ResultsWriter
from stable_baselines3.common.noise import ActionNoise, NormalActionNoise, OrnsteinUhlenbeckActionNoise
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecMonitor, VecNormalize

from ..robots.envs import make_env
from ..spec.activations import ACTIVATION_CLASSES, activation_name
from ..spec.algos import ALGOS, NOISE_KEYS, algorithm_class, schedule_start
from ..sweepdir.files import RunDir, read_model, write_model
from ..sweepdir.models import BestRecord, CheckpointRecord, RunSpec, Timing
from ..sweepdir.tables import EVALUATION_COLUMNS, PROGRESS_COLUMNS, csv_line, read_evaluations
from .normalization import frozen_normalization


def truncate_logs(run: RunDir, checkpoint: CheckpointRecord) -> None:
    """Drop log rows written after this checkpoint, so a resumed run does not repeat them."""
    for path, size in ((run.monitor_csv, checkpoint.monitor_bytes), (run.progress_csv, checkpoint.progress_bytes),
                       (run.evaluations_csv, checkpoint.evaluations_bytes)):
        if path.exists() and path.stat().st_size > size:
            os.truncate(path, size)


def checkpoint_due(steps_since: int, seconds_since: float, every_steps: int, every_s: float | None) -> bool:
    """Whether to checkpoint now, at the end of an iteration: whichever comes first of `every_steps`
    timesteps and `every_s` seconds (None: timesteps only) since the last checkpoint."""
    return steps_since >= every_steps or (every_s is not None and seconds_since >= every_s)


def save_atomic(save: Callable[[str], None], path: Path) -> None:
    """save(a temporary name beside path), then rename it to path: a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    save(str(tmp))
    os.replace(tmp, path)


class BestModel:
    """best_model.zip and best_vecnormalize.pkl: one evaluation's pair, on the run's own timeline.

    Each new best is saved in best/ under names that carry its timesteps; best/best.json, written last,
    says which pair is the best, and only then are the two copied (hard-linked) to the run dir's top,
    where a start repairs a copy a kill left half done. A checkpoint records the best it saw and keeps that
    pair, so a resume that drops the evaluations made after its checkpoint brings back its best too.
    """

    def __init__(self, run: RunDir):
        self.run = run

    def current(self) -> BestRecord | None:
        return read_model(self.run.best_json, BestRecord)

    def save(self, model: BaseAlgorithm, normalizer: VecNormalize | None, timesteps: int, mean: float,
             keep: int | None) -> None:
        """The new best pair, committed; earlier pairs deleted but that of `keep` timesteps (the checkpoint's)."""
        self.run.best.mkdir(exist_ok=True)
        model_path = self.run.best_model(timesteps)
        save_atomic(model.save, model_path)
        stats = None
        if normalizer is not None:
            stats = self.run.best_vecnormalize_at(timesteps)
            save_atomic(normalizer.save, stats)
        write_model(self.run.best_json, BestRecord(timesteps=timesteps, mean_return=mean, model_file=model_path.name,
                                                   vecnormalize_file=stats.name if stats else None))
        self.publish()
        self.prune(keep)

    def publish(self) -> None:
        """The committed pair, as best_model.zip and best_vecnormalize.pkl (none: both removed)."""
        best = self.current()
        pairs = [(self.run.best_model_zip, best.model_file if best else None),
                 (self.run.best_vecnormalize, best.vecnormalize_file if best else None)]
        for top, name in pairs:
            if name is None:
                top.unlink(missing_ok=True)
                continue
            tmp = top.with_name(f".{top.name}.tmp")
            tmp.unlink(missing_ok=True)
            os.link(self.run.best / name, tmp)
            os.replace(tmp, top)

    def prune(self, keep: int | None) -> None:
        best = self.current()
        wanted = {best.model_file, best.vecnormalize_file} if best else set()
        if keep is not None:
            wanted |= {self.run.best_model(keep).name, self.run.best_vecnormalize_at(keep).name}
        for path in self.run.best_files():
            if path.name not in wanted:
                path.unlink(missing_ok=True)

    def rewind(self, checkpoint: CheckpointRecord) -> None:
        """On resume: the best as the checkpoint saw it, if a dropped later evaluation replaced it."""
        if "best_timesteps" not in checkpoint.model_fields_set:
            return  # an older checkpoint: it did not record one
        best, at = self.current(), checkpoint.best_timesteps
        if (best.timesteps if best else None) != at:
            mean = _evaluation_mean(self.run, at) if at is not None else None
            if at is None or mean is None or not self.run.best_model(at).exists():
                self.run.best_json.unlink(missing_ok=True)
            else:
                stats = self.run.best_vecnormalize_at(at)
                write_model(self.run.best_json, BestRecord(
                    timesteps=at, mean_return=mean, model_file=self.run.best_model(at).name,
                    vecnormalize_file=stats.name if stats.exists() else None))
        self.publish()
        self.prune(at)

    def clear(self) -> None:
        """No best yet: a fresh start."""
        self.run.best_json.unlink(missing_ok=True)
        self.publish()
        self.prune(None)


def _evaluation_mean(run: RunDir, timesteps: int) -> float | None:
    """The mean return of the evaluation at `timesteps` in evaluations.csv, if it has one."""
    return next((e.mean_return for e in read_evaluations(run.evaluations_csv) if e.timesteps == timesteps), None)


class Checkpointer:
    def __init__(self, run: RunDir, every: int, every_s: float | None = None, normalized: bool = False,
                 off_policy: bool = False):
        self.run, self.every, self.every_s = run, every, every_s
        self.normalized = normalized
        """The run normalizes: a checkpoint without its statistics cannot be resumed."""
        self.off_policy = off_policy
        """The run learns from a replay buffer: a checkpoint without it cannot be resumed."""
        self.best = BestModel(run)

    def latest(self) -> CheckpointRecord | None:
        checkpoint = self.run.read_checkpoint()
        if checkpoint is None or not (self.run.checkpoints / checkpoint.model_file).exists():
            return None
        for needed, name in ((self.normalized, checkpoint.vecnormalize_file),
                             (self.off_policy, checkpoint.replay_buffer_file)):
            if needed and (name is None or not (self.run.checkpoints / name).exists()):
                return None
        return checkpoint

    def save(self, model: BaseAlgorithm, iteration: int, timing: Timing, log_sizes: tuple[int, ...],
             vecnormalize: VecNormalize | None = None) -> CheckpointRecord:
        # The model, the normalization statistics and the replay buffer are each written under a new
        # name (their timesteps), then checkpoint.json points at the set: a kill at any moment leaves the
        # previous set intact and named by the previous checkpoint.json, never a model with another's buffer.
        started = time.monotonic()
        self.run.checkpoints.mkdir(exist_ok=True)
        timesteps = int(model.num_timesteps)
        path = self.run.checkpoint_model(timesteps)
        save_atomic(model.save, path)
        stats = buffer = None
        if vecnormalize is not None:
            stats = self.run.checkpoint_vecnormalize(timesteps)
            save_atomic(vecnormalize.save, stats)
        if isinstance(model, OffPolicyAlgorithm):
            buffer = self.run.checkpoint_replay_buffer(timesteps)
            save_atomic(model.save_replay_buffer, buffer)
        written = [p for p in (path, stats, buffer) if p is not None]
        best = self.best.current()
        ckpt = CheckpointRecord(timesteps=timesteps, iteration=iteration, model_file=path.name,
                                monitor_bytes=log_sizes[0], progress_bytes=log_sizes[1],
                                evaluations_bytes=log_sizes[2] if len(log_sizes) > 2 else 0, timing=timing,
                                vecnormalize_file=stats.name if stats else None,
                                best_timesteps=best.timesteps if best else None,
                                replay_buffer_file=buffer.name if buffer else None,
                                replay_buffer_size=replay_buffer_size(model),
                                replay_buffer_bytes=_size(buffer) if buffer else None,
                                bytes=sum(_size(p) for p in written),
                                save_s=round(time.monotonic() - started, 3))
        write_model(self.run.checkpoint_json, ckpt)
        keep = {p.name for p in written}
        # Also the temporary files of a save a kill cut short: a replay buffer's can be gigabytes.
        for old in [*self.run.checkpoint_models(), *self.run.checkpoint_vecnormalizes(),
                    *self.run.checkpoint_replay_buffers(), *self.run.checkpoints.glob(".*.tmp")]:
            if old.name not in keep:
                old.unlink(missing_ok=True)
        self.best.prune(ckpt.best_timesteps)  # pairs older than both the best and the checkpoint's best
        return ckpt

    def kept_best(self) -> int | None:
        """The best evaluation's timesteps that the latest checkpoint keeps, if any."""
        checkpoint = self.run.read_checkpoint()
        return checkpoint.best_timesteps if checkpoint else None


def replay_buffer_size(model: BaseAlgorithm) -> int | None:
    """Transitions the model's replay buffer holds (all envs together); None without one."""
    buffer = getattr(model, "replay_buffer", None)
    if not isinstance(buffer, ReplayBuffer):
        return None
    return buffer.size() * buffer.n_envs


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


class PhaseTimer(BaseCallback):
    """Sums the seconds of each SB3 iteration's rollout and update: the time an fps counts.

    An iteration is one collect_rollouts and the training after it: PPO's and A2C's n_steps per env and
    their update; SAC's and TD3's train_freq steps and their gradient steps (none before learning_starts).
    The worker's progress rows and result.json, and the bench's naive baseline, all time training
    with it, so their fps figures measure the same thing.
    """

    def __init__(self) -> None:
        super().__init__()
        self.rollout_s = self.train_s = 0.0
        self._rollout_start = self._rollout_end = 0.0
        self._updates_at_rollout_end = 0
        self._pending = False

    def _on_rollout_start(self) -> None:
        if self._pending:
            self._end_iteration(last=False)
        # Taken after the last iteration's row and checkpoint: writing those is no rollout's time.
        self._rollout_start = time.monotonic()

    def _on_rollout_end(self) -> None:
        self._rollout_end = time.monotonic()
        self._updates_at_rollout_end = self.model._n_updates
        self._pending = True

    def _on_step(self) -> bool:
        return True

    def _on_training_end(self) -> None:
        if self._pending:
            self._end_iteration(last=True)

    def _end_iteration(self, last: bool) -> None:
        self._pending = False
        rollout, update = self._rollout_end - self._rollout_start, time.monotonic() - self._rollout_end
        if self.model._n_updates == self._updates_at_rollout_end:
            # No update ran (SAC and TD3 before learning_starts): the loop's few microseconds are the
            # rollout's, and a row of such iterations says train_s 0, which status reads as warm-up.
            rollout, update = rollout + update, 0.0
        self.rollout_s += rollout
        self.train_s += update
        self._iteration_done(rollout, update, last)

    def _iteration_done(self, rollout_s: float, update_s: float, last: bool) -> None:
        """Called once an iteration's update has ended, with its two durations; last: training ended."""


class IterationRecorder(PhaseTimer):
    """Writes progress.csv rows and checkpoints when due: a row per PPO iteration (rollout + update), a
    row per `row_steps` timesteps of the algorithms with short iterations (theirs summed; algos.py)."""

    def __init__(self, checkpointer: Checkpointer, resume: CheckpointRecord | None,
                 stop_if_requested: Callable[[], None], evaluator: PeriodicEvaluator | None = None,
                 on_row: Callable[[dict[str, Any]], None] | None = None, row_steps: int = 1):
        super().__init__()
        self.checkpointer = checkpointer
        self.evaluator = evaluator
        self.on_row = on_row
        """Also given each progress row once it is written (experiment tracking)."""
        self.row_steps = row_steps
        """A row once an iteration ends at least this many timesteps after the last row (1: every one)."""
        self.stop_if_requested = stop_if_requested
        """Called at every env step: raises KeyboardInterrupt when the worker was asked to stop."""
        self.resume = resume
        self.base = resume.timing if resume else Timing()
        self.iteration = resume.iteration if resume else 0
        """Progress rows written, over all attempts."""
        self.last_checkpoint_at = resume.timesteps if resume else 0
        self.last_checkpoint_time = 0.0
        """time.monotonic() of the last checkpoint, or of this attempt's start of training."""
        self.last_checkpoint: CheckpointRecord | None = resume
        self.save_s = 0.0
        self.eval_s = 0.0
        self._t0 = 0.0
        # timesteps, rows, log sizes when this iteration began: where a stop rewinds to
        self._iter_start: tuple[int, int, tuple[int, ...]] = (0, 0, (0, 0, 0))
        self._stats_start: tuple[Any, Any] | None = None
        """The normalization statistics (obs_rms, ret_rms) when this iteration began."""
        self._buffer_start: tuple[int, bool] | None = None
        """The replay buffer's (pos, full) when this iteration began."""
        self._row_start = 0
        """Timesteps when the current row began."""
        self._row_s = (0.0, 0.0)
        """Rollout and update seconds of the current row so far."""
        self._file: TextIO | None = None
        self._writer: csv.DictWriter[str] | None = None
        self.startup_s: float | None = None
        """Seconds from process start until training begins (imports, env and model built, first reset)."""

    def _on_training_start(self) -> None:
        self.startup_s = process_age_s()
        self._t0 = self.last_checkpoint_time = time.monotonic()
        path = self.checkpointer.run.progress_csv
        # A run that starts over (no checkpoint, or one it cannot resume: an off-policy run's without its
        # buffer) drops the rows of the attempt it repeats, as make_vec_env does with monitor.csv.
        fresh = self.resume is None or not path.exists() or path.stat().st_size == 0
        self._file = open(path, "w" if fresh else "a", newline="", encoding="utf-8")
        self._writer = csv.DictWriter(self._file, fieldnames=PROGRESS_COLUMNS)
        if fresh:
            self._writer.writeheader()
            self._file.flush()
        self._row_start = self.model.num_timesteps
        self._mark_iteration_start()

    def _on_rollout_start(self) -> None:
        super()._on_rollout_start()
        self._mark_iteration_start()

    def _mark_iteration_start(self) -> None:
        self._iter_start = (self.model.num_timesteps, self.iteration, self._log_sizes())
        if (normalizer := self.model.get_vec_normalize_env()) is not None:
            self._stats_start = (copy.deepcopy(normalizer.obs_rms), copy.deepcopy(normalizer.ret_rms))
        if isinstance(buffer := getattr(self.model, "replay_buffer", None), ReplayBuffer):
            self._buffer_start = (buffer.pos, buffer.full)

    def _log_sizes(self) -> tuple[int, int, int]:
        run = self.checkpointer.run
        return _size(run.monitor_csv), _size(run.progress_csv), _size(run.evaluations_csv)

    def _on_step(self) -> bool:
        self.stop_if_requested()
        return True

    def _on_training_end(self) -> None:
        super()._on_training_end()
        if self._file:
            self._file.close()

    def _iteration_done(self, rollout_s: float, update_s: float, last: bool) -> None:
        rollout_s, update_s = self._row_s[0] + rollout_s, self._row_s[1] + update_s
        if self.model.num_timesteps - self._row_start >= self.row_steps or last:
            self._write_row(rollout_s, update_s)
            self._row_s = (0.0, 0.0)
        else:
            self._row_s = (rollout_s, update_s)
        # Evaluations and checkpoints at the end of any iteration, where model, buffer and statistics agree.
        if self.evaluator and self.evaluator.due(self._iter_start[0], self.model.num_timesteps):
            started = time.monotonic()
            self.evaluator.evaluate(self.model, self.totals().wall_s)
            self.eval_s += time.monotonic() - started
        if checkpoint_due(self.model.num_timesteps - self.last_checkpoint_at,
                          time.monotonic() - self.last_checkpoint_time, self.checkpointer.every,
                          self.checkpointer.every_s):
            self._save(self.iteration, self._log_sizes())

    def _write_row(self, rollout_s: float, update_s: float) -> None:
        self.iteration += 1
        steps = self.model.num_timesteps - self._row_start
        self._row_start = self.model.num_timesteps
        infos = list(self.model.ep_info_buffer or [])
        row = {
            "iteration": self.iteration,
            "timesteps": self.model.num_timesteps,
            "wall_s": round(self.totals().wall_s, 3),
            "fps": round(steps / max(rollout_s + update_s, 1e-9), 1),
            "ep_rew_mean": round(sum(i["r"] for i in infos) / len(infos), 4) if infos else "",
            "ep_len_mean": round(sum(i["l"] for i in infos) / len(infos), 1) if infos else "",
            "rollout_s": round(rollout_s, 4),
            "train_s": round(update_s, 4),
        }
        assert self._writer is not None and self._file is not None, "opened when training started"
        self._writer.writerow(row)
        self._file.flush()
        if self.on_row:
            self.on_row(row)

    def totals(self) -> Timing:
        elapsed = time.monotonic() - self._t0 if self._t0 else 0.0
        return Timing(wall_s=self.base.wall_s + elapsed, rollout_s=self.base.rollout_s + self.rollout_s,
                      train_s=self.base.train_s + self.train_s, save_s=self.base.save_s + self.save_s,
                      eval_s=self.base.eval_s + self.eval_s)

    def save_interrupted(self) -> None:
        """Checkpoint on a stop request, rewound to the start of the unfinished iteration.

        Its partial rollout is dropped (timesteps, log rows and the transitions it added to a replay
        buffer alike), so the resumed run repeats that iteration whole and ends at exactly the timesteps
        an uninterrupted run would.
        """
        if getattr(self, "model", None) is None or not self._t0:
            return  # stopped before training began: nothing to save
        if self._file:
            self._file.flush()
        self.model.num_timesteps, iteration, log_sizes = self._iter_start
        normalizer = self.model.get_vec_normalize_env()
        if normalizer is not None and self._stats_start is not None:
            # The statistics as they were before the dropped partial rollout, to pair with the model.
            normalizer.obs_rms, normalizer.ret_rms = self._stats_start
        buffer = getattr(self.model, "replay_buffer", None)
        if isinstance(buffer, ReplayBuffer) and self._buffer_start is not None:
            buffer.pos, buffer.full = self._buffer_start
        self._save(iteration, log_sizes)

    def _save(self, iteration: int, log_sizes: tuple[int, ...]) -> None:
        started = time.monotonic()
        self.last_checkpoint = self.checkpointer.save(self.model, iteration, self.totals(), log_sizes,
                                                      self.model.get_vec_normalize_env())
        self.last_checkpoint_time = time.monotonic()
        self.save_s += self.last_checkpoint_time - started
        self.last_checkpoint_at = self.model.num_timesteps


def process_age_s() -> float:
    """Seconds since this process was started, interpreter start-up included (Linux; 10 ms ticks)."""
    with open("/proc/self/stat", encoding="ascii") as fh:
        start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])  # field 22: starttime since boot
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")


def make_vec_env(spec: RunSpec, run: RunDir, resume: CheckpointRecord | None) -> VecEnv:
    """n_envs copies (in this process, or one subprocess each), with one monitor.csv in SB3's format."""
    xml = Path(spec.xml)
    factories = [(lambda: make_env(spec.env, xml, spec.env_kwargs, spec.max_episode_steps))
                 for _ in range(spec.n_envs)]
    # forkserver children inherit the worker's process group and one-thread caps, and die with it.
    venv = SubprocVecEnv(factories, start_method="forkserver") if spec.vec_env == "subproc" \
        else DummyVecEnv(factories)
    monitored = VecMonitor(venv)
    if resume:
        # Keep the episode clock running from where the checkpoint left it.
        monitored.t_start -= resume.timing.wall_s
    monitored.results_writer = ResultsWriter(
        str(run.monitor_csv), header={"t_start": monitored.t_start, "env_id": spec.env},
        override_existing=resume is None,
    )
    if spec.normalize is None:
        return monitored
    # Below the normalization, the monitor records the env's own rewards.
    if resume and resume.vecnormalize_file:
        normalized = VecNormalize.load(str(run.checkpoints / resume.vecnormalize_file), monitored)
        normalized.training = True
        return normalized
    return VecNormalize(monitored, training=True, **spec.normalize)


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
                resume: CheckpointRecord | None) -> BaseAlgorithm:
    tensorboard_log = tensorboard_dir(spec, checkpointer.run)
    cls = algorithm_class(spec.algo)
    if resume:
        model = cls.load(str(checkpointer.run.checkpoints / resume.model_file), env=venv, device=spec.device,
                         tensorboard_log=tensorboard_log)
        if isinstance(model, OffPolicyAlgorithm):
            assert resume.replay_buffer_file, "Checkpointer.latest() resumes an off-policy run only with its buffer"
            model.load_replay_buffer(str(checkpointer.run.checkpoints / resume.replay_buffer_file))
        # A different env seed than the first attempt's, so the resumed episodes are not replays.
        venv.seed(spec.seed + resume.timesteps)
        return model
    kwargs = sb3_kwargs(spec, venv)
    return cls(spec.policy, venv, seed=spec.seed, device=spec.device, verbose=0, tensorboard_log=tensorboard_log,
               **kwargs)


def sb3_kwargs(spec: RunSpec, venv: VecEnv) -> dict[str, Any]:
    """The run's hyperparameters as SB3 takes them: schedules, activation classes, train_freq as a tuple,
    RL Zoo's noise_type / noise_std as an action noise."""
    kwargs = dict(spec.hyperparams)
    for key in ALGOS[spec.algo].scheduled:
        if (start := schedule_start(kwargs.get(key))) is not None:
            kwargs[key] = LinearSchedule(start)
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


def action_noise(kind: str, std: float, n_actions: int) -> ActionNoise:
    """RL Zoo's noise_type and noise_std: Gaussian or Ornstein-Uhlenbeck exploration noise on each action."""
    mean, sigma = np.zeros(n_actions), std * np.ones(n_actions)
    if kind == "normal":
        return NormalActionNoise(mean=mean, sigma=sigma)
    return OrnsteinUhlenbeckActionNoise(mean=mean, sigma=sigma)


def evaluate(spec: RunSpec, model: BaseAlgorithm, stop_if_requested: Callable[[], None],
             vecnormalize: VecNormalize | None = None) -> tuple[float, float]:
    """Mean and std of the return over eval_episodes fresh episodes of a separately seeded env;
    stop_if_requested is called at every step. A normalized run's policy sees observations normalized
    with its training statistics, frozen; the returns are the env's own."""
    returns, _ = evaluate_episodes(spec, model, stop_if_requested, vecnormalize)
    return float(np.mean(returns)), float(np.std(returns))


def evaluate_episodes(spec: RunSpec, model: BaseAlgorithm, stop_if_requested: Callable[[], None],
                      vecnormalize: VecNormalize | None = None) -> tuple[list[float], list[int]]:
    """Each episode's return and length, as `evaluate` runs them."""
    env: VecEnv = DummyVecEnv([lambda: Monitor(make_env(spec.env, Path(spec.xml), spec.env_kwargs,
                                                        spec.max_episode_steps))])
    if vecnormalize is not None:
        env = frozen_normalization(env, vecnormalize)
    env.seed(spec.seed + 1_000_003)
    try:
        returns, lengths = evaluate_policy(model, env, n_eval_episodes=spec.eval_episodes,
                                           deterministic=spec.eval_deterministic, return_episode_rewards=True,
                                           callback=lambda _locals, _globals: stop_if_requested())
    finally:
        env.close()
    assert isinstance(returns, list) and isinstance(lengths, list)  # return_episode_rewards=True
    return [float(r) for r in returns], [int(n) for n in lengths]


class PeriodicEvaluator:
    """eval.every: an evaluation each time training passes a multiple of `every` timesteps, a row of
    evaluations.csv for each, and best_model.zip (with best_vecnormalize.pkl) for the best so far.

    An evaluation draws its random numbers from a forked torch generator and steps its own env, so the
    training goes on exactly as it would without it. It does not stop on a stop request (the next
    rollout step does), so the row and the model it describes always belong together.
    """

    def __init__(self, spec: RunSpec, checkpointer: Checkpointer, resume: CheckpointRecord | None,
                 on_evaluation: Callable[[int, float, float], None] | None = None):
        assert spec.eval_every is not None
        self.spec, self.checkpointer, self.every = spec, checkpointer, spec.eval_every
        run = self.run = checkpointer.run
        self.on_evaluation = on_evaluation
        """Also given (timesteps, mean, std) of each evaluation once its row is written (tracking)."""
        self.rows = 0
        self.best: tuple[float, int] | None = None
        """(mean return, timesteps) of the best evaluation so far."""
        path = run.evaluations_csv
        if resume is None or not path.exists():
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(csv_line(EVALUATION_COLUMNS))
            return
        for evaluation in read_evaluations(path):  # already truncated to the checkpoint's rows
            self._count(evaluation.mean_return, evaluation.timesteps)

    def due(self, previous_timesteps: int, timesteps: int) -> bool:
        """Whether the iteration from previous_timesteps to timesteps passed a multiple of `every`."""
        return timesteps // self.every > previous_timesteps // self.every

    def _count(self, mean: float, timesteps: int) -> bool:
        self.rows += 1
        if self.best is None or mean > self.best[0]:
            self.best = (mean, timesteps)
            return True
        return False

    def evaluate(self, model: BaseAlgorithm, wall_s: float) -> None:
        normalizer = model.get_vec_normalize_env()
        with torch.random.fork_rng(devices=[]):
            returns, lengths = evaluate_episodes(self.spec, model, lambda: None, normalizer)
        mean, std = float(np.mean(returns)), float(np.std(returns))
        timesteps = int(model.num_timesteps)
        line = csv_line([str(timesteps), repr(mean), repr(std), " ".join(repr(r) for r in returns),
                         " ".join(str(n) for n in lengths), f"{wall_s:.3f}"])
        with open(self.run.evaluations_csv, "a", encoding="utf-8") as fh:
            fh.write(line)  # one write of a whole line; a torn one lies past the checkpoint's size
        if self.on_evaluation:
            self.on_evaluation(timesteps, mean, std)
        if self._count(mean, timesteps):
            self.checkpointer.best.save(model, normalizer, timesteps, mean, keep=self.checkpointer.kept_best())


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("torch", "stable-baselines3", "gymnasium", "mujoco", "numpy", "mjsweep"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "unknown"
    return out
