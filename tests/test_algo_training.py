"""The worker's pieces for every algorithm: SB3 arguments from the spec's spellings, the rollout / update
split of off-policy iterations, and checkpoints that keep a replay buffer with its own model."""

from __future__ import annotations

import base64
import io
import json
import pickle
import subprocess
import sys
import textwrap
import types
import zipfile
from pathlib import Path

import pytest
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.save_util import load_from_pkl
from stable_baselines3.common.vec_env import DummyVecEnv

from helpers.commands import write_spec
from helpers.models import TINY_XML
from mjsweep.engine.sweep import prepare
from mjsweep.plan import runs as plan
from mjsweep.robots.envs import make_env
from mjsweep.robots.variants import Variant
from mjsweep.spec import loading
from mjsweep.sweepdir.csvfiles import ProgressRow
from mjsweep.sweepdir.files import RunDir
from mjsweep.sweepdir.models import Timing
from mjsweep.worker import checkpoints, iterations
from mjsweep.worker.loaded_policy import load_policy
from mjsweep.worker.model import LinearSchedule, action_noise, sb3_kwargs

ENV = "HalfCheetah-v5"


def tiny_env() -> DummyVecEnv:
    return DummyVecEnv([lambda: make_env(ENV, TINY_XML, {}, 50)])


def tiny_sac(**kwargs) -> SAC:
    settings = {"buffer_size": 1000, "learning_starts": 1000, "batch_size": 8, "policy_kwargs": {"net_arch": [8]},
                **kwargs}
    return SAC("MlpPolicy", tiny_env(), seed=0, device="cpu", **settings)


def run_dir(tmp_path: Path) -> RunDir:
    (tmp_path / "run").mkdir()
    return RunDir(tmp_path / "run")


def test_sb3_arguments_from_rl_zoo_spellings(tmp_path):
    import torch
    from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise

    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: demo
        env: {ENV}
        variants: [{{name: a, xml: {TINY_XML}}}]
        total_timesteps: 256
        algo: td3
        td3:
          learning_rate: lin_1e-3
          train_freq: [2, episode]
          noise_type: normal
          noise_std: 0.2
          policy_kwargs: {{activation_fn: nn.ReLU, net_arch: [8]}}
        """))
    [run] = plan.expand(loading.load(path), [Variant(name="a", xml=TINY_XML, sha256="0" * 64)])
    venv = tiny_env()
    try:
        kwargs = sb3_kwargs(run, venv)
        n_actions = venv.action_space.shape[0]
    finally:
        venv.close()
    assert isinstance(kwargs["learning_rate"], LinearSchedule) and kwargs["learning_rate"](0.5) == 5e-4
    assert kwargs["train_freq"] == (2, "episode")
    noise = kwargs["action_noise"]
    assert isinstance(noise, NormalActionNoise) and noise._sigma.tolist() == [0.2] * n_actions
    assert "noise_type" not in kwargs and "noise_std" not in kwargs
    assert kwargs["policy_kwargs"] == {"activation_fn": torch.nn.ReLU, "net_arch": [8]}
    ou = action_noise("ornstein-uhlenbeck", 0.1, 3)
    assert isinstance(ou, OrnsteinUhlenbeckActionNoise) and ou._sigma.tolist() == [0.1] * 3


class FakeTime:
    """recording's `time`: a clock that moves only when the test says."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


class StepCost(BaseCallback):
    """Each env step costs 0.01 s on the fake clock."""

    def __init__(self, clock: FakeTime):
        super().__init__()
        self.clock = clock

    def _on_step(self) -> bool:
        self.clock.now += 0.01
        return True


def test_off_policy_rows_split_rollout_and_update_time(tmp_path, monkeypatch):
    clock = FakeTime()
    monkeypatch.setattr(iterations, "time", clock)
    monkeypatch.setattr(iterations, "process_age_s", lambda: 0.0)
    model = tiny_sac(learning_starts=10, train_freq=2, gradient_steps=1)
    update = model.train

    def costly_update(*args, **kwargs):
        clock.now += 1.0  # each update costs 1 s
        return update(*args, **kwargs)

    model.train = costly_update
    run = run_dir(tmp_path)
    recorder = iterations.IterationRecorder(checkpoints.Checkpointer(run, every=10**9, off_policy=True), None,
                                          lambda: None, row_steps=10)
    model.learn(40, callback=CallbackList([recorder, StepCost(clock)]))
    rows = [line.split(",") for line in run.progress_csv.read_text().splitlines()[1:]]
    # SB3 collects train_freq=2 steps, then updates once it is past learning_starts=10: a row per 10 steps
    # sums five iterations; the first row has no update, the others five each.
    assert [(int(r[0]), int(r[1])) for r in rows] == [(1, 10), (2, 20), (3, 30), (4, 40)]
    assert [float(r[6]) for r in rows] == pytest.approx([0.1] * 4)
    assert [float(r[7]) for r in rows] == pytest.approx([0.0, 5.0, 5.0, 5.0])
    assert float(rows[1][3]) == pytest.approx(10 / 5.1, abs=0.1)
    assert recorder.rollout_s == pytest.approx(0.4) and recorder.train_s == pytest.approx(15.0)


def test_a_stop_rewinds_the_replay_buffer_with_the_timesteps(tmp_path):
    model = tiny_sac(train_freq=4)
    run = run_dir(tmp_path)
    steps = 0

    def stop_at_step_10() -> None:
        nonlocal steps
        steps += 1
        if steps == 10:  # the third iteration (steps 9-12) has stored step 9 when step 10 is stopped
            raise KeyboardInterrupt

    recorder = iterations.IterationRecorder(checkpoints.Checkpointer(run, every=10**9, off_policy=True), None,
                                          stop_at_step_10, row_steps=1)
    with pytest.raises(KeyboardInterrupt):
        model.learn(100, callback=recorder)
    assert checkpoints.replay_buffer_size(model) == 9
    recorder.save_interrupted()
    checkpoint = run.read_checkpoint()
    assert checkpoint.timesteps == 8 and checkpoint.replay_buffer_size == 8
    assert load_from_pkl(run.checkpoints / checkpoint.replay_buffer_file).size() == 8


def test_a_kill_before_checkpoint_json_never_pairs_a_model_with_another_buffer(tmp_path, monkeypatch):
    model = tiny_sac()
    model.learn(30)
    run = run_dir(tmp_path)
    checkpointer = checkpoints.Checkpointer(run, every=10, off_policy=True)
    first = checkpointer.save(model, 1, Timing(), (0, 0, 0))
    assert (first.model_file, first.replay_buffer_file, first.replay_buffer_size) == \
        ("model_30.zip", "replay_buffer_30.pkl", 30)
    assert first.bytes == sum((run.checkpoints / f).stat().st_size for f in (first.model_file,
                                                                               first.replay_buffer_file))
    model.learn(20, reset_num_timesteps=False)

    def killed(*args):
        raise KeyboardInterrupt

    def killed_while_writing(path):
        Path(path).write_bytes(b"half a buffer")
        raise KeyboardInterrupt

    # killed after the model, halfway through the buffer; then after both, before checkpoint.json
    monkeypatch.setattr(model, "save_replay_buffer", killed_while_writing)
    with pytest.raises(KeyboardInterrupt):
        checkpointer.save(model, 2, Timing(), (0, 0, 0))
    monkeypatch.undo()
    assert run.read_checkpoint() == first and checkpointer.damage(first) is None
    # the half buffer, under a name the next save does not write over: a kill's leftover at 40 timesteps
    (run.checkpoints / ".replay_buffer_50.pkl.tmp").rename(run.checkpoints / ".replay_buffer_40.pkl.tmp")
    monkeypatch.setattr(checkpoints, "write_model", killed)
    with pytest.raises(KeyboardInterrupt):
        checkpointer.save(model, 2, Timing(), (0, 0, 0))
    monkeypatch.undo()
    latest = run.read_checkpoint()
    assert latest == first and checkpointer.damage(first) is None
    assert load_from_pkl(run.checkpoints / latest.replay_buffer_file).size() == 30
    assert (run.checkpoints / "replay_buffer_50.pkl").exists()  # written, but no checkpoint names it

    second = checkpointer.save(model, 2, Timing(), (0, 0, 0))
    assert run.read_checkpoint() == second and second.replay_buffer_size == 50 and second.earlier == [first]
    assert checkpointer.damage(second) is None
    # the leftovers gone; the first set kept as the one to fall back to (checkpoints_kept: 2)
    assert sorted(p.name for p in run.checkpoints.iterdir()) == ["checkpoint.json", "model_30.zip", "model_50.zip",
                                                                  "replay_buffer_30.pkl", "replay_buffer_50.pkl"]


def test_an_off_policy_checkpoint_without_its_buffer_is_not_resumable(tmp_path):
    model = tiny_sac()
    model.learn(10)
    run = run_dir(tmp_path)
    saved = checkpoints.Checkpointer(run, every=10, off_policy=True).save(model, 1, Timing(), (0, 0, 0))
    (run.checkpoints / saved.replay_buffer_file).unlink()
    assert checkpoints.Checkpointer(run, every=10, off_policy=True).damage(saved) == "replay_buffer_10.pkl is missing"
    assert checkpoints.Checkpointer(run, every=10, off_policy=False).damage(saved) is None


def test_warm_up_rows_of_an_off_policy_run_have_no_update_time(tmp_path):
    model = tiny_sac(learning_starts=30, train_freq=1)
    run = run_dir(tmp_path)
    recorder = iterations.IterationRecorder(checkpoints.Checkpointer(run, every=10**9, off_policy=True), None,
                                          lambda: None, row_steps=10)
    model.learn(60, callback=recorder)
    rows = [line.split(",") for line in run.progress_csv.read_text().splitlines()[1:]]
    assert [int(r[1]) for r in rows] == [10, 20, 30, 40, 50, 60]
    # before learning_starts no update runs: the loop between rollouts is rollout time, train_s exactly 0
    assert [float(r[7]) == 0.0 for r in rows] == [True, True, True, False, False, False]


def test_a_run_that_starts_over_drops_the_rows_of_the_attempt_it_repeats(tmp_path):
    run = run_dir(tmp_path)
    run.progress_csv.write_text("iteration,timesteps\n1,10\n2,20\n3,30\n")  # an attempt with no usable checkpoint
    recorder = iterations.IterationRecorder(checkpoints.Checkpointer(run, every=10**9, off_policy=True), None,
                                          lambda: None, row_steps=10)
    tiny_sac().learn(20, callback=recorder)
    lines = run.progress_csv.read_text().splitlines()
    assert lines[0] == ",".join(ProgressRow.columns())
    assert [line.split(",")[:2] for line in lines[1:]] == [["1", "10"], ["2", "20"]]


def move_schedules(model_zip: Path, module: str) -> None:
    """Rewrite a saved model's pickled schedules as if their LinearSchedule class lived in `module`, a
    module that does not exist: a checkpoint of a version that kept the class elsewhere."""
    moved = type("LinearSchedule", (LinearSchedule,), {"__module__": module})

    class Repoint(pickle.Unpickler):
        def find_class(self, mod: str, name: str):
            return moved if name == "LinearSchedule" else super().find_class(mod, name)

    with zipfile.ZipFile(model_zip) as z:
        files = {name: z.read(name) for name in z.namelist()}
    data = json.loads(files["data"])
    gone = sys.modules[module] = types.ModuleType(module)
    gone.__dict__["LinearSchedule"] = moved  # where pickle looks the class up
    try:
        for item in data.values():
            if isinstance(item, dict) and b"LinearSchedule" in base64.b64decode(item.get(":serialized:", "")):
                schedule = Repoint(io.BytesIO(base64.b64decode(item[":serialized:"]))).load()
                item[":serialized:"] = base64.b64encode(pickle.dumps(schedule)).decode()
    finally:
        del sys.modules[module]
    files["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(model_zip, "w") as z:
        for name, content in files.items():
            z.writestr(name, content)


@pytest.mark.slow
def test_a_checkpoint_resumes_though_its_schedules_class_has_moved(tmp_path, tiny_spec):
    tiny_spec.update({"total_timesteps": 256, "checkpoint_every": 256,
                      "ppo": {**tiny_spec["ppo"], "learning_rate": "lin_1e-3", "clip_range": "lin_0.2"}})
    [spec] = prepare(write_spec(tmp_path, tiny_spec)).runs
    run = run_dir(tmp_path)

    def attempt(total_timesteps: int) -> subprocess.CompletedProcess:
        run.spec_json.write_text(json.dumps({**spec.model_dump(mode="json"), "total_timesteps": total_timesteps}))
        return subprocess.run([sys.executable, "-m", "mjsweep.worker", str(run.path)], capture_output=True,
                              text=True, timeout=600, stdin=subprocess.DEVNULL)

    first = attempt(256)
    assert first.returncode == 0, first.stderr
    checkpoint = run.read_checkpoint()
    assert checkpoint is not None and checkpoint.timesteps == 256
    model_zip = run.checkpoints / checkpoint.model_file
    move_schedules(model_zip, "mjsweep.gone")
    # as that version's checkpoint.json named it: without checksums
    run.checkpoint_json.write_text(json.dumps({**json.loads(run.checkpoint_json.read_text()), "sha256": {}}))
    with pytest.raises(ModuleNotFoundError, match="mjsweep.gone"):
        PPO.load(model_zip, device="cpu")  # what the checkpoint holds needs the class where it was
    assert isinstance(load_policy("ppo", str(model_zip)), PPO)  # cross-evaluation and videos load it

    second = attempt(512)  # the same run, extended: it resumes from the checkpoint and trains on
    assert second.returncode == 0, second.stderr
    result = json.loads(run.result_json.read_text())
    assert result["resumed_from"] == 256 and result["timesteps"] == 512
    model = PPO.load(run.model_zip, device="cpu")
    assert isinstance(model.learning_rate, LinearSchedule) and model.learning_rate(0.5) == 5e-4
    assert model.clip_range(0.5) == pytest.approx(0.1)
    # the decay went on to its end, 0 at 512 timesteps, where a constant rate would have stayed 1e-3
    assert model._current_progress_remaining == 0.0
    assert [g["lr"] for g in model.policy.optimizer.param_groups] == [0.0]
