"""A damaged checkpoint (a failing disk, a copy cut short) never fails a run for good: the worker keeps the
last `checkpoints_kept` checkpoints with their files' sha256, resumes from the newest that verifies and loads,
else starts over once, and says which and why in log.txt, resume.json, result.json and `sweep status`.

Real trainings of the tiny walker through the real worker; the first attempt of each run is a short one
that leaves its checkpoints behind, as an interrupted run does."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.commands import launcher_output, run_dirs, run_sweep, start_sweep, wait_for, write_spec
from mjsweep.engine.sweep import prepare
from mjsweep.sweepdir.files import RunDir
from mjsweep.worker.checkpoints import file_sha256

WAIT = 240.0  # a bound on hanging, never on speed


class Run:
    """One run of a spec, its attempts through the real worker (`python -m mjsweep.worker`)."""

    def __init__(self, tmp_path: Path, spec: dict):
        [self.spec] = prepare(write_spec(tmp_path, spec)).runs
        (tmp_path / "run").mkdir()
        self.dir = RunDir(tmp_path / "run")

    def attempt(self, total_timesteps: int) -> subprocess.CompletedProcess:
        """The run trained to `total_timesteps`: a first attempt to fewer leaves its checkpoints."""
        self.dir.spec_json.write_text(json.dumps({**self.spec.model_dump(mode="json"),
                                                  "total_timesteps": total_timesteps}))
        proc = subprocess.run([sys.executable, "-m", "mjsweep.worker", str(self.dir.path)], capture_output=True,
                              text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc

    def result(self) -> dict:
        return json.loads(self.dir.result_json.read_text())

    def progress_steps(self) -> list[int]:
        return [int(r["timesteps"]) for r in csv.DictReader(self.dir.progress_csv.open())]

    def checkpoint_file(self, timesteps: int, prefix: str) -> Path:
        [path] = self.dir.checkpoints.glob(f"{prefix}_{timesteps}.*")
        return path


def cut_short(path: Path) -> None:
    """The file as a copy cut short leaves it: its first half."""
    os.truncate(path, path.stat().st_size // 2)


def garble(path: Path) -> None:
    """The file as a failing disk leaves it: the same size, a block in its middle overwritten."""
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 64] = bytes(64)
    path.write_bytes(bytes(data))


@pytest.fixture
def spec(tiny_spec) -> dict:
    """The tiny PPO run with a checkpoint at every iteration (128 timesteps)."""
    return {**tiny_spec, "checkpoint_every": 128, "checkpoint_every_s": None}


def test_checkpoints_kept_is_no_part_of_the_run_ids(tmp_path, spec):
    ids = [prepare(write_spec(tmp_path, {**spec, "checkpoints_kept": kept}, f"{kept}.yaml")).runs[0]
           for kept in (1, 3)]
    assert ids[0].run_id == ids[1].run_id and [r.checkpoints_kept for r in ids] == [1, 3]


def test_each_checkpoint_keeps_the_one_before_with_the_sha256_of_every_file(tmp_path, spec):
    run = Run(tmp_path, spec)
    run.attempt(512)
    record = json.loads(run.dir.checkpoint_json.read_text())
    assert record["timesteps"] == 512 and [e["timesteps"] for e in record["earlier"]] == [384]
    assert sorted(p.name for p in run.dir.checkpoint_files()) == ["exact_384.npz", "exact_512.npz", "model_384.zip",
                                                                  "model_512.zip"]
    for entry in (record, *record["earlier"]):
        assert entry["sha256"] == {name: file_sha256(run.dir.checkpoints / name)
                                   for name in (entry["model_file"], entry["exact_file"])}
    # each kept checkpoint has the log sizes of its own moment: the older one's are a prefix
    assert record["earlier"][0]["progress_bytes"] < record["progress_bytes"]


@pytest.mark.slow
def test_a_damaged_exact_state_resumes_from_its_checkpoint_re_seeded_and_says_so(tmp_path, spec):
    run = Run(tmp_path, spec)
    run.attempt(512)
    path = run.checkpoint_file(512, "exact")
    data = bytearray(path.read_bytes())
    data[len(data) // 2:len(data) // 2 + 64] = b"\xff" * 64  # the physics state is mostly zeros: garble() keeps it
    path.write_bytes(bytes(data))
    proc = run.attempt(768)
    assert "resuming re-seeded, not exactly: exact_512.npz is damaged" in proc.stdout
    assert f"resuming {run.spec.run_id} from 512 timesteps" in proc.stdout and "FELL BACK" not in proc.stdout
    assert run.result()["timesteps"] == 768


@pytest.mark.slow
def test_an_exact_state_of_another_mujoco_version_resumes_re_seeded_and_says_so(tmp_path, spec):
    """A physics state laid out otherwise (as another MuJoCo version would lay it out) is never put back."""
    from mjsweep.sweepdir import arraytree

    run = Run(tmp_path, spec)
    run.attempt(512)
    path = run.checkpoint_file(512, "exact")
    state = arraytree.read(str(path))
    state["envs"][0]["physics"]["layout"][0][0] = "renamed_by_another_version"
    with open(path, "wb") as fh:
        arraytree.write(fh, state)
    record = json.loads(run.dir.checkpoint_json.read_text())
    record["sha256"][path.name] = file_sha256(path)
    run.dir.checkpoint_json.write_text(json.dumps(record))
    proc = run.attempt(640)
    assert "resuming re-seeded, not exactly: exact_512.npz: its physics state is of another model or MuJoCo " \
        "version" in proc.stdout
    assert run.result()["resumed_from"] == 512 and run.result()["timesteps"] == 640


@pytest.mark.slow
def test_a_damaged_newest_model_falls_back_to_the_one_before_and_says_so(tmp_path, spec):
    run = Run(tmp_path, spec)
    run.attempt(512)
    garble(run.checkpoint_file(512, "model"))
    proc = run.attempt(768)
    assert "cannot resume from the checkpoint at 512 timesteps: model_512.zip is damaged" in proc.stdout
    assert "FELL BACK: resumed from the checkpoint at 384 timesteps" in proc.stdout
    assert f"resuming {run.spec.run_id} from 384 timesteps" in proc.stdout
    result = run.result()
    assert result["resumed_from"] == 384 and result["timesteps"] == 768
    assert result["fell_back_because"].startswith("resumed from the checkpoint at 384 timesteps")
    assert "model_512.zip is damaged" in result["fell_back_because"]
    assert run.progress_steps() == [128, 256, 384, 512, 640, 768]  # the rows after 384 dropped, then again
    assert json.loads(run.dir.resume_json.read_text())["resumed_from"] == 384
    record = json.loads(run.dir.checkpoint_json.read_text())
    assert record["timesteps"] == 768 and [e["timesteps"] for e in record["earlier"]] == [640]


@pytest.mark.slow
def test_a_model_cut_short_without_a_checksum_falls_back_when_it_does_not_load(tmp_path, spec):
    """A checkpoint.json written before checksums: the load's own error is what tells a damaged file."""
    run = Run(tmp_path, spec)
    run.attempt(512)
    record = json.loads(run.dir.checkpoint_json.read_text())
    record["sha256"] = {}
    run.dir.checkpoint_json.write_text(json.dumps(record))
    cut_short(run.checkpoint_file(512, "model"))
    proc = run.attempt(640)
    assert "cannot resume from the checkpoint at 512 timesteps: loading it raised" in proc.stdout
    assert run.result()["resumed_from"] == 384 and run.result()["timesteps"] == 640


@pytest.mark.slow
def test_every_checkpoint_damaged_starts_over_once_and_says_so(tmp_path, spec):
    run = Run(tmp_path, spec)
    run.attempt(512)
    garble(run.checkpoint_file(512, "model"))
    cut_short(run.checkpoint_file(384, "model"))
    proc = run.attempt(640)
    assert "STARTING OVER: started over from 0 timesteps, its logs cleared" in proc.stdout
    result = run.result()
    assert result["resumed_from"] is None and result["timesteps"] == 640
    assert result["fell_back_because"].startswith("started over from 0 timesteps")
    assert "model_512.zip is damaged" in result["fell_back_because"]
    assert "model_384.zip is damaged" in result["fell_back_because"]
    assert run.progress_steps() == [128, 256, 384, 512, 640]  # from the first row again, none repeated
    # the damaged files are gone with the checkpoint.json that named them: the next attempt resumes
    # from the new checkpoints, and never meets the damaged ones again
    proc = run.attempt(768)
    assert "cannot resume" not in proc.stdout and run.result()["resumed_from"] == 640


@pytest.mark.slow
def test_a_garbled_checkpoint_json_starts_over(tmp_path, spec):
    run = Run(tmp_path, spec)
    run.attempt(256)
    run.dir.checkpoint_json.write_text('{"timesteps": 25')
    proc = run.attempt(384)
    assert "STARTING OVER" in proc.stdout and "checkpoint.json" in run.result()["fell_back_because"]
    assert run.result()["timesteps"] == 384 and run.progress_steps() == [128, 256, 384]


@pytest.mark.slow
def test_one_checkpoint_kept_has_nothing_to_fall_back_to(tmp_path, spec):
    run = Run(tmp_path, {**spec, "checkpoints_kept": 1})
    run.attempt(512)
    assert sorted(p.name for p in run.dir.checkpoint_files()) == ["exact_512.npz", "model_512.zip"]
    assert json.loads(run.dir.checkpoint_json.read_text())["earlier"] == []
    garble(run.checkpoint_file(512, "model"))
    proc = run.attempt(640)
    assert "STARTING OVER" in proc.stdout and run.result()["timesteps"] == 640


@pytest.mark.slow
def test_damaged_normalization_statistics_beside_a_good_model_fall_back(tmp_path, spec):
    run = Run(tmp_path, {**spec, "normalize": True})
    run.attempt(512)
    garble(run.checkpoint_file(512, "vecnormalize"))
    proc = run.attempt(640)
    assert "vecnormalize_512.pkl is damaged" in proc.stdout
    assert run.result()["resumed_from"] == 384 and run.result()["timesteps"] == 640


@pytest.mark.slow
def test_a_damaged_replay_buffer_beside_a_good_model_falls_back(tmp_path, spec):
    sac = {"learning_starts": 100, "batch_size": 32, "buffer_size": 5000, "policy_kwargs": {"net_arch": [16]},
           "train_freq": 4}
    run = Run(tmp_path, {**spec, "algo": "sac", "ppo": {}, "sac": sac})
    run.attempt(384)
    cut_short(run.checkpoint_file(384, "replay_buffer"))
    proc = run.attempt(512)
    assert "replay_buffer_384.pkl is damaged" in proc.stdout
    result = run.result()
    assert result["resumed_from"] == 256 and result["replay_buffer_resumed"] == 256 and result["timesteps"] == 512


@pytest.mark.slow
def test_a_rerun_after_a_stop_falls_back_and_status_says_so(tmp_path, tiny_spec):
    """Through `sweep run`: a run stopped by Ctrl-C, its newest model garbled, finishes on the rerun, and
    `sweep status` names the checkpoint it resumed from and why."""
    tiny_spec.update({"total_timesteps": 4096, "checkpoint_every": 128, "checkpoint_every_s": None})
    spec = write_spec(tmp_path, tiny_spec)
    launcher = start_sweep(spec, "--grace", "60")
    sweep_dir = tmp_path / "runs" / "tiny"

    def two_kept() -> list[Path]:
        return [d for d in run_dirs(sweep_dir) if (d / "checkpoints" / "checkpoint.json").exists()
                and json.loads((d / "checkpoints" / "checkpoint.json").read_text())["earlier"]]

    [run_dir] = wait_for(two_kept, what="two checkpoints", timeout=WAIT)
    os.kill(launcher.pid, signal.SIGINT)
    assert launcher.wait(timeout=WAIT) == 130, launcher_output(spec)
    record = json.loads((run_dir / "checkpoints" / "checkpoint.json").read_text())
    older = record["earlier"][-1]["timesteps"]
    garble(run_dir / "checkpoints" / record["model_file"])

    rerun = run_sweep("run", str(spec))
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    result = json.loads((run_dir / "result.json").read_text())
    assert result["resumed_from"] == older and result["timesteps"] == 4096
    assert f"{record['model_file']} is damaged" in result["fell_back_because"]
    status = run_sweep("status", str(sweep_dir))
    assert f"resumed from the checkpoint at {older} timesteps" in status.stdout.replace("\n", "")
    views = json.loads(run_sweep("status", "--json", str(sweep_dir)).stdout)["runs"]
    assert views[0]["fell_back"] == result["fell_back_because"]
    assert json.loads((run_dir / "status.json").read_text())["fell_back"] == result["fell_back_because"]
