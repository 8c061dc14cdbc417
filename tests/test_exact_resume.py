"""Exact resume: a run stopped by Ctrl-C mid-episode and resumed with `sweep run` ends with the same
monitor.csv episodes, evaluations and final parameters as the same run never stopped; `sweep verify`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from helpers.commands import launcher_output, run_dirs, run_sweep, start_sweep, status_of, wait_for, write_spec
from helpers.exact_runs import (
    ALGOS,
    WAIT,
    assert_same_run,
    stopped_and_resumed,
    uninterrupted,
)
from helpers.models import ANYMAL_XML


def test_a_ppo_run_stopped_mid_episode_resumes_exactly(tmp_path, tiny_spec):
    tiny_spec.update({"total_timesteps": 2048, "max_episode_steps": 90, "checkpoint_every": 128, "normalize": True,
                      "eval": {"episodes": 2, "every": 512, "deterministic": False}})
    resumed = stopped_and_resumed(tmp_path / "stopped", tiny_spec)
    assert_same_run(uninterrupted(tmp_path / "whole", tiny_spec), resumed)


@pytest.mark.slow
@pytest.mark.skipif(not ANYMAL_XML.exists(), reason=f"needs ANYmal C at {ANYMAL_XML}")
def test_an_anymal_c_run_stopped_mid_episode_resumes_exactly_from_a_small_state(tmp_path, tiny_spec):
    """A real robot: its physics state mid-episode (contacts, the derived quantities its reward reads) put back
    from a file that holds no model (the compiled model's meshes alone are 252 MB)."""
    tiny_spec.update({"env": "mjsweep/Locomotion-v0", "variants": [{"name": "anymal", "xml": str(ANYMAL_XML)}],
                      "total_timesteps": 1024, "max_episode_steps": 90, "checkpoint_every": 128, "normalize": True,
                      "eval": {"episodes": 2, "every": 512, "deterministic": False}})
    resumed = stopped_and_resumed(tmp_path / "stopped", tiny_spec)
    checkpoint = json.loads((resumed / "checkpoints" / "checkpoint.json").read_text())
    assert (resumed / "checkpoints" / checkpoint["exact_file"]).stat().st_size < 1_000_000
    assert_same_run(uninterrupted(tmp_path / "whole", tiny_spec), resumed)




@pytest.mark.slow
@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_a_run_of_each_algorithm_stopped_mid_episode_resumes_exactly(tmp_path, tiny_spec, algo):
    tiny_spec.update({"algo": algo, "ppo": {}, algo: ALGOS[algo], "total_timesteps": 3000, "max_episode_steps": 90,
                      "checkpoint_every": 200, "normalize": True, "eval": {"episodes": 1, "every": 500}})
    resumed = stopped_and_resumed(tmp_path / "stopped", tiny_spec)
    assert_same_run(uninterrupted(tmp_path / "whole", tiny_spec), resumed)


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_a_run_exploring_with_gsde_resumes_exactly(tmp_path, tiny_spec, algo):
    hyperparams = {"ppo": {**tiny_spec["ppo"], "use_sde": True, "sde_sample_freq": 8},
                   "sac": {**ALGOS["sac"], "use_sde": True}}[algo]
    tiny_spec.update({"algo": algo, "ppo": {}, algo: hyperparams, "total_timesteps": 3000, "max_episode_steps": 90,
                      "checkpoint_every": 200, "normalize": True, "eval": {"episodes": 1, "every": 500}})
    resumed = stopped_and_resumed(tmp_path / "stopped", tiny_spec)
    assert_same_run(uninterrupted(tmp_path / "whole", tiny_spec), resumed)


@pytest.mark.slow
def test_a_run_of_envs_in_subprocesses_resumes_exactly(tmp_path, tiny_spec):
    tiny_spec.update({"algo": "sac", "ppo": {}, "sac": ALGOS["sac"], "vec_env": "subproc", "n_envs": 2,
                      "total_timesteps": 3000, "max_episode_steps": 90, "checkpoint_every": 200, "normalize": True,
                      "eval": {"episodes": 1, "every": 500}})
    resumed = stopped_and_resumed(tmp_path / "stopped", tiny_spec)
    assert_same_run(uninterrupted(tmp_path / "whole", tiny_spec), resumed)


@pytest.mark.slow
def test_a_run_killed_and_retried_from_an_iterations_end_checkpoint_resumes_exactly(tmp_path, tiny_spec):
    tiny_spec.update({"total_timesteps": 3072, "max_episode_steps": 90, "checkpoint_every": 128, "normalize": True,
                      "eval": {"episodes": 2, "every": 512, "deterministic": False}})
    spec = write_spec(tmp_path / "killed", tiny_spec)
    launcher = start_sweep(spec)
    sweep_dir = tmp_path / "killed" / "runs" / "tiny"
    [run_dir] = wait_for(lambda: [d for d in run_dirs(sweep_dir) if (d / "checkpoints" / "checkpoint.json").exists()
                                  and status_of(d).get("state") == "running"], what="a checkpoint", timeout=WAIT)
    os.kill(status_of(run_dir)["pid"], signal.SIGKILL)  # no stop's checkpoint: the retry resumes from a regular one
    assert launcher.wait(timeout=WAIT) == 0, launcher_output(spec)
    assert status_of(run_dir)["attempts"] == 2 and "resuming exactly" in (run_dir / "log.txt").read_text()
    assert_same_run(uninterrupted(tmp_path / "whole", tiny_spec), run_dir)


def folder_contents(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_sweep_verify_says_a_finished_run_reproduces_exactly_or_where_it_differs(tmp_path, tiny_spec):
    tiny_spec.update({"total_timesteps": 384, "eval": {"episodes": 1, "every": 256}})
    spec = write_spec(tmp_path, tiny_spec)
    done = run_sweep("run", str(spec))
    assert done.returncode == 0, done.stdout + done.stderr
    sweep_dir = tmp_path / "runs" / "tiny"
    [run_dir] = run_dirs(sweep_dir)
    before = folder_contents(sweep_dir)
    verified = run_sweep("verify", str(sweep_dir), "--sample", "3", "--scratch", str(tmp_path / "scratch"))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"{run_dir.name}: exact" in verified.stdout and "1 of 1 runs reproduced exactly" in verified.stdout
    assert folder_contents(sweep_dir) == before  # nothing written into the sweep folder

    # a run whose second episode the folder does not hold as trained: named, with both returns
    lines = (run_dir / "monitor.csv").read_text().splitlines(keepends=True)
    r, rest = lines[3].split(",", 1)
    lines[3] = f"{float(r) + 1:.6f},{rest}"
    (run_dir / "monitor.csv").write_text("".join(lines))
    verified = run_sweep("verify", str(sweep_dir), run_dir.name)
    assert verified.returncode == 1, verified.stdout + verified.stderr
    assert f"{run_dir.name}: differs: first at episode 2 (return {float(r) + 1:.6f} vs {r}" in verified.stdout
    assert "0 of 1 runs reproduced exactly" in verified.stdout


RETRAINING_STANDIN = """
import os, pathlib, signal, sys, time
def stop(*_):
    pathlib.Path("interrupted").write_text("1")
    sys.exit(130)
signal.signal(signal.SIGINT, stop)
pathlib.Path("pid.tmp").write_text(str(os.getpid()))
os.replace("pid.tmp", "pid")
time.sleep(600)
"""


def test_a_ctrl_c_during_sweep_verify_interrupts_the_retraining(tmp_path):
    """The retraining leads a session of its own, so the terminal's Ctrl-C reaches only `sweep verify`: it must
    pass the stop on rather than leave the retraining to the kernel's kill once it exits."""
    run = tmp_path / "sweep" / "r0"
    run.mkdir(parents=True)
    (run / "spec.json").write_text("{}")
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from mjsweep.engine import verify
        from mjsweep.sweepdir.files import RunDir
        verify.worker_command = lambda path: [sys.executable, "-c", {RETRAINING_STANDIN!r}]
        verify.verify([RunDir(Path({str(run)!r}))], Path({str(tmp_path / "scratch")!r}), print)
    """)
    launcher = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pid_file = tmp_path / "scratch" / "r0" / "pid"
    while not pid_file.is_file():
        assert launcher.poll() is None, launcher.communicate()
        time.sleep(0.02)
    retraining = psutil.Process(int(pid_file.read_text()))
    launcher.send_signal(signal.SIGINT)
    _, err = launcher.communicate()
    assert b"KeyboardInterrupt" in err
    assert (tmp_path / "scratch" / "r0" / "interrupted").is_file(), "the retraining was asked to stop"
    assert not retraining.is_running() or retraining.status() == psutil.STATUS_ZOMBIE
