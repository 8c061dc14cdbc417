"""Every launcher keeps the same contract with the scheduler (launchers/base.py), in the way Hydra tests
its launchers: one suite, run against each. Start and poll to an exit with a result and a peak memory,
interrupt with a checkpoint, kill, and an end nobody asked for (retried). Local runs a stub worker (fast),
by exec and forked from the template process; Ray and SLURM run the real worker on a real cluster (slow;
SLURM skips unless one is up)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers.commands import write_spec
from helpers.fake_sweep import make_run
from mjsweep.engine.failures import RETRYABLE, classify
from mjsweep.engine.sweep import prepare
from mjsweep.launchers.base import ExitKind, Launcher, RunExit, RunHandle
from mjsweep.launchers.local import LocalLauncher
from mjsweep.spec.sweepspec import SlurmSpec
from mjsweep.sweepdir.files import RunDir, SweepDir
from mjsweep.sweepdir.models import FailureClass, RunSpec

STUB = Path(__file__).parent / "helpers" / "stub_worker.py"
WAIT_S = 300.0  # generous: a bound on hanging, never on speed
SHORT, LONG = 5_000, 400_000  # timesteps: a run that ends by itself, one that must be stopped


@dataclass
class Backend:
    name: str
    launcher: Launcher
    vanish: Callable[[RunHandle], None]
    """Ends a run the way the world does, unasked: the OOM killer, a dead node, someone's scancel."""
    vanished: ExitKind | None
    """The exit that gives, where it is certain."""


def _local(start_with: str = "exec") -> Backend:
    launcher = LocalLauncher(command=lambda run_dir: [sys.executable, str(STUB), str(run_dir)], start_with=start_with)
    return Backend("local", launcher, lambda handle: os.kill(handle.pid, signal.SIGKILL), ExitKind.KILLED)


def _ray(request) -> Backend:
    import ray

    from mjsweep.launchers.ray import RayLauncher

    launcher = RayLauncher(request.getfixturevalue("cluster").address)
    return Backend("ray", launcher, lambda handle: ray.kill(handle.actor), ExitKind.LOST)


def _slurm(request) -> Backend:
    from mjsweep.launchers.slurm import SlurmLauncher

    request.getfixturevalue("slurm_cluster")
    launcher = SlurmLauncher(SlurmSpec(time="20:00", mem="1G"))
    return Backend("slurm", launcher, lambda handle: subprocess.run(["scancel", handle.task], check=True), None)


@pytest.fixture(params=["local", "local-template", pytest.param("ray", marks=[pytest.mark.slow, pytest.mark.ray]),
                        pytest.param("slurm", marks=[pytest.mark.slow, pytest.mark.slurm])])
def backend(request):
    made = {"local": _local, "local-template": lambda: _local("template"), "ray": lambda: _ray(request),
            "slurm": lambda: _slurm(request)}[request.param]()
    with made.launcher:
        yield made


def start(backend: Backend, tmp_path: Path, tiny_spec: dict, total: int) -> tuple[RunHandle, RunDir]:
    """One run of the tiny walker, its folder written as `sweep run` writes it, submitted and started."""
    tiny_spec.update(total_timesteps=total, checkpoint_every=512, runs_dir=str(tmp_path / "runs"))
    plan = prepare(write_spec(tmp_path, tiny_spec), check_envs=False)
    (run,) = plan.runs
    run_dir = make_run(plan.sweep_dir.path, run)
    backend.launcher.submit([run], plan.sweep_dir)
    return backend.launcher.start(run, run_dir), run_dir


def wait_end(handle: RunHandle, timeout: float = WAIT_S) -> RunExit:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (end := handle.poll()) is not None:
            return end
        time.sleep(0.05)
    handle.kill()
    raise AssertionError("the run did not end")


def wait_training(handle: RunHandle, run_dir: RunDir) -> None:
    """Until the worker's first output is in the launcher's run dir (shipped back, for Ray)."""
    deadline = time.monotonic() + WAIT_S
    while not run_dir.progress_csv.exists():
        assert handle.poll() is None, "the run ended before it trained"
        assert time.monotonic() < deadline, "the run never started training"
        time.sleep(0.05)


def succeeded(run_dir: RunDir) -> bool:
    return run_dir.has_complete_result()


def test_a_run_ends_with_its_exit_its_result_and_its_peak_memory(backend, tmp_path, tiny_spec):
    handle, run_dir = start(backend, tmp_path, tiny_spec, SHORT)
    assert isinstance(handle.host, str) and handle.host
    end = wait_end(handle)
    assert end == RunExit.exited(0)
    assert classify(end, stopped=False, timed_out=False, succeeded=succeeded(run_dir)) is None
    assert run_dir.log.read_text()  # the worker's output went to the run's log.txt
    assert handle.peak_rss_mb() >= 50  # the stub holds 64 MiB; a real worker holds more


def test_interrupt_stops_the_run_with_a_checkpoint(backend, tmp_path, tiny_spec):
    handle, run_dir = start(backend, tmp_path, tiny_spec, LONG)
    wait_training(handle, run_dir)
    handle.interrupt()
    end = wait_end(handle)
    assert end == RunExit.exited(130)
    assert run_dir.checkpoint_json.exists()
    assert "stopped by a signal" in run_dir.log.read_text()
    assert classify(end, stopped=True, timed_out=False, succeeded=succeeded(run_dir)) is FailureClass.INTERRUPTED


def test_kill_ends_the_run_without_a_result(backend, tmp_path, tiny_spec):
    handle, run_dir = start(backend, tmp_path, tiny_spec, LONG)
    wait_training(handle, run_dir)
    handle.kill()
    end = wait_end(handle, timeout=120)
    assert end.returncode != 0 and not succeeded(run_dir)
    if backend.name != "slurm":  # SLURM's cancel lets the worker see SIGTERM first
        assert end == RunExit.killed(signal.SIGKILL)


def test_an_end_nobody_asked_for_is_retried(backend, tmp_path, tiny_spec):
    handle, run_dir = start(backend, tmp_path, tiny_spec, LONG)
    wait_training(handle, run_dir)
    backend.vanish(handle)
    end = wait_end(handle)
    if backend.vanished is not None:
        assert end.kind is backend.vanished
    assert classify(end, stopped=False, timed_out=False, succeeded=succeeded(run_dir)) in RETRYABLE


class Minimal(Launcher):
    closed = False

    def start(self, run: RunSpec, run_dir: RunDir) -> RunHandle:
        raise OSError("never started here")

    def close(self) -> None:
        self.closed = True


def test_the_base_launcher_defaults_and_closes_on_exit(tmp_path):
    with Minimal() as launcher:
        assert launcher.slots(None, 8) == 8 and launcher.slots(3, 8) == 3
        assert launcher.can_start(None) is True
        assert launcher.submit([], SweepDir(tmp_path)) is None
    assert launcher.closed
