"""SB3's own checks of each distinct set of hyperparameters, before anything starts.

The spec (spec/sweepspec.py, spec/algos.py) judges the values it understands (learning rates, gammas,
rollout sizes). What it cannot judge, only the algorithm's constructor can: the layers in policy_kwargs,
gSDE, another policy class. For a sweep that sets any of those, the model is built once per distinct set
of hyperparameters on the probe env (the first variant), in a child process with one-thread pools that dies
with the launcher (childproc.py), so the launcher never imports torch and the child works while the
variants' envs are probed. A sweep that sets only checked keys pays nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..childproc import Child
from ..spec.algos import ALGOS
from ..sweepdir.models import RunSpec

CHECKED_BY_SPEC = frozenset({
    "learning_rate", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range", "clip_range_vf",
    "normalize_advantage", "ent_coef", "vf_coef", "max_grad_norm", "target_kl", "stats_window_size",
    "buffer_size", "learning_starts", "tau", "train_freq", "gradient_steps", "target_update_interval",
    "target_entropy", "policy_delay", "target_policy_noise", "target_noise_clip", "rms_prop_eps", "noise_type",
    "noise_std", "cg_max_steps", "cg_damping", "line_search_shrinking_factor", "line_search_max_iter",
    "n_critic_updates", "sub_sampling_factor",
})
"""Hyperparameters whose every value the spec (algos.value_problem) checks itself; any other key asks for a
model build."""


def needs_build(run: RunSpec) -> bool:
    """Whether only the constructor can judge the run's hyperparameters: a policy other than its
    algorithm's default (RecurrentPPO's MlpLstmPolicy, MlpPolicy for the others), or a key the spec does
    not check."""
    return run.policy != ALGOS[run.algo].policy or any(key not in CHECKED_BY_SPEC for key in run.hyperparams)


def distinct_sets(runs: list[RunSpec]) -> list[RunSpec]:
    """One run for each distinct set of hyperparameters that needs a build, in the sweep's order."""
    seen: set[str] = set()
    chosen = []
    for run in runs:
        key = json.dumps([run.algo, run.policy, run.hyperparams, run.n_envs], sort_keys=True, default=str)
        if needs_build(run) and key not in seen:
            seen.add(key)
            chosen.append(run)
    return chosen


class ModelCheck:
    """The child that builds the models; `problems()` waits for its verdict."""

    def __init__(self, runs: list[RunSpec], probe_xml: Path):
        self.runs = distinct_sets(runs)
        self._child: Child | None = None
        if not self.runs:
            return
        # The child builds on the CPU with no logging: neither changes what the constructor accepts.
        probes = [run.model_copy(update={"xml": str(probe_xml), "device": "cpu", "tensorboard": False,
                                         "wandb": None}).model_dump(mode="json") for run in self.runs]
        # From a file, not a pipe: the child reads while this process goes on probing envs.
        with tempfile.TemporaryFile("w+") as request:
            json.dump(probes, request)
            request.seek(0)
            self._child = Child.start([sys.executable, "-m", "mjsweep.engine.modelcheck"], stdin=request,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def problems(self) -> list[tuple[RunSpec, str]]:
        """(a run with that set of hyperparameters, what SB3 said) for each set SB3 refuses."""
        if self._child is None:
            return []
        out, err = self._child.proc.communicate()
        if self._child.returncode != 0:
            tail = err.strip().splitlines()[-1:] or [f"exit code {self._child.returncode}"]
            return [(self.runs[0], f"the hyperparameter check could not run: {tail[0]}")]
        verdicts: list[str | None] = json.loads(out)
        return [(run, problem) for run, problem in zip(self.runs, verdicts, strict=True) if problem]


def _verdict(run: RunSpec, workdir: Path) -> str | None:
    """What the algorithm's constructor says of this run's hyperparameters; None when it builds. An env
    that cannot be built is the env probe's to report, not this check's."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    from ..robots.envs import make_env
    from ..sweepdir.files import RunDir
    from ..worker.checkpoints import Checkpointer
    from ..worker.model import build_model

    try:
        venv = DummyVecEnv([lambda: make_env(run.env, Path(run.xml), run.env_kwargs, run.max_episode_steps)
                            for _ in range(run.n_envs)])
    except Exception:  # noqa: BLE001 - reported by the env probe, with its cause
        return None
    try:
        build_model(run, venv, Checkpointer(RunDir(workdir), every=run.checkpoint_every), None)
    except Exception as exc:  # noqa: BLE001 - whatever SB3 raises is the user's answer
        return one_line(exc)
    finally:
        venv.close()
    return None


def one_line(exc: BaseException) -> str:
    """The exception's type and the first line of its message (SB3's assertions go on for a paragraph)."""
    text = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def main() -> int:
    import torch

    torch.set_num_threads(1)
    runs = [RunSpec.model_validate(data) for data in json.load(sys.stdin)]
    verdicts: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="mjsweep-modelcheck-") as tmp:
        for i, run in enumerate(runs):
            workdir = Path(tmp) / str(i)
            workdir.mkdir()
            verdicts.append(_verdict(run, workdir))
    json.dump(verdicts, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
