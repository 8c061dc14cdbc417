"""Timing a training and recording it: PhaseTimer splits each SB3 iteration into rollout and update
seconds; IterationRecorder checks the policy's parameters after each update, writes progress.csv rows,
runs the periodic evaluations and takes the checkpoints when due, and rewinds to the iteration's start
on a stop request."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from operator import attrgetter
from pathlib import Path
from typing import Any, TextIO

import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv, VecMonitor, VecNormalize

from ..sweepdir.csvfiles import ProgressRow, csv_header, csv_line, read_progress_spans
from ..sweepdir.files import RunDir
from ..sweepdir.models import CheckpointRecord, Timing
from .checkpoints import Checkpointer, checkpoint_due, file_size, replay_buffer
from .evaluation import PeriodicEvaluator
from .exact import ExactState
from .nonfinite import NonFiniteError, first_non_finite, parameter_message, subscript
from .normalization import StatsSnapshot


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
                 on_row: Callable[[ProgressRow], None] | None = None, row_steps: int = 1,
                 exact: dict[str, Any] | None = None):
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
        self._exact_resume = exact
        """The checkpoint's exact state, put back once SB3 has set up its training."""
        self._exact: ExactState | None = None
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
        self._stats_start = StatsSnapshot()
        """The normalization statistics (obs_rms, ret_rms) when this iteration began."""
        self._buffer_start: tuple[int, bool] | None = None
        """The replay buffer's (pos, full) when this iteration began."""
        self._row_start = 0
        """Timesteps when the current row began."""
        self._row_s = (0.0, 0.0)
        """Rollout and update seconds of the current row so far."""
        self._file: TextIO | None = None
        self.startup_s: float | None = None
        """Seconds from process start until training begins (imports, env and model built, first reset)."""
        self._trained: list[tuple[str, torch.Tensor]] = []
        """What an update changes, checked after updates (trained_parameters, ParameterCheck)."""
        self._check = ParameterCheck()
        self._updated_at = 0
        """Timesteps at the end of the last iteration whose update ran."""
        self._sizes = LogSizes(checkpointer.run)
        self._normalizer: VecNormalize | None = None
        self._buffer: ReplayBuffer | None = None
        """The model's, found once training starts: SB3 keeps both for the whole of learn()."""

    def _on_training_start(self) -> None:
        self._exact = ExactState.of(self.model)
        if self._exact is not None and self._exact_resume is not None:
            # Before SB3's first rollout, which is handed the model's action noise as its rollout begins.
            self._exact.restore(self._exact_resume)
        self.startup_s = process_age_s()
        self._trained = trained_parameters(self.model)
        self._sizes = LogSizes(self.checkpointer.run, vec_monitor(self.model.get_env()))
        self._normalizer, self._buffer = self.model.get_vec_normalize_env(), replay_buffer(self.model)
        self._t0 = self.last_checkpoint_time = time.monotonic()
        path = self.checkpointer.run.progress_csv
        # A run that starts over (no checkpoint, or one it cannot resume: an off-policy run's without its
        # buffer) drops the rows of the attempt it repeats, as make_vec_env does with monitor.csv.
        fresh = self.resume is None or not path.exists() or path.stat().st_size == 0
        self._file = open(path, "w" if fresh else "a", newline="", encoding="utf-8")
        if fresh:
            self._file.write(csv_header(ProgressRow))
            self._file.flush()
            self._row_start = self.model.num_timesteps
        else:
            self._continue_row(path)
        self._mark_iteration_start()

    def _continue_row(self, path: Path) -> None:
        """On resume: the row under way when the checkpoint was taken goes on from where it began, with the
        seconds it had counted (the checkpoint's totals less the rows'), so rows fall at the timesteps of a run
        never stopped and a row's fps counts all its steps."""
        spans = read_progress_spans(path)
        self._row_start = spans[-1][0] if spans else 0
        if self._row_start < self.model.num_timesteps:
            self._row_s = (max(0.0, self.base.rollout_s - sum(s[1] for s in spans)),
                           max(0.0, self.base.train_s - sum(s[2] for s in spans)))

    def _on_rollout_start(self) -> None:
        if self._exact is not None and self._exact_resume is not None:
            # gSDE's noise (use_sde) is drawn as a rollout begins, before this: put back, with the torch
            # generator it drew from, as the checkpoint (taken here too) had them.
            self._exact.restore_rollout_start(self._exact_resume)
            self._exact_resume = None
        super()._on_rollout_start()
        self._mark_iteration_start()

    def _mark_iteration_start(self) -> None:
        # At every iteration: one env step of SAC or TD3 at train_freq 1, five of A2C. So nothing here reads a
        # file or copies an array (StatsSnapshot holds the statistics' arrays, which VecNormalize replaces).
        self._iter_start = (self.model.num_timesteps, self.iteration, self._log_sizes())
        if self._normalizer is not None:
            self._stats_start.take(self._normalizer)
        if self._buffer is not None:
            self._buffer_start = (self._buffer.pos, self._buffer.full)
        if self._exact is not None:
            self._exact.mark()

    def _log_sizes(self) -> tuple[int, int, int]:
        return self._sizes.now()

    def _on_step(self) -> bool:
        self.stop_if_requested()
        return True

    def _on_training_end(self) -> None:
        super()._on_training_end()
        if self._file:
            self._file.close()

    def _iteration_done(self, rollout_s: float, update_s: float, last: bool) -> None:
        # update_s is 0 when no update ran (PhaseTimer). The parameters are checked after an update when the
        # check's share of the training time allows (ParameterCheck), and always before anything records this
        # policy: no evaluation, best model or checkpoint of a broken one; the last checkpoint stays the last
        # good. A policy broken in between acts with NaN, which the env's check stops at the next step.
        evaluate = bool(self.evaluator and self.evaluator.due(self._iter_start[0], self.model.num_timesteps))
        save = (last and self.checkpointer.at_end) or checkpoint_due(
            self.model.num_timesteps - self.last_checkpoint_at, time.monotonic() - self.last_checkpoint_time,
            self.checkpointer.every, self.checkpointer.every_s)
        if update_s > 0:
            self._updated_at = self.model.num_timesteps
            if evaluate or save or last or self._check.due(rollout_s + update_s):
                self._raise_if_broken()
        rollout_s, update_s = self._row_s[0] + rollout_s, self._row_s[1] + update_s
        if self.model.num_timesteps - self._row_start >= self.row_steps or last:
            self._write_row(rollout_s, update_s)
            self._row_s = (0.0, 0.0)
        else:
            self._row_s = (rollout_s, update_s)
        # Evaluations and checkpoints at the end of any iteration, where model, buffer and statistics agree.
        if evaluate:
            assert self.evaluator is not None
            started = time.monotonic()
            self.evaluator.evaluate(self.model, self.totals().wall_s)
            self.eval_s += time.monotonic() - started
            self._sizes.evaluated()
        if save:
            self._save(self.iteration, self._log_sizes())

    def _raise_if_broken(self) -> None:
        started = time.monotonic()
        error = self.parameters_error(during=False)
        self._check.took(time.monotonic() - started)
        if error is not None:
            raise error

    def _write_row(self, rollout_s: float, update_s: float) -> None:
        self.iteration += 1
        steps = self.model.num_timesteps - self._row_start
        self._row_start = self.model.num_timesteps
        infos = list(self.model.ep_info_buffer or [])
        row = ProgressRow(
            iteration=self.iteration, timesteps=self.model.num_timesteps, wall_s=round(self.totals().wall_s, 3),
            fps=round(steps / max(rollout_s + update_s, 1e-9), 1),
            ep_rew_mean=round(sum(i["r"] for i in infos) / len(infos), 4) if infos else None,
            ep_len_mean=round(sum(i["l"] for i in infos) / len(infos), 1) if infos else None,
            rollout_s=round(rollout_s, 4), train_s=round(update_s, 4))
        assert self._file is not None, "opened when training started"
        self._file.write(csv_line(row))
        self._file.flush()
        self._sizes.progress_written()
        if self.on_row:
            self.on_row(row)

    def parameters_error(self, during: bool) -> NonFiniteError | None:
        """The policy's first non-finite parameter as the run's error (during: the update raised before it
        ended, torch's distribution check on the broken parameters, say); None when all are finite."""
        if not self._trained:
            return None  # training never began
        found = non_finite_parameter(self._trained)
        step = self.model.num_timesteps if during else self._updated_at
        return None if found is None else NonFiniteError(parameter_message(*found, step, during))

    def totals(self) -> Timing:
        elapsed = time.monotonic() - self._t0 if self._t0 else 0.0
        return Timing(wall_s=self.base.wall_s + elapsed, rollout_s=self.base.rollout_s + self.rollout_s,
                      train_s=self.base.train_s + self.train_s, save_s=self.base.save_s + self.save_s,
                      eval_s=self.base.eval_s + self.eval_s, cpu_s=self.base.cpu_s + process_cpu_s())

    def save_interrupted(self) -> None:
        """Checkpoint on a stop request, rewound to the start of the unfinished iteration.

        Its partial rollout is dropped (timesteps, log rows and the transitions it added to a replay
        buffer alike), so the resumed run repeats that iteration whole and ends at exactly the timesteps
        an uninterrupted run would.
        """
        if getattr(self, "model", None) is None or not self._t0:
            return  # stopped before training began: nothing to save
        if self.parameters_error(during=False) is not None:
            return  # a broken policy is never saved: the run resumes from its last good checkpoint
        if self._file:
            self._file.flush()
        self.model.num_timesteps, iteration, log_sizes = self._iter_start
        if self._normalizer is not None and self._stats_start.taken:
            # The statistics as they were before the dropped partial rollout, to pair with the model.
            self._stats_start.restore(self._normalizer)
        if self._buffer is not None and self._buffer_start is not None:
            self._buffer.pos, self._buffer.full = self._buffer_start
        self._save(iteration, log_sizes, at_iteration_start=True)

    def _save(self, iteration: int, log_sizes: tuple[int, ...], at_iteration_start: bool = False) -> None:
        started = time.monotonic()
        exact = self._exact.state(marked=at_iteration_start) if self._exact is not None else None
        self.last_checkpoint = self.checkpointer.save(self.model, iteration, self.totals(), log_sizes,
                                                      self.model.get_vec_normalize_env(), exact)
        self.last_checkpoint_time = time.monotonic()
        self.save_s += self.last_checkpoint_time - started
        self.last_checkpoint_at = self.model.num_timesteps


class ParameterCheck:
    """When to check the parameters after an update: at most SHARE of the training time goes to it.

    A check reads every trained tensor once (SAC on Ant: about 0.1 ms); PPO's iteration of 2,048 steps takes
    seconds, so it checks after every update, while SAC at train_freq 1 (an update every env step, ~15 ms)
    or A2C (every 5 steps) check every few updates. The first update is always checked.
    """

    SHARE = 0.001

    def __init__(self) -> None:
        self.cost_s: float | None = None
        """The last check's seconds; None before the first."""
        self.since_s = 0.0
        """Training seconds since the last check."""

    def due(self, iteration_s: float) -> bool:
        self.since_s += iteration_s
        return self.cost_s is None or self.since_s * self.SHARE >= self.cost_s

    def took(self, seconds: float) -> None:
        self.cost_s, self.since_s = seconds, 0.0


class LogSizes:
    """The byte sizes of monitor.csv, progress.csv and evaluations.csv that a checkpoint records, read again
    only once the file may have grown (an episode ended, a row or an evaluation was written): a stop rewinds
    to the sizes at its iteration's start, and SAC at train_freq 1 starts an iteration at every env step."""

    def __init__(self, run: RunDir, monitor: VecMonitor | None = None):
        self.monitor = monitor
        self._paths = (run.monitor_csv, run.progress_csv, run.evaluations_csv)  # joined once: a join costs us
        self._episodes = -1
        self._sizes = (0, 0, 0)
        self._stale = [True, True, True]

    def progress_written(self) -> None:
        self._stale[1] = True

    def evaluated(self) -> None:
        self._stale[2] = True

    def now(self) -> tuple[int, int, int]:
        if self.monitor is None or self.monitor.episode_count != self._episodes:  # without one: no way to know
            self._episodes, self._stale[0] = self.monitor.episode_count if self.monitor else -1, True
        elif not (self._stale[1] or self._stale[2]):
            return self._sizes  # most iterations: nothing written since the last
        monitor, progress, evaluations = (file_size(path) if stale else size
                                          for path, stale, size in zip(self._paths, self._stale, self._sizes,
                                                                       strict=True))
        self._sizes, self._stale = (monitor, progress, evaluations), [False, False, False]
        return self._sizes


def vec_monitor(venv: VecEnv | None) -> VecMonitor | None:
    """The VecMonitor in a wrapped vec env (under VecNormalize), if there is one."""
    while venv is not None and not isinstance(venv, VecMonitor):
        venv = getattr(venv, "venv", None)
    return venv


def trained_parameters(model: BaseAlgorithm) -> list[tuple[str, torch.Tensor]]:
    """What an update changes, named: the tensors the model's optimizers step (found through SB3's own list
    of what its save stores), the policy's first. Target networks are left out: they follow these by Polyak
    averaging, so they stay finite while these do, and leaving them out halves SAC's and TD3's check."""
    names = {id(p): f"policy parameter {name}" for name, p in model.policy.named_parameters()}
    optimizers, tensors = model._get_torch_save_params()
    names.update({id(getattr(model, name)): f"parameter {name}" for name in tensors})
    trained: dict[int, tuple[str, torch.Tensor]] = {}
    for path in optimizers:
        optimizer = attrgetter(path)(model)
        if isinstance(optimizer, torch.optim.Optimizer):
            for group in optimizer.param_groups:
                for tensor in group["params"]:
                    trained.setdefault(id(tensor), (names.get(id(tensor), "parameter"), tensor))
    return list(trained.values())


def non_finite_parameter(parameters: list[tuple[str, torch.Tensor]]) -> tuple[str, float] | None:
    """The name (with index) and value of the first entry of these tensors that is NaN or infinite.

    After every update, so one sum per tensor and one check over them all: a NaN or an infinity anywhere
    makes its tensor's sum non-finite. Only then is each tensor searched, which also clears a sum that
    overflowed from finite values.
    """
    with torch.no_grad():
        if bool(torch.isfinite(torch.stack([tensor.sum() for _, tensor in parameters])).all()):
            return None
        for name, tensor in parameters:
            if (found := first_non_finite(tensor.detach().float().cpu().numpy())) is not None:
                index, value = found
                return name + subscript(index), value
    return None


def process_age_s() -> float:
    """Seconds since this process was started, interpreter start-up included (Linux; 10 ms ticks)."""
    with open("/proc/self/stat", encoding="ascii") as fh:
        start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])  # field 22: starttime since boot
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")


def process_cpu_s() -> float:
    """CPU seconds (user + system) of this process since it began, and of the children it has waited for
    (subprocess envs). A worker forked from the template starts its count at the fork: the imports it
    inherited are the template's."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system
