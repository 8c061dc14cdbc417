"""Memory admission: the estimate of one more run's need, when a run may start, and what a run's memory is:
its unique pages (USS), not the ones a forked run shares with the template."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil

from helpers.commands import write_spec
from helpers.fake_sweep import numbered_run
from mjsweep.engine.memory import (
    DEFAULT_RUN_MEMORY_MB,
    OFF_POLICY_RUN_MEMORY_MB,
    MeasuredPeaks,
    memory_admits,
    run_memory_mb,
)
from mjsweep.engine.scheduler import Event, EventKind, Scheduler, SchedulerOptions
from mjsweep.engine.sweep import prepare, write_run_dir
from mjsweep.launchers import treememory
from mjsweep.launchers.base import RunExit
from mjsweep.launchers.local import LocalHandle, LocalLauncher
from mjsweep.sweepdir.files import SweepDir


def test_a_run_needs_the_largest_peak_seen_with_a_quarter_more():
    assert run_memory_mb({}) == DEFAULT_RUN_MEMORY_MB * 1.25 == 750.0
    assert run_memory_mb({"ppo": [100.0, 400.0, 200.0]}) == 500.0
    assert run_memory_mb({"ppo": [100.0]}) == 125.0  # measured runs replace the default, even when smaller


def test_each_algorithm_learns_its_own_peak_and_an_unmeasured_one_takes_the_larger_guess():
    peaks = {"ppo": [300.0, 320.0], "sac": [2000.0]}
    assert run_memory_mb(peaks, "ppo") == 400.0  # SAC's replay buffer does not hold PPO runs back
    assert run_memory_mb(peaks, "sac") == 2500.0
    # TD3 not measured yet: its default, or any algorithm's larger peak (SAC's buffer is TD3's size too)
    assert run_memory_mb(peaks, "td3") == 2500.0
    assert run_memory_mb({"ppo": [300.0]}, "td3") == OFF_POLICY_RUN_MEMORY_MB * 1.25
    assert run_memory_mb({"sac": [2000.0]}, "a2c") == 2500.0  # unmeasured: never below what was seen


def test_a_run_starts_when_memory_suffices_or_nothing_runs():
    assert memory_admits(available_mb=750.0, needed_mb=750.0, running=3)
    assert not memory_admits(available_mb=749.0, needed_mb=750.0, running=1)
    assert memory_admits(available_mb=10.0, needed_mb=750.0, running=0)  # waiting would never end


def test_each_algorithm_is_admitted_by_its_uss_where_measured_else_by_its_rss():
    peaks = MeasuredPeaks()
    peaks.add("ppo", uss_mb=None, rss_mb=300.0)  # a status.json from before USS was measured
    peaks.add("ppo", uss_mb=40.0, rss_mb=310.0)  # a run forked from the template
    peaks.add("sac", uss_mb=None, rss_mb=900.0)  # a SLURM run: its worker's RSS only
    peaks.add("td3", uss_mb=None, rss_mb=None)  # nothing measured
    assert peaks.for_admission() == {"ppo": [40.0], "sac": [900.0]}  # RSS's shared pages would outweigh USS


# -- real runs forked from the real template -----------------------------------------------------------

WAIT_S = 300.0  # a bound on hanging, never on speed


def wait_end(handle: LocalHandle) -> RunExit:
    deadline = time.monotonic() + WAIT_S
    while (end := handle.poll()) is None:
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.02)
    return end


def tiny_runs(tmp_path: Path, tiny_spec: dict, seeds: int) -> tuple[SweepDir, list]:
    """`seeds` real trainings of the tiny walker, their run folders written as `sweep run` writes them."""
    tiny_spec.update(seeds=seeds, runs_dir=str(tmp_path / "runs"))
    plan = prepare(write_spec(tmp_path, tiny_spec), check_envs=False)
    for run in plan.runs:
        write_run_dir(plan.sweep_dir.run(run.run_id), run, None)
    return plan.sweep_dir, sorted(plan.runs, key=lambda run: run.seed)


def test_a_run_forked_from_the_template_holds_a_small_part_of_its_rss_as_its_own(tmp_path, tiny_spec):
    sweep, runs = tiny_runs(tmp_path, tiny_spec, seeds=1)
    peaks = {}
    for start_with in ("exec", "template"):
        with LocalLauncher(start_with=start_with) as launcher:
            run_dir = sweep.run(runs[0].run_id)
            handle = launcher.start(runs[0], run_dir)
            assert wait_end(handle) == RunExit.exited(0), run_dir.log.read_text()
            assert run_dir.read_result().started_by == start_with
            peaks[start_with] = (handle.peak_uss_mb(), handle.peak_rss_mb())
    (exec_uss, exec_rss), (fork_uss, fork_rss) = peaks["exec"], peaks["template"]
    # The forked run maps torch, SB3 and MuJoCo as the exec'd one does (RSS alike), but holds few of those
    # pages alone: the template's are shared until written to.
    assert fork_rss > 0.7 * exec_rss and fork_uss < fork_rss / 4
    assert exec_uss < exec_rss and fork_uss < exec_uss / 3


def test_runs_forked_from_the_template_are_admitted_together_where_their_uss_fits(tmp_path, tiny_spec):
    n = 2
    sweep, runs = tiny_runs(tmp_path, tiny_spec, seeds=1 + 2 * n)
    with LocalLauncher(start_with="template") as launcher:
        def run(batch: list, available_mb: float) -> list[tuple[EventKind, str | None]]:
            events: list[Event] = []
            outcome = Scheduler(launcher, sweep, SchedulerOptions(max_workers=n, retries=0),
                                on_event=events.append, available_mb=lambda: available_mb).run(batch)
            assert sorted(outcome.succeeded) == sorted(r.run_id for r in batch)
            return [(e.kind, e.run_id) for e in events]

        run(runs[:1], available_mb=0.0)  # alone: it starts whatever memory says, and is measured
        measured = sweep.run(runs[0].run_id).read_status()
        assert measured.peak_uss_mb < measured.peak_rss_mb / 4
        uss_need = run_memory_mb({"ppo": [measured.peak_uss_mb]})
        rss_need = run_memory_mb({"ppo": [measured.peak_rss_mb]})
        available_mb = n * uss_need  # room for N runs by their USS, not for 2 by their RSS
        assert available_mb < rss_need and not memory_admits(available_mb, rss_need, running=1)

        together = run(runs[1:1 + n], available_mb)
        started = [run_id for kind, run_id in together if kind is EventKind.STARTED]
        first_end = next(i for i, (kind, _) in enumerate(together) if kind is EventKind.SUCCEEDED)
        assert len(started) == n and all(together.index((EventKind.STARTED, r)) < first_end for r in started)
        assert EventKind.WAITING_MEMORY not in [kind for kind, _ in together]

        # The same folder as an earlier version wrote it, RSS only: the same memory admits one run at a time.
        for run_dir in sweep.run_dirs():
            if status := run_dir.read_status():
                run_dir.write_status(status.model_copy(update={"peak_uss_mb": None}))
        alone = run(runs[1 + n:], available_mb)
        assert [kind for kind, _ in alone][:3] == [EventKind.STARTED, EventKind.WAITING_MEMORY, EventKind.SUCCEEDED]
    for run in runs:
        assert sweep.run(run.run_id).read_result().started_by == "template"


def test_a_memory_spike_between_two_uss_readings_still_counts(monkeypatch):
    monkeypatch.setattr(treememory, "USS_FIRST_S", 3600.0)  # one reading at the first poll, none after
    monkeypatch.setattr(treememory, "USS_EVERY_S", 3600.0)
    readings = []
    real_full_info = psutil.Process.memory_full_info
    monkeypatch.setattr(psutil.Process, "memory_full_info", lambda self: readings.append(1) or real_full_info(self))
    spike = ("import sys\nsys.stdin.readline()\nheld = bytearray(200 * 2**20)\nprint('held', flush=True)\n"
             "sys.stdin.readline()\ndel held\nprint('freed', flush=True)\nsys.stdin.readline()\n")
    proc = subprocess.Popen([sys.executable, "-c", spike], start_new_session=True, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    handle = LocalHandle(proc)
    try:
        assert handle.poll() is None
        before = handle.peak_uss_mb()
        for step in ("held", "freed"):
            proc.stdin.write("\n")
            proc.stdin.flush()
            assert proc.stdout.readline() == step + "\n"
            assert handle.poll() is None
        assert handle.peak_uss_mb() >= before + 190  # the 200 MiB private spike, seen only by RSS
        assert len(readings) == 1  # USS was read at the first poll only
    finally:
        handle.kill()
        proc.wait(timeout=30)
        proc.stdin.close()
        proc.stdout.close()


def test_where_uss_cannot_be_read_the_launcher_says_so_once_and_runs_count_their_rss(tmp_path, monkeypatch, capsys):
    def refused(self):
        raise psutil.AccessDenied(self.pid)

    monkeypatch.setattr(psutil.Process, "memory_full_info", refused)
    sweep = SweepDir(tmp_path)
    with LocalLauncher(command=lambda p: [sys.executable, "-c", "held = bytearray(64 * 2**20)"]) as launcher:
        for i in range(2):
            run_dir = sweep.run(f"r{i}")
            run_dir.path.mkdir()
            handle = launcher.start(numbered_run(i), run_dir)
            assert wait_end(handle) == RunExit.exited(0)
            assert handle.peak_uss_mb() is None
    said = [line for line in capsys.readouterr().err.splitlines() if "unique memory" in line]
    assert len(said) == 1 and "memory admission counts their RSS" in said[0]
