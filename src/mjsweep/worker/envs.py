"""The run's training env: n_envs copies of the variant, one monitor.csv in SB3's format, and VecNormalize
when the spec normalizes (its statistics restored from the checkpoint on resume)."""

from __future__ import annotations

from pathlib import Path

from stable_baselines3.common.monitor import ResultsWriter
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecMonitor, VecNormalize

from ..plan.runs import RunSpec
from ..robots.envs import make_env
from ..sweepdir.files import RunDir
from ..sweepdir.models import CheckpointRecord


def make_vec_env(spec: RunSpec, run: RunDir, resume: CheckpointRecord | None) -> VecEnv:
    """n_envs copies (in this process, or one subprocess each), with one monitor.csv in SB3's format."""
    return normalized_env(spec, run, monitored_env(spec, run, resume), resume)


def monitored_env(spec: RunSpec, run: RunDir, resume: CheckpointRecord | None) -> VecMonitor:
    """The envs and their monitor.csv: appended to on a resume, written anew otherwise."""
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
    return monitored


def normalized_env(spec: RunSpec, run: RunDir, monitored: VecMonitor, resume: CheckpointRecord | None) -> VecEnv:
    """VecNormalize over the monitor when the spec normalizes, with the checkpoint's statistics on a resume
    (reading them raises if their file is damaged)."""
    if spec.normalize is None:
        return monitored
    # Below the normalization, the monitor records the env's own rewards.
    if resume and resume.vecnormalize_file:
        normalized = VecNormalize.load(str(run.checkpoints / resume.vecnormalize_file), monitored)
        normalized.training = True
        return normalized
    return VecNormalize(monitored, training=True, **spec.normalize)
