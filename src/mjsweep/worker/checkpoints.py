"""The checkpoint protocol: a checkpoint's model, normalization statistics and replay buffer written as one
set under checkpoints/, the last `kept` such sets with each file's sha256, the log rows a resume drops, and
the best evaluation's model (best/, best_model.zip).

Every file is saved under a temporary name and renamed into place (save_atomic), so a kill never leaves
half a file where a reader or a resume looks; the checksums catch what a kill cannot explain (a failing
disk, a copy cut short), and a resume then falls back to an older checkpoint (worker/resume.py).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecNormalize

from ..sweepdir.csvfiles import read_evaluations
from ..sweepdir.files import RunDir, read_model, read_or_none, write_model
from ..sweepdir.models import BestRecord, CheckpointRecord, Timing
from . import exact as exact_state


def truncate_logs(run: RunDir, checkpoint: CheckpointRecord) -> None:
    """Drop log rows written after this checkpoint, so a resumed run does not repeat them. The logs only
    grow between checkpoints, so an older kept checkpoint's sizes are a prefix of the newer one's."""
    for path, size in ((run.monitor_csv, checkpoint.monitor_bytes), (run.progress_csv, checkpoint.progress_bytes),
                       (run.evaluations_csv, checkpoint.evaluations_bytes)):
        if path.exists() and path.stat().st_size > size:
            os.truncate(path, size)


def checkpoint_due(steps_since: int, seconds_since: float, every_steps: int, every_s: float | None) -> bool:
    """Whether to checkpoint now, at the end of an iteration: whichever comes first of `every_steps`
    timesteps and `every_s` seconds (None: timesteps only) since the last checkpoint."""
    return steps_since >= every_steps or (every_s is not None and seconds_since >= every_s)


def save_atomic(save: Callable[[str], None], path: Path) -> None:
    """save(a temporary name beside path), then rename it to path: a reader never sees half a file. A
    temporary file a kill left there goes first (a hard link cannot replace it)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
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
             keep: Iterable[int | None]) -> None:
        """The new best pair, committed; earlier pairs deleted but those of `keep` timesteps (the kept
        checkpoints' bests)."""
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
            save_atomic(partial(os.link, self.run.best / name), top)

    def prune(self, keep: Iterable[int | None]) -> None:
        best = self.current()
        wanted = {best.model_file, best.vecnormalize_file} if best else set()
        for at in keep:
            if at is not None:
                wanted |= {self.run.best_model(at).name, self.run.best_vecnormalize_at(at).name}
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
        self.prune(kept_bests(checkpoint))

    def clear(self) -> None:
        """No best yet: a fresh start."""
        self.run.best_json.unlink(missing_ok=True)
        self.publish()
        self.prune(())


def _evaluation_mean(run: RunDir, timesteps: int) -> float | None:
    """The mean return of the evaluation at `timesteps` in evaluations.csv, if it has one."""
    return next((e.mean_return for e in read_evaluations(run.evaluations_csv) if e.timesteps == timesteps), None)


def kept_bests(checkpoint: CheckpointRecord | None) -> set[int | None]:
    """The best evaluations' timesteps that the checkpoints kept with `checkpoint` may rewind to."""
    return {c.best_timesteps for c in checkpoint.kept()} if checkpoint else set()


class Checkpointer:
    def __init__(self, run: RunDir, every: int, every_s: float | None = None, normalized: bool = False,
                 off_policy: bool = False, kept: int = 2, at_end: bool = False):
        self.run, self.every, self.every_s = run, every, every_s
        self.at_end = at_end
        """Also checkpoint where training ends (a PBT segment: the next one resumes from it)."""
        self.kept = kept
        """Checkpoints kept (the spec's checkpoints_kept): a resume falls back to an older one."""
        self.normalized = normalized
        """The run normalizes: a checkpoint without its statistics cannot be resumed."""
        self.off_policy = off_policy
        """The run learns from a replay buffer: a checkpoint without it cannot be resumed."""
        self.best = BestModel(run)

    def damage(self, checkpoint: CheckpointRecord) -> str | None:
        """Why the checkpoint cannot be resumed from the files this run needs (one missing, or not as saved),
        or None."""
        for needed, name, what in ((True, checkpoint.model_file, "model"),
                                   (self.normalized, checkpoint.vecnormalize_file, "normalization statistics"),
                                   (self.off_policy, checkpoint.replay_buffer_file, "replay buffer")):
            if not needed:
                continue
            if name is None:
                return f"it has no {what}"
            path = self.run.checkpoints / name
            if not path.exists():
                return f"{name} is missing"
            expected = checkpoint.sha256.get(name)
            if expected is not None and file_sha256(path) != expected:
                return f"{name} is damaged (its sha256 is not the one checkpoint.json recorded)"
        return None

    def keep_until(self, checkpoint: CheckpointRecord) -> None:
        """After a fall back to `checkpoint`: checkpoint.json names it and the ones before it, and the
        damaged later ones go, so no later attempt meets them again."""
        write_model(self.run.checkpoint_json, checkpoint)
        self._delete_unnamed(checkpoint)

    def discard(self) -> None:
        """Before a start over: no checkpoint.json (first, so no file it names is ever missing), no file."""
        self.run.checkpoint_json.unlink(missing_ok=True)
        if self.run.checkpoints.exists():
            self._delete_unnamed(None)

    def save(self, model: BaseAlgorithm, iteration: int, timing: Timing, log_sizes: tuple[int, ...],
             vecnormalize: VecNormalize | None = None, exact: dict[str, Any] | None = None) -> CheckpointRecord:
        # The model, the normalization statistics and the replay buffer are each written under a new
        # name (their timesteps), then checkpoint.json points at the set: a kill at any moment leaves the
        # previous set intact and named by the previous checkpoint.json, never a model with another's buffer.
        started = time.monotonic()
        self.run.checkpoints.mkdir(exist_ok=True)
        timesteps = int(model.num_timesteps)
        earlier = self._earlier_than(timesteps)
        path = self.run.checkpoint_model(timesteps)
        save_atomic(model.save, path)
        stats = buffer = None
        if vecnormalize is not None:
            stats = self.run.checkpoint_vecnormalize(timesteps)
            save_atomic(vecnormalize.save, stats)
        if isinstance(model, OffPolicyAlgorithm):
            buffer = self.run.checkpoint_replay_buffer(timesteps)
            save_atomic(model.save_replay_buffer, buffer)
        exact_path = None
        if exact is not None:
            exact_path = self.run.checkpoint_exact(timesteps)
            save_atomic(partial(exact_state.save, exact), exact_path)
        written = [p for p in (path, stats, buffer, exact_path) if p is not None]
        sums = {p.name: file_sha256(p) for p in written}  # read back from the page cache the save filled
        best = self.best.current()
        ckpt = CheckpointRecord(timesteps=timesteps, iteration=iteration, model_file=path.name,
                                monitor_bytes=log_sizes[0], progress_bytes=log_sizes[1],
                                evaluations_bytes=log_sizes[2] if len(log_sizes) > 2 else 0, timing=timing,
                                vecnormalize_file=stats.name if stats else None,
                                best_timesteps=best.timesteps if best else None,
                                replay_buffer_file=buffer.name if buffer else None,
                                replay_buffer_size=replay_buffer_size(model),
                                replay_buffer_bytes=file_size(buffer) if buffer else None,
                                exact_file=exact_path.name if exact_path else None,
                                bytes=sum(file_size(p) for p in written), sha256=sums, earlier=earlier,
                                save_s=round(time.monotonic() - started, 3))
        write_model(self.run.checkpoint_json, ckpt)
        self._delete_unnamed(ckpt)
        self.best.prune(kept_bests(ckpt))  # pairs older than the best and every kept checkpoint's best
        return ckpt

    def _earlier_than(self, timesteps: int) -> list[CheckpointRecord]:
        """The kept checkpoints that stay beside a new one at `timesteps`: the last kept - 1 before it. One
        at the same timesteps (a stop's, rewound to where the last one was taken) has its files written over."""
        saved = read_or_none(self.run.read_checkpoint)
        before = [c.model_copy(update={"earlier": []}) for c in (saved.kept() if saved else [])
                  if c.timesteps < timesteps]
        return before[max(0, len(before) - self.kept + 1):]

    def _delete_unnamed(self, checkpoint: CheckpointRecord | None) -> None:
        """Every file in checkpoints/ that `checkpoint` (and the ones kept with it) does not name; also the
        temporary files of a save a kill cut short: a replay buffer's can be gigabytes."""
        named = {name for c in (checkpoint.kept() if checkpoint else []) for name in c.files()}
        for old in self.run.checkpoint_files():
            if old.name not in named:
                old.unlink(missing_ok=True)

    def load_replay_buffer(self, model: BaseAlgorithm, checkpoint: CheckpointRecord) -> None:
        """Into an off-policy model resumed from `checkpoint`, the replay buffer saved with it."""
        if isinstance(model, OffPolicyAlgorithm):
            assert checkpoint.replay_buffer_file, "latest() resumes an off-policy run only with its buffer"
            model.load_replay_buffer(str(self.run.checkpoints / checkpoint.replay_buffer_file))

    def exact_state(self, checkpoint: CheckpointRecord) -> tuple[dict[str, Any] | None, str]:
        """The state an exact resume from `checkpoint` puts back, or None and why there is none."""
        name = checkpoint.exact_file
        if name is None:
            return None, "its checkpoint has no exact state (saved by an earlier version)"
        path = self.run.checkpoints / name
        if not path.exists():
            return None, f"{name} is missing"
        expected = checkpoint.sha256.get(name)
        if expected is not None and file_sha256(path) != expected:
            return None, f"{name} is damaged (its sha256 is not the one checkpoint.json recorded)"
        try:
            return exact_state.load(str(path)), ""
        except Exception as exc:  # noqa: BLE001 - a damaged pickle raises anything; the resume goes on re-seeded
            return None, f"{name} could not be read ({type(exc).__name__})"

    def kept_best(self) -> set[int | None]:
        """The best evaluations' timesteps that the kept checkpoints keep."""
        return kept_bests(self.run.read_checkpoint())


def replay_buffer(model: BaseAlgorithm) -> ReplayBuffer | None:
    """The model's replay buffer: SAC's, TD3's, TQC's and CrossQ's; None for the on-policy algorithms, which
    learn from rollouts."""
    buffer = getattr(model, "replay_buffer", None)
    return buffer if isinstance(buffer, ReplayBuffer) else None


def replay_buffer_size(model: BaseAlgorithm) -> int | None:
    """Transitions the model's replay buffer holds (all envs together); None without one."""
    buffer = replay_buffer(model)
    return buffer.size() * buffer.n_envs if buffer is not None else None


def file_size(path: Path) -> int:
    """The file's size in bytes; 0 if it does not exist."""
    return path.stat().st_size if path.exists() else 0


def file_sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
