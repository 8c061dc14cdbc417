"""After a PBT exploit, the copied member trains with its own perturbed hyperparameters, not the donor's: the
learning rate inside the optimizers' param_groups, PPO's clip range, the entropy coefficient (SAC's fixed one as
the tensor its loss reads), gamma and tau, read off the model the worker resumes and then trains (Ray Tune's
bug #62173 is the donor's values living on). The donor's weights, optimizer state and replay buffer come along."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.vec_env import VecNormalize

from helpers.commands import write_spec
from mjsweep.engine.sweep import prepare, write_run_dir
from mjsweep.spec.algos import ALGOS
from mjsweep.sweepdir.files import RunDir
from mjsweep.sweepdir.lineage import start_from
from mjsweep.sweepdir.models import RunSpec
from mjsweep.worker.checkpoints import Checkpointer
from mjsweep.worker.iterations import IterationRecorder
from mjsweep.worker.live_hyperparams import optimizers
from mjsweep.worker.resume import start

SAC = {"learning_starts": 32, "batch_size": 32, "buffer_size": 2000, "policy_kwargs": {"net_arch": [16]}}


def segment(tmp_path: Path, spec_data: dict, run_id: str, hyperparams: dict, total: int) -> tuple[RunSpec, RunDir]:
    """A run of the tiny walker as a PBT segment: its own hyperparameters, a final checkpoint."""
    base = prepare(write_spec(tmp_path, spec_data)).runs[0]
    run = base.model_copy(update={"run_id": run_id, "hyperparams": {**base.hyperparams, **hyperparams},
                                  "total_timesteps": total, "checkpoint_at_end": True})
    run_dir = RunDir(tmp_path / run_id)
    write_run_dir(run_dir, run, None)
    return run, run_dir


def train(run_dir: RunDir) -> None:
    done = subprocess.run([sys.executable, "-m", "mjsweep.worker", str(run_dir.path)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


class Seen(BaseCallback):
    """The learning rates and coefficients the model holds at the end of each of its rollouts while it trains."""

    def __init__(self) -> None:
        super().__init__()
        self.lrs: list[float] = []

    def _on_rollout_end(self) -> None:
        self.lrs += [g["lr"] for o in optimizers(self.model) for g in o.param_groups]

    def _on_step(self) -> bool:
        return True


def exploit(tmp_path: Path, spec_data: dict, donor_values: dict, member_values: dict, steps: int):
    """The donor trains a segment; the member copies its final checkpoint and resumes with its own values. The
    member's model as the worker resumes it, then after it trained `steps` more (and the rates it trained with)."""
    _, donor_dir = segment(tmp_path, spec_data, "donor", donor_values, steps)
    train(donor_dir)
    member, member_dir = segment(tmp_path, spec_data, "member", member_values, 2 * steps)
    start_from(donor_dir, member_dir)
    checkpointer = Checkpointer(member_dir, member.checkpoint_every, normalized=False,
                                off_policy=ALGOS[member.algo].off_policy, at_end=True)
    begun = start(member, member_dir, checkpointer, lambda: None)
    assert begun.resume is not None and begun.resume.timesteps == steps, "resumed from the copied checkpoint"
    return donor_dir, begun, checkpointer


def train_on(begun, checkpointer: Checkpointer, steps: int) -> Seen:
    """The resumed member trained as the worker trains it (its recorder puts the copied exact state back)."""
    seen = Seen()
    recorder = IterationRecorder(checkpointer, begun.resume, lambda: None, row_steps=1, exact=begun.exact)
    try:
        begun.model.learn(total_timesteps=steps, reset_num_timesteps=False, callback=CallbackList([recorder, seen]))
    finally:
        begun.venv.close()
    assert seen.lrs
    return seen


@pytest.mark.slow
def test_ppo_member_trains_with_its_perturbed_values_after_an_exploit(tmp_path, tiny_spec):
    tiny_spec["ppo"] = {"n_steps": 64, "batch_size": 32, "n_epochs": 2}
    donor_dir, begun, checkpointer = exploit(
        tmp_path, tiny_spec, {"learning_rate": 1e-3, "clip_range": 0.3, "ent_coef": 0.0},
        {"learning_rate": 2.5e-4, "clip_range": 0.123, "ent_coef": 0.0321}, 128)
    model = begun.model
    from stable_baselines3.common.save_util import load_from_zip_file

    _, donor_params, _ = load_from_zip_file(donor_dir.path / "model.zip", device="cpu")
    for name, tensor in model.policy.state_dict().items():
        assert torch.equal(tensor, donor_params["policy"][name]), f"{name}: not the donor's weights"
    assert model.policy.optimizer.state, "the donor's Adam moments came along"

    def live() -> None:
        assert [g["lr"] for g in model.policy.optimizer.param_groups] == [2.5e-4]
        assert model.clip_range(model._current_progress_remaining) == pytest.approx(0.123)
        assert model.ent_coef == 0.0321

    live()
    seen = train_on(begun, checkpointer, 128)
    live()
    assert set(seen.lrs) == {2.5e-4}


@pytest.mark.slow
def test_sac_member_trains_with_its_perturbed_values_after_an_exploit(tmp_path, tiny_spec):
    del tiny_spec["ppo"]
    tiny_spec.update(algo="sac", sac=SAC)
    donor_dir, begun, checkpointer = exploit(
        tmp_path, tiny_spec, {"learning_rate": 1e-3, "ent_coef": 0.1, "tau": 0.005, "gamma": 0.99},
        {"learning_rate": 2.5e-4, "ent_coef": 0.0321, "tau": 0.02, "gamma": 0.95}, 96)
    model = begun.model
    assert model.replay_buffer.size() == 96, "the donor's replay buffer came along"
    assert len(optimizers(model)) == 2  # the actor's and the critic's: the entropy coefficient is fixed

    def live() -> None:
        assert [g["lr"] for o in optimizers(model) for g in o.param_groups] == [2.5e-4, 2.5e-4]
        assert model.ent_coef_tensor.item() == pytest.approx(0.0321)
        assert (model.tau, model.gamma) == (0.02, 0.95)

    live()
    seen = train_on(begun, checkpointer, 32)
    live()
    assert set(seen.lrs) == {2.5e-4}


@pytest.mark.slow
def test_a_normalized_member_discounts_returns_with_its_own_gamma_after_an_exploit(tmp_path, tiny_spec):
    # Reward normalization divides by the spread of returns discounted by the run's gamma: the member's, not
    # the one pickled with the donor's statistics.
    tiny_spec["ppo"] = {"n_steps": 64, "batch_size": 32, "n_epochs": 2}
    tiny_spec["normalize"] = True
    _, donor_dir = segment(tmp_path, tiny_spec, "donor", {"gamma": 0.99}, 128)
    train(donor_dir)
    member, member_dir = segment(tmp_path, tiny_spec, "member", {"gamma": 0.9}, 256)
    member = member.model_copy(update={"normalize": {**member.normalize, "gamma": 0.9}})  # as make_run plans it
    write_run_dir(member_dir, member, None)
    start_from(donor_dir, member_dir)
    checkpointer = Checkpointer(member_dir, member.checkpoint_every, normalized=True, off_policy=False, at_end=True)
    begun = start(member, member_dir, checkpointer, lambda: None)
    assert begun.resume is not None and begun.resume.timesteps == 128
    assert begun.venv.gamma == 0.9 and begun.model.gamma == 0.9 and begun.model.rollout_buffer.gamma == 0.9
    copied = member_dir.checkpoints / begun.resume.vecnormalize_file
    assert VecNormalize.load(str(copied), begun.venv.venv).gamma == 0.99  # what the donor's copy holds
    begun.venv.close()
