"""One training run: `python -m mjsweep.worker RUN_DIR` (worker/__main__.py calls main).

The only module that imports torch and stable-baselines3. It reads RUN_DIR/spec.json, caps every
thread pool at one thread before torch does any work, trains the run's algorithm (spec/algos.py;
continuing from the newest usable checkpoint if there is one (worker/resume.py), with its replay buffer if
off-policy), evaluates, and writes result.json. Exit codes: 0 done, 1 the training raised (a deterministic
error), 130 stopped by SIGINT/SIGTERM after saving a checkpoint.

SIGINT and SIGTERM only note a stop request; the worker acts on it at points of its own: between set-up
steps, and at every env step of training and evaluation. Raising from the signal handler would surface
in whatever library code runs at that instant, and some of it turns exceptions into others: inside
gymnasium's `try: import mujoco / except ImportError`, a stop became a "MuJoCo is not installed" error.
"""

from __future__ import annotations

import os
import sys

from ..childproc import cap_threads

# Before numpy or torch are imported: their OpenMP/BLAS pools read these once, at import.
cap_threads(os.environ)

import platform  # noqa: E402
import resource  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable  # noqa: E402
from importlib import metadata  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING, Any, TypeVar  # noqa: E402

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm

    from ..sweepdir.files import RunDir
    from ..sweepdir.models import RunSpec

EXIT_OK, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 130
T = TypeVar("T")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m mjsweep.worker RUN_DIR", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _note_stop_request)
    signal.signal(signal.SIGINT, _note_stop_request)
    try:
        return _train(Path(argv[0]))
    except KeyboardInterrupt:
        print("mjsweep.worker: stopped by a signal", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the traceback goes to log.txt, the launcher reads its tail
        traceback.print_exc()
        from .nonfinite import NonFiniteError

        if isinstance(exc, NonFiniteError):
            # The log's last line is the run's error (status.json, the live view): this one, without the
            # class's module path the traceback's own last line starts with.
            print(exc, file=sys.stderr, flush=True)
        return EXIT_ERROR


_stop_requested = False


def _note_stop_request(signum, frame):  # noqa: ARG001
    global _stop_requested
    _stop_requested = True


def stop_if_requested() -> None:
    """Raise KeyboardInterrupt here, at a point of the worker's own choosing, if a stop was requested."""
    if _stop_requested:
        raise KeyboardInterrupt


def _train(run_path: Path) -> int:
    import torch

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)

    from ..spec.algos import ALGOS
    from ..sweepdir.csvfiles import read_progress
    from ..sweepdir.files import RunDir, write_model
    from ..sweepdir.models import RunResult, RunSpec
    from .checkpoints import Checkpointer, replay_buffer_size
    from .evaluation import PeriodicEvaluator, evaluate
    from .iterations import IterationRecorder
    from .nonfinite import NonFiniteError
    from .resume import fell_back_because, start
    from .tracking import start_logger

    stop_if_requested()
    started = time.monotonic()
    run = RunDir(run_path)
    spec = RunSpec.model_validate_json(run.spec_json.read_text(encoding="utf-8"))
    from .reevaluation import evaluated_otherwise

    if (earlier := evaluated_otherwise(spec, run)) is not None:
        from .reevaluation import evaluate_again

        evaluate_again(spec, run, earlier, stop_if_requested)
    from .physics_eval import evaluate_physics_only, finished_without_physics

    if (finished := finished_without_physics(spec, run)) is not None:
        return evaluate_physics_only(spec, run, finished, stop_if_requested)
    if earlier is not None:
        return EXIT_OK
    xml_sha256, env_sha256 = _loaded_code(spec)
    off_policy = ALGOS[spec.algo].off_policy
    checkpointer = Checkpointer(run, spec.checkpoint_every, spec.checkpoint_every_s,
                                normalized=spec.normalize is not None, off_policy=off_policy,
                                kept=spec.checkpoints_kept, at_end=spec.checkpoint_at_end)
    begun = start(spec, run, checkpointer, stop_if_requested)
    venv, model, resume = begun.venv, begun.model, begun.resume
    try:
        stop_if_requested()  # a stop that came while the env and model were built: before any training
        resumed_buffer = replay_buffer_size(model) if resume else None
        if resumed_buffer is not None:
            print(f"mjsweep.worker: replay buffer of {resumed_buffer} transitions loaded", flush=True)
        tracker = start_logger(spec, run)
        evaluator = PeriodicEvaluator(spec, checkpointer, resume, tracker.log_evaluation if tracker else None) \
            if spec.eval_every else None
        recorder = IterationRecorder(checkpointer, resume, stop_if_requested, evaluator,
                                     on_row=tracker.log_progress if tracker else None,
                                     row_steps=ALGOS[spec.algo].row_steps, exact=begun.exact)
        if evaluator and begun.warm:
            evaluator.evaluate(model, 0.0)  # where the warm run starts: its source's final evaluation
        try:
            model.learn(total_timesteps=spec.total_timesteps - model.num_timesteps,
                        reset_num_timesteps=resume is None, callback=recorder)
            _, final_save_s = timed(_save_model, model, run)
            (mean, std, info_means), eval_s = timed(evaluate, spec, model, stop_if_requested,
                                                    model.get_vec_normalize_env())
            if spec.physics_eval is not None:  # before result.json: a succeeded run has it
                from .physics_eval import evaluate_physics, write

                write(run, evaluate_physics(spec, model, stop_if_requested, model.get_vec_normalize_env()))
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                recorder.save_interrupted()
            if tracker:
                tracker.finish(None, 130 if isinstance(exc, KeyboardInterrupt) else 1)
            # A broken policy shows first through its consequence: an update that fails before its end
            # (torch's check of a distribution's parameters, say), or, between two checks of the parameters,
            # the NaN actions it takes. The parameter that went bad is the error to report.
            if isinstance(exc, Exception) and (broken := recorder.parameters_error(
                    during=not isinstance(exc, NonFiniteError))) is not None and str(broken) != str(exc):
                raise broken from exc
            raise
    finally:
        venv.close()
    timing = recorder.totals()
    progress = read_progress(run.progress_csv)
    training_s = round(timing.training_s, 3)
    checkpoint = recorder.last_checkpoint
    result = RunResult(
        run_id=spec.run_id,
        algo=spec.algo,
        eval_mean_return=mean,
        eval_std_return=std,
        eval_episodes=spec.eval_episodes,
        eval_deterministic=spec.eval_deterministic,
        timesteps=int(model.num_timesteps),
        wall_s=round(timing.wall_s, 3),
        # fps counts training alone (rollout + update), as progress.csv's rows do; saving, evaluation
        # and start-up have figures of their own.
        fps=round(model.num_timesteps / max(training_s, 1e-9), 1),  # from the figure as written
        rollout_s=round(timing.rollout_s, 3),
        train_s=round(timing.train_s, 3),
        training_s=training_s,
        save_s=round(timing.save_s + final_save_s, 3),
        checkpoint_save_s=checkpoint.save_s if checkpoint else None,
        checkpoint_bytes=checkpoint.bytes if checkpoint else None,
        replay_buffer_bytes=checkpoint.replay_buffer_bytes if checkpoint else None,
        replay_buffer_size=replay_buffer_size(model),
        replay_buffer_resumed=resumed_buffer,
        eval_s=round(eval_s, 3),
        periodic_eval_s=round(timing.eval_s, 3) if evaluator else None,
        cpu_s=round(timing.cpu_s, 3),
        evaluations=evaluator.rows if evaluator else None,
        best_eval_mean_return=evaluator.best[0] if evaluator and evaluator.best else None,
        best_eval_timesteps=evaluator.best[1] if evaluator and evaluator.best else None,
        eval_info=info_means,
        # progress.csv's summary, so that `sweep status` need not open it for a finished run
        early_fps=progress.early_fps if progress else None,
        ep_rew_mean=progress.ep_rew_mean if progress else None,
        attempt_wall_s=round(time.monotonic() - started, 3),
        startup_s=round(recorder.startup_s, 3) if recorder.startup_s is not None else None,
        resumed_from=resume.timesteps if resume else None,
        fell_back_because=fell_back_because(run),
        device=spec.device,
        cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
        torch_threads=torch.get_num_threads(),
        torch_interop_threads=torch.get_num_interop_threads(),
        started_by=os.environ.get("MJSWEEP_START", "exec"),  # the local launcher says; others exec
        xml_sha256=xml_sha256,
        env_source_sha256=env_sha256,
        warm_start=spec.warm_start,
        peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        host=platform.node(),
        node=os.environ.get("MJSWEEP_NODE") or platform.node(),  # the cluster node (Ray id, SLURM name)
        versions=versions(),
    )
    write_model(run.result_json, result)
    # done: only a run extending this one to more steps resumes, from its last checkpoint and that one's best
    checkpointer.best.prune({checkpoint.best_timesteps} if checkpoint else ())
    if tracker:
        tracker.finish(result.model_dump(), 0)
    print(f"mjsweep.worker: done, eval return {mean:.2f} +- {std:.2f}", flush=True)
    return EXIT_OK


def _loaded_code(spec: RunSpec) -> tuple[str, str | None]:
    """What this attempt trains on, hashed as it loads it: the model's files (its snapshot) and a custom env's
    source file. A model that no longer hashes as its run id says (a run of a folder from before snapshots reads
    the user's files, which may have changed) is named in the log."""
    from ..robots.envs import env_source_sha256
    from ..robots.modelfiles import loaded_sha256

    xml_sha256 = loaded_sha256(Path(spec.xml), spec.xml_sha256)
    if xml_sha256 != spec.xml_sha256:
        print(f"mjsweep.worker: warning: {spec.xml} hashes as {xml_sha256[:12]}, not as planned "
              f"({spec.xml_sha256[:12]}): a file it reads changed since the run was planned", flush=True)
    return xml_sha256, env_source_sha256(spec.env)


def _save_model(model: BaseAlgorithm, run: RunDir) -> None:
    from .checkpoints import save_atomic

    save_atomic(model.save, run.model_zip)
    if (normalizer := model.get_vec_normalize_env()) is not None:
        save_atomic(normalizer.save, run.vecnormalize)


def timed(fn: Callable[..., T], *args: Any) -> tuple[T, float]:
    """fn(*args) and the seconds it took."""
    started = time.monotonic()
    value = fn(*args)
    return value, time.monotonic() - started


def versions() -> dict[str, str]:
    """The versions of Python and of the packages that shape a training, for result.json."""
    out = {"python": platform.python_version()}
    for dist in ("torch", "stable-baselines3", "gymnasium", "mujoco", "numpy", "mjsweep"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "unknown"
    return out
