"""Crashes, signals, timeouts, a killed launcher, two launchers: real processes, real signals, real PPO."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
from pathlib import Path

import psutil
import pytest

from helpers.commands import launcher_output, run_dirs, run_sweep, start_sweep, status_of, wait_for, write_spec

pytestmark = pytest.mark.slow

WAIT = 240.0  # generous: a bound on hanging, never on speed


def long_spec(tmp_path: Path, tiny_spec: dict, seeds: int = 1, total: int = 4096) -> Path:
    tiny_spec.update({"seeds": seeds, "total_timesteps": total, "checkpoint_every": 256,
                      "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 2}})
    return write_spec(tmp_path, tiny_spec)


def worker_processes(sweep_dir: Path) -> list[psutil.Process]:
    """The sweep's workers: exec'd ones name their run dir on their command line, forked ones run in it."""
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        exec_worker = "mjsweep.worker" in cmd and str(sweep_dir) in cmd
        forked_worker = "mjsweep.launchers.template" in cmd and (proc.info["cwd"] or "").startswith(f"{sweep_dir}/")
        if exec_worker or forked_worker:
            found.append(proc)
    return found


def with_checkpoint(sweep_dir: Path, n: int = 1):
    def check():
        dirs = [d for d in run_dirs(sweep_dir) if (d / "checkpoints" / "checkpoint.json").exists()
                and status_of(d).get("state") == "running"]
        return dirs if len(dirs) >= n else None
    return check


def checkpoint_timesteps(run_dir: Path) -> float:
    """The timesteps of the run's last checkpoint; infinite once the run's end has removed it."""
    try:
        return json.loads((run_dir / "checkpoints" / "checkpoint.json").read_text())["timesteps"]
    except FileNotFoundError:
        return float("inf")


def assert_continuous_logs(run_dir: Path, total: int, episode_len: int = 100) -> None:
    progress = list(csv.DictReader((run_dir / "progress.csv").open()))
    steps = [int(r["timesteps"]) for r in progress]
    assert steps == sorted(set(steps)) and steps[-1] == total
    assert [int(r["iteration"]) for r in progress] == list(range(1, len(progress) + 1))
    episodes = list(csv.DictReader(line for line in (run_dir / "monitor.csv").open() if not line.startswith("#")))
    # No episode row repeated: at most total/len episodes fit; at most two were cut off by the stops.
    assert total // episode_len - 3 <= len(episodes) <= total // episode_len


def test_kill_9_of_a_worker_is_retried_from_its_checkpoint(tmp_path, tiny_spec):
    spec = long_spec(tmp_path, tiny_spec)
    launcher = start_sweep(spec)
    sweep_dir = tmp_path / "runs" / "tiny"
    [run_dir] = wait_for(with_checkpoint(sweep_dir), what="a checkpoint")
    os.kill(status_of(run_dir)["pid"], signal.SIGKILL)
    assert launcher.wait(timeout=WAIT) == 0, launcher_output(spec)
    status = status_of(run_dir)
    assert status["state"] == "succeeded" and status["attempts"] == 2
    result = json.loads((run_dir / "result.json").read_text())
    assert result["resumed_from"] >= 256 and result["timesteps"] == 4096
    assert "retrying" in launcher_output(spec) and "killed" in launcher_output(spec)
    assert_continuous_logs(run_dir, 4096)


def test_a_run_shorter_than_checkpoint_every_resumes_from_a_time_checkpoint(tmp_path, tiny_spec):
    long_spec(tmp_path, tiny_spec)  # the 4,096-step run of the other tests, 128-step iterations
    tiny_spec.update({"checkpoint_every": 1_000_000, "checkpoint_every_s": 0.5})  # no checkpoint by timesteps
    spec = write_spec(tmp_path, tiny_spec)
    launcher = start_sweep(spec)
    sweep_dir = tmp_path / "runs" / "tiny"
    [run_dir] = wait_for(with_checkpoint(sweep_dir), what="a checkpoint")
    os.kill(status_of(run_dir)["pid"], signal.SIGKILL)
    assert launcher.wait(timeout=WAIT) == 0, launcher_output(spec)
    assert status_of(run_dir)["attempts"] == 2
    result = json.loads((run_dir / "result.json").read_text())
    assert result["resumed_from"] >= 128 and result["timesteps"] == 4096
    assert_continuous_logs(run_dir, 4096)


@pytest.mark.parametrize("start_with", ["template", "exec"])
def test_kill_9_of_the_launcher_leaves_no_orphan_and_a_rerun_completes(tmp_path, tiny_spec, start_with):
    spec = long_spec(tmp_path, tiny_spec, seeds=3, total=2048)
    launcher = start_sweep(spec, "--workers", "2", "--start", start_with)
    sweep_dir = tmp_path / "runs" / "tiny"

    def one_done_one_checkpointed_early():
        # The checkpointed run must be far from its end: one that started beside the finished run ends a
        # moment later, perhaps before the kill, and then no run would be left to resume.
        dirs = run_dirs(sweep_dir)
        done = [d for d in dirs if status_of(d).get("state") == "succeeded"]
        early = [d for d in with_checkpoint(sweep_dir)() or [] if checkpoint_timesteps(d) <= 1024]
        return done if done and early else None

    done = wait_for(one_done_one_checkpointed_early, what="a finished run and a checkpointed one")
    workers = worker_processes(sweep_dir)
    # A worker that just ended and is not reaped yet is a zombie without a command line: as_dict skips it.
    templates = [p for p in psutil.Process(launcher.pid).children()
                 if "mjsweep.launchers.template" in " ".join(p.as_dict(["cmdline"], ad_value=None)["cmdline"] or [])]
    # Killed at once: a checkpointed run left to run on while the finished runs' files are read could end
    # before the kill, and then no run would be left to resume.
    os.kill(launcher.pid, signal.SIGKILL)
    launcher.wait(timeout=30)
    assert workers and len(templates) == (start_with == "template")
    before = {d: {p: p.read_bytes() for p in d.rglob("*") if p.is_file()} for d in done}  # ended: never touched
    gone, alive = psutil.wait_procs([*workers, *templates], timeout=10)
    assert not alive, f"orphans: {[p.pid for p in alive]}"

    dry = run_sweep("run", str(spec), "--dry-run")
    assert "left running by a launcher that is gone" in dry.stdout and "resume" in dry.stdout
    rerun = run_sweep("run", str(spec), "--start", start_with)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    for d, files in before.items():
        assert {p: p.read_bytes() for p in d.rglob("*") if p.is_file()} == files  # byte-identical
    results = [json.loads((d / "result.json").read_text()) for d in run_dirs(sweep_dir)]
    assert len(results) == 3 and all(r["timesteps"] == 2048 and r["started_by"] == start_with for r in results)
    assert any(r["resumed_from"] for r in results)


def test_sigint_stops_every_run_with_a_checkpoint_and_a_rerun_resumes(tmp_path, tiny_spec):
    spec = long_spec(tmp_path, tiny_spec, seeds=2, total=6144)
    launcher = start_sweep(spec, "--workers", "2", "--grace", "30")
    sweep_dir = tmp_path / "runs" / "tiny"
    wait_for(with_checkpoint(sweep_dir, n=2), what="two checkpointed runs")
    workers = worker_processes(sweep_dir)
    os.kill(launcher.pid, signal.SIGINT)
    assert launcher.wait(timeout=WAIT) == 130, launcher_output(spec)
    assert not [p for p in workers if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not worker_processes(sweep_dir)
    for d in run_dirs(sweep_dir):
        status = status_of(d)
        assert status["state"] == "interrupted" and status["failure"] == "interrupted"
        assert (d / "checkpoints" / "checkpoint.json").exists()
    assert "0 succeeded, 0 failed, 2 interrupted" in launcher_output(spec)

    rerun = run_sweep("run", str(spec))
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    for d in run_dirs(sweep_dir):
        result = json.loads((d / "result.json").read_text())
        assert result["resumed_from"] > 0 and result["timesteps"] == 6144
        assert_continuous_logs(d, 6144)


def test_sigint_counts_the_runs_it_stopped_and_those_that_never_started_as_pending(tmp_path, tiny_spec):
    spec = long_spec(tmp_path, tiny_spec, seeds=3, total=6144)
    launcher = start_sweep(spec, "--workers", "1", "--grace", "30")
    sweep_dir = tmp_path / "runs" / "tiny"
    wait_for(with_checkpoint(sweep_dir, n=1), what="a checkpointed run")
    os.kill(launcher.pid, signal.SIGINT)
    assert launcher.wait(timeout=WAIT) == 130, launcher_output(spec)
    assert "0 succeeded, 0 failed, 1 interrupted, 2 pending" in launcher_output(spec)
    status = run_sweep("status", str(sweep_dir), "--json")
    counts = json.loads(status.stdout)["counts"]
    assert (counts.get("interrupted"), counts.get("pending")) == (1, 2), counts


def test_a_second_launcher_on_the_same_sweep_is_refused(tmp_path, tiny_spec):
    spec = long_spec(tmp_path, tiny_spec, total=100_000)
    first = start_sweep(spec)
    sweep_dir = tmp_path / "runs" / "tiny"
    try:
        wait_for(lambda: any(status_of(d).get("state") == "running" for d in run_dirs(sweep_dir)),
                 what="a running run")
        second = run_sweep("run", str(spec))
        assert second.returncode == 2
        assert second.stderr.strip() == (f"error: sweep {sweep_dir} is already running (launcher pid "
                                          f"{first.pid}); wait for it, or stop it first")
    finally:
        os.kill(first.pid, signal.SIGTERM)
        assert first.wait(timeout=WAIT) == 130


def test_per_run_timeout_stops_the_run_and_retries_it(tmp_path, tiny_spec):
    spec = long_spec(tmp_path, tiny_spec, total=1_000_000)
    proc = run_sweep("run", str(spec), "--timeout", "6s", "--retries", "1", "--grace", "5")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [run_dir] = run_dirs(tmp_path / "runs" / "tiny")
    status = status_of(run_dir)
    assert status["state"] == "failed" and status["failure"] == "timeout" and status["attempts"] == 2
    assert not worker_processes(tmp_path / "runs" / "tiny")


def test_a_hung_worker_is_timed_out_killed_and_retried_from_its_checkpoint(tmp_path, tiny_spec):
    spec = long_spec(tmp_path, tiny_spec, seeds=2, total=2048)
    # 10 s is several times what a run takes here: only the stopped one meets it.
    launcher = start_sweep(spec, "--workers", "2", "--timeout", "10s", "--grace", "2")
    sweep_dir = tmp_path / "runs" / "tiny"
    hung = wait_for(with_checkpoint(sweep_dir), what="a checkpoint")[0]
    os.kill(status_of(hung)["pid"], signal.SIGSTOP)  # a stopped worker holds SIGINT until a SIGCONT that never comes
    assert launcher.wait(timeout=WAIT) == 0, launcher_output(spec)
    assert f"{hung.name}: timeout: timed out: ran past --timeout of 10s, stopped by SIGINT, then SIGKILL when it " \
        "did not stop within --grace (exit -9)" in launcher_output(spec)  # SIGKILLed after the grace
    assert [status_of(d)["attempts"] for d in run_dirs(sweep_dir) if d != hung] == [1]
    assert status_of(hung)["state"] == "succeeded" and status_of(hung)["attempts"] == 2
    result = json.loads((hung / "result.json").read_text())
    assert result["resumed_from"] >= 256 and result["timesteps"] == 2048
    assert_continuous_logs(hung, 2048)
    assert not worker_processes(sweep_dir)


def test_a_run_folder_deleted_while_its_run_runs_fails_that_run_alone_and_a_rerun_completes(tmp_path, tiny_spec):
    spec = long_spec(tmp_path, tiny_spec, seeds=3)
    launcher = start_sweep(spec, "--workers", "2")
    sweep_dir = tmp_path / "runs" / "tiny"
    deleted = wait_for(with_checkpoint(sweep_dir), what="a checkpoint")[0]
    # The worker may add a file while rmtree empties the folder: again until the folder is gone.
    wait_for(lambda: shutil.rmtree(deleted, ignore_errors=True) or not deleted.exists(), what="the folder gone")
    assert launcher.wait(timeout=WAIT) == 1, launcher_output(spec)
    out = launcher_output(spec)
    assert f"{deleted.name}: error: its run folder {deleted} was deleted while it ran\n" in out
    assert "2 succeeded, 1 failed" in out
    rerun = run_sweep("run", str(spec))
    assert rerun.returncode == 0 and "1 to run, 2 already succeeded" in rerun.stdout, rerun.stdout + rerun.stderr
    assert [json.loads((d / "result.json").read_text())["timesteps"] for d in run_dirs(sweep_dir)] == [4096] * 3
