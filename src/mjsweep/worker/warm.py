"""A warm start: the source run's policy (and optimizer state), its normalization statistics and, where asked,
its replay buffer, put into a model built from this run's own spec before its first step.

Only an attempt that starts from 0 does this; one that resumes loads its own checkpoint, which already holds
what the warm start loaded and what was learnt since.
"""

from __future__ import annotations

import pickle
from pathlib import Path

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.save_util import load_from_zip_file, recursive_getattr
from stable_baselines3.common.vec_env import VecNormalize

from ..sweepdir.files import RunDir
from ..sweepdir.models import RunSpec, WarmSource
from ..sweepdir.trust import require


def start_warm(model: BaseAlgorithm, spec: RunSpec, run: RunDir) -> bool:
    """Whether the run starts warm: then its source is loaded into `model` (a cold run's model is left as built)."""
    if spec.warm_start is None:
        return False
    load_source(model, spec.warm_start, spec.device, run)
    return True


def load_source(model: BaseAlgorithm, source: WarmSource, device: str, warm_run: RunDir) -> None:
    """Loads the source's weights and optimizer states (and SAC's entropy coefficient) into `model`; its
    statistics into the model's VecNormalize; its last checkpoint's replay buffer when the source asks. From
    the copy shipped into the warm run's folder where there is one (a Ray node), else the source's folder."""
    shipped = warm_run.warm_source.is_dir()
    run = RunDir(warm_run.warm_source if shipped else Path(source.run_dir))
    for file in (run.model_zip, run.vecnormalize, *([_replay_buffer(run)] if source.replay_buffer else [])):
        require(file, run.path)  # before anything of the source is unpickled
    _, params, variables = load_from_zip_file(run.model_zip, device=device, print_system_info=False)
    assert params is not None, "SB3 saves a model's parameters in every model.zip"
    # exact_match: a network of another shape is an error here, never a partial load
    model.set_parameters(params, exact_match=True, device=device)
    for name, tensor in (variables or {}).items():
        # None on either side: a variable one of them does not use (SAC's learnt entropy coefficient, when the
        # other's is fixed): the run's own setting stands
        mine = recursive_getattr(model, name, None)
        if tensor is not None and mine is not None:
            mine.data.copy_(tensor.data)  # in place: optimizers hold these tensors
    normalizer = model.get_vec_normalize_env()
    if normalizer is not None:
        _copy_statistics(run.vecnormalize, normalizer)
    if source.replay_buffer and isinstance(model, OffPolicyAlgorithm):  # the spec's check: off-policy only
        model.load_replay_buffer(_replay_buffer(run))
    print(f"mjsweep.worker: warm start from {source.run_id} ({source.timesteps} timesteps)"
          f"{' with its replay buffer' if source.replay_buffer else ''}"
          f"{', its files shipped with the run' if shipped else ''}", flush=True)


def _copy_statistics(path: Path, normalizer: VecNormalize) -> None:
    with open(path, "rb") as fh:
        saved = pickle.load(fh)
    normalizer.obs_rms = saved.obs_rms
    normalizer.ret_rms = saved.ret_rms



def _replay_buffer(run: RunDir) -> Path:
    """The source's last checkpoint's replay buffer (engine/warmstart.py checked that it is there)."""
    checkpoint = run.read_checkpoint()
    assert checkpoint is not None and checkpoint.replay_buffer_file is not None
    return run.checkpoints / checkpoint.replay_buffer_file
