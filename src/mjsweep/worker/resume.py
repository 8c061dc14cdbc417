"""Where an attempt starts: the newest kept checkpoint whose files verify and load, else an older one, else
0 timesteps. A fall back is said in log.txt and resume.json (and at the end in result.json), never silently.

A checkpoint is passed over when a file it names is missing or not as it was saved (its sha256), or when
loading it raises what a damaged file raises (the only check for files saved before checksums were
recorded). A checkpoint passed over is forgotten at once: checkpoint.json is rewritten to name the one
resumed from, or deleted before a start over, so no later attempt meets it again: an attempt whose every
checkpoint is bad starts over once, never in a loop.
"""

from __future__ import annotations

import pickle
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from ..sweepdir.files import RunDir, read_or_none, write_model
from ..sweepdir.models import CheckpointRecord, ResumeRecord, RunSpec
from ..sweepdir.trust import require
from .checkpoints import Checkpointer, truncate_logs
from .exact import unfit
from .live_hyperparams import set_live
from .model import build_model
from .train_envs import monitored_env, normalized_env
from .warm import start_warm

DAMAGED = (ValueError, AssertionError, EOFError, KeyError, RuntimeError, OSError, pickle.UnpicklingError,
           zipfile.BadZipFile)
"""What loading a damaged file raises: SB3's "wasn't a zip-file" ValueError, and its AssertionError "No data
found" for a model cut short where the zip of its weights inside still reads; a bad CRC, torch's reader's
RuntimeError, a cut or garbled pickle (EOFError, UnpicklingError, KeyError, ValueError), a read error. Only
loading runs under it: an env that cannot be built fails the run as before."""


@dataclass
class Start:
    venv: VecEnv
    model: BaseAlgorithm
    resume: CheckpointRecord | None
    """The checkpoint resumed from; None: from 0 timesteps."""
    exact: dict[str, Any] | None = None
    """The checkpoint's exact state, which training puts back before its first step; None: none to put back
    (a start from 0, or a checkpoint without one, resumed re-seeded)."""
    warm: bool = False
    """Started from 0 with a warm start's source loaded (worker/warm.py)."""


def start(spec: RunSpec, run: RunDir, checkpointer: Checkpointer, stop_if_requested: Callable[[], None]) -> Start:
    """The env and the model to train, from the newest usable checkpoint, or from 0 (a warm run: from its
    source's policy and statistics, never from the source again once it has a checkpoint of its own)."""
    because: list[str] = []
    saved = read_or_none(run.read_checkpoint, because)
    for checkpoint in reversed(saved.kept()) if saved else []:
        stop_if_requested()
        problem = checkpointer.damage(checkpoint)
        if problem is None:
            truncate_logs(run, checkpoint)
            loaded = _load(spec, run, checkpointer, checkpoint)
            if isinstance(loaded, Start):
                if because:
                    checkpointer.keep_until(checkpoint)
                    _fell_back(run, saved, checkpoint, because)
                checkpointer.best.rewind(checkpoint)
                print(f"mjsweep.worker: resuming {spec.run_id} from {checkpoint.timesteps} timesteps", flush=True)
                return loaded
            problem = loaded
        because.append(f"the checkpoint at {checkpoint.timesteps} timesteps: {problem}")
        print(f"mjsweep.worker: cannot resume from {because[-1]}", flush=True)
    if because:
        checkpointer.discard()
        _fell_back(run, saved, None, because)
    checkpointer.best.clear()  # an earlier attempt's, which ended before its first usable checkpoint
    stop_if_requested()
    venv = normalized_env(spec, run, monitored_env(spec, run, None), None)
    model = build_model(spec, venv, checkpointer, None)
    return Start(venv, model, None, warm=start_warm(model, spec, run))


def _load(spec: RunSpec, run: RunDir, checkpointer: Checkpointer, checkpoint: CheckpointRecord) -> Start | str:
    """The env and model resumed from `checkpoint`, or why its files could not be loaded. Raises
    UntrustedFolderError, before anything is unpickled, for files of a sweep folder no one trusted."""
    for name in checkpoint.files():  # the launcher checked the folder; a file may have come since
        require(run.checkpoints / name, run.path.parent)
    monitored = monitored_env(spec, run, checkpoint)  # an env that cannot be built fails the run, as ever
    exact, why_not = checkpointer.exact_state(checkpoint)
    if exact is not None and (why := unfit(monitored, exact)) is not None:
        exact, why_not = None, f"{checkpoint.exact_file}: {why}"
    try:
        venv = normalized_env(spec, run, monitored, checkpoint)
        model = build_model(spec, venv, checkpointer, checkpoint, exact=exact is not None)
        set_live(model, spec)  # the spec's values, not the checkpoint's: a PBT member's may have changed
    except DAMAGED as exc:
        monitored.close()
        return f"loading it raised {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if exact is None:
        print(f"mjsweep.worker: resuming re-seeded, not exactly: {why_not}", flush=True)
    else:
        print("mjsweep.worker: resuming exactly: the envs mid-episode, the random generators and the counters "
              "as the checkpoint saved them", flush=True)
    return Start(venv, model, checkpoint, exact)


def _fell_back(run: RunDir, saved: CheckpointRecord | None, resumed: CheckpointRecord | None,
               because: list[str]) -> None:
    record = ResumeRecord(newest=saved.timesteps if saved else None,
                          resumed_from=resumed.timesteps if resumed else None, because=because)
    write_model(run.resume_json, record)
    print(f"mjsweep.worker: {'STARTING OVER' if resumed is None else 'FELL BACK'}: {record.text}", flush=True)


def fell_back_because(run: RunDir) -> str | None:
    """resume.json's line, for result.json: the last fall back of any of the run's attempts."""
    record = read_or_none(run.read_resume)
    return record.text if record else None
