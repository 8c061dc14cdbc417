"""The scheduler against a fake launcher (fake clock), and against real cheap subprocesses."""

from __future__ import annotations

import json
import os
import sys

import pytest

from helpers.fake_launcher import FakeClock, FakeHandle, FakeLauncher, Script, scheduler
from helpers.fake_sweep import numbered_run
from mjsweep.engine.scheduler import EventKind, Scheduler, SchedulerOptions
from mjsweep.errors import LaunchError
from mjsweep.launchers.base import OomFacts, RunExit
from mjsweep.launchers.local import LocalLauncher
from mjsweep.sweepdir.files import SweepDir
from mjsweep.sweepdir.models import FailureClass, RunState


class NewsLauncher(FakeLauncher):
    """Tells through a pipe that a run may have ended, as the local launcher's template socket does."""

    def __init__(self, clock: FakeClock, scripts: dict[str, Script] | None = None):
        super().__init__(clock, scripts)
        self.news_r, self.news_w = os.pipe()

    def start(self, run, run_dir):
        os.write(self.news_w, b"x")  # its runs end at their first poll: the news is there at once
        return super().start(run, run_dir)

    def news_fd(self):
        return self.news_r


@pytest.mark.parametrize("cap, runs", [(1, 5), (2, 7), (3, 3), (4, 10)])
def test_never_more_runs_than_the_cap(tmp_path, cap, runs):
    clock = FakeClock()
    launcher = FakeLauncher(clock, {f"r{i}": Script([(1.0 + i % 3, 0)]) for i in range(runs)})
    sched, _ = scheduler(tmp_path, launcher, clock, max_workers=cap)
    outcome = sched.run([numbered_run(i) for i in range(runs)])
    assert launcher.max_cpus_in_use == min(cap, runs)
    assert sorted(outcome.succeeded) == sorted(f"r{i}" for i in range(runs))
    assert outcome.exit_code == 0


def test_runs_take_their_cpu_slots(tmp_path):
    clock = FakeClock()
    launcher = FakeLauncher(clock)
    sched, _ = scheduler(tmp_path, launcher, clock, max_workers=4)
    sched.run([numbered_run(0, cpus=3), numbered_run(1, cpus=2), numbered_run(2, cpus=1), numbered_run(3, cpus=6)])
    assert launcher.together == [{"r0"}, {"r1"}, {"r1", "r2"}, {"r3"}]  # r1 (2) could not join r0 (3) under 4
    assert launcher.max_cpus_in_use == 6  # the 6-cpu run, wider than the cap, ran alone


def test_the_scheduler_waits_on_the_launchers_news_not_its_whole_poll_interval(tmp_path):
    clock = FakeClock()
    launcher = NewsLauncher(clock, {f"r{i}": Script([(0.0, 0)]) for i in range(3)})
    sched, _ = scheduler(tmp_path, launcher, clock, max_workers=1)
    outcome = sched.run([numbered_run(i) for i in range(3)])
    assert outcome.succeeded == ["r0", "r1", "r2"]
    assert clock.now == 0.0  # it never slept: each wait for the next start ended on the launcher's news
    os.close(launcher.news_r)
    os.close(launcher.news_w)


def test_a_failure_does_not_stop_the_others_and_is_recorded(tmp_path):
    clock = FakeClock()
    launcher = FakeLauncher(clock, {"r1": Script([(0.5, 1)])})
    sched, events = scheduler(tmp_path, launcher, clock)
    outcome = sched.run([numbered_run(i) for i in range(4)])
    assert outcome.failed == ["r1"] and len(outcome.succeeded) == 3 and outcome.exit_code == 1
    status = SweepDir(tmp_path).run("r1").read_status()
    assert status.state is RunState.FAILED and status.failure is FailureClass.ERROR
    assert status.returncode == 1 and "ValueError: boom" in status.error_tail
    assert launcher.started.count("r1") == 1  # a deterministic error is not retried
    assert any(e.kind is EventKind.FAILED and "ValueError: boom" in e.message for e in events)


def test_killed_runs_are_retried_within_the_budget(tmp_path):
    clock = FakeClock()
    launcher = FakeLauncher(clock, {"r0": Script([(0.5, -9), (0.5, 0)]),
                                    "r1": Script([(0.5, -9), (0.5, -9), (0.5, 0)])})
    sched, _ = scheduler(tmp_path, launcher, clock, retries=1)
    outcome = sched.run([numbered_run(0), numbered_run(1)])
    assert outcome.succeeded == ["r0"] and outcome.failed == ["r1"]
    assert launcher.started.count("r0") == 2 and launcher.started.count("r1") == 2
    status = SweepDir(tmp_path).run("r1").read_status()
    assert status.failure is FailureClass.KILLED and status.attempts == 2 and status.returncode == -9


def test_timeout_interrupts_then_kills_and_is_classed(tmp_path):
    clock = FakeClock()
    launcher = FakeLauncher(clock, {"r0": Script([(100.0, 0)])})
    sched, _ = scheduler(tmp_path, launcher, clock, timeout_s=5.0, retries=0)
    outcome = sched.run([numbered_run(0)])
    status = SweepDir(tmp_path).run("r0").read_status()
    assert outcome.failed == ["r0"]
    assert status.state is RunState.FAILED and status.failure is FailureClass.TIMEOUT
    assert 5.0 <= clock.now < 100.0


def test_stop_request_interrupts_running_runs_and_leaves_the_rest(tmp_path):
    clock = FakeClock()
    launcher = FakeLauncher(clock, {f"r{i}": Script([(50.0, 0)]) for i in range(4)})
    sched, _ = scheduler(tmp_path, launcher, clock)
    original_sleep = clock.sleep

    def sleep_then_stop(seconds):
        original_sleep(seconds)
        if clock.now >= 3.0 and not sched._stop_requests:
            sched.request_stop()

    sched.sleep = sleep_then_stop
    outcome = sched.run([numbered_run(i) for i in range(4)])
    assert outcome.exit_code == 130
    # The stop ended the two that ran; the two that never started are pending, not interrupted.
    assert sorted(outcome.interrupted) == ["r0", "r1"] and sorted(outcome.pending) == ["r2", "r3"]
    assert launcher.started == ["r0", "r1"]
    for run_id in ("r0", "r1"):
        status = SweepDir(tmp_path).run(run_id).read_status()
        assert status.state is RunState.INTERRUPTED and status.failure is FailureClass.INTERRUPTED


SLEEPER = """
import os, sys, time
log = sys.argv[1]
def note(what):
    with open(log, "a") as fh:
        fh.write(f"{what} {time.monotonic()} {os.environ['OMP_NUM_THREADS']}\\n")
note("start"); time.sleep(0.4); note("end")
open(os.path.join(os.getcwd(), "result.json"), "w").write('{"eval_mean_return": 0}')
"""


def test_real_processes_respect_the_cap_and_get_thread_caps(tmp_path):
    log = tmp_path / "intervals.txt"
    launcher = LocalLauncher(command=lambda run_dir: [sys.executable, "-c", SLEEPER, str(log)])
    runs = [numbered_run(i) for i in range(6)]
    sweep = SweepDir(tmp_path / "sweep")
    for run in runs:
        sweep.run(run.run_id).path.mkdir(parents=True)
    options = SchedulerOptions(max_workers=2, poll_s=0.05)
    outcome = Scheduler(launcher, sweep, options).run(runs)
    assert outcome.exit_code == 0 and len(outcome.succeeded) == 6
    events = []
    for line in log.read_text().splitlines():
        kind, when, threads = line.split()
        assert threads == "1"
        events.append((float(when), 1 if kind == "start" else -1))
    assert len(events) == 12
    running = peak = 0
    for _, delta in sorted(events):
        running += delta
        peak = max(peak, running)
    assert peak == 2  # ran in parallel, never more than the cap
    for run in runs:
        status = sweep.run(run.run_id).read_status()
        assert status.state is RunState.SUCCEEDED and status.returncode == 0
        assert json.loads(sweep.run(run.run_id).status_json.read_text())["pid"] > 0


def test_each_run_leads_its_own_process_group(tmp_path):
    script = "import os; open('pg.txt', 'w').write(f'{os.getpid()} {os.getpgid(0)} {os.getsid(0)}')"
    launcher = LocalLauncher(command=lambda run_dir: [sys.executable, "-c", script])
    sweep = SweepDir(tmp_path)
    sweep.run("r0").path.mkdir()
    handle = launcher.start(numbered_run(0), sweep.run("r0"))
    assert handle.wait(timeout=60) == 0
    pid, pgid, sid = map(int, (sweep.run("r0").path / "pg.txt").read_text().split())
    assert pid == pgid == sid == handle.pid
    assert os.getpgid(0) != pgid


def test_memory_guard_holds_runs_back_until_memory_frees(tmp_path):
    clock = FakeClock()
    launcher = FakeLauncher(clock, {f"r{i}": Script([(2.0, 0)]) for i in range(3)})
    sched, events = scheduler(tmp_path, launcher, clock, max_workers=3, memory_guard=True)
    sched.available_mb = lambda: 700.0  # room for one run of the default 600 MiB estimate, not two
    outcome = sched.run([numbered_run(i) for i in range(3)])
    assert outcome.exit_code == 0
    # r1 waited for r0; once r0 was measured at 100 MiB, r2 could join r1.
    assert launcher.together == [{"r0"}, {"r1"}, {"r1", "r2"}]
    assert [e.kind for e in events].count(EventKind.WAITING_MEMORY) >= 1
    assert all(SweepDir(tmp_path).run(f"r{i}").read_status().peak_rss_mb == 100.0 for i in range(3))


def test_a_run_that_cannot_start_fails_alone(tmp_path):
    clock = FakeClock()
    launcher = FakeLauncher(clock)
    original = launcher.start

    def start(run, run_dir):
        if run.run_id == "r1":
            raise OSError(28, "No space left on device")
        return original(run, run_dir)

    launcher.start = start
    SweepDir(tmp_path).run("r1").path.mkdir()
    sched, _ = scheduler(tmp_path, launcher, clock)
    outcome = sched.run([numbered_run(i) for i in range(3)])
    assert outcome.failed == ["r1"] and sorted(outcome.succeeded) == ["r0", "r2"]
    status = SweepDir(tmp_path).run("r1").read_status()
    assert status.state is RunState.FAILED and "No space left on device" in status.error_tail


def test_second_stop_request_kills_at_once(tmp_path):
    clock = FakeClock()
    launcher = FakeLauncher(clock, {"r0": Script([(50.0, 0)])})
    sched, _ = scheduler(tmp_path, launcher, clock, grace_s=30.0)
    handles = []
    original_start = launcher.start
    launcher.start = lambda run, run_dir: handles.append(original_start(run, run_dir)) or handles[-1]
    original_interrupt = FakeHandle.interrupt

    def ignore_interrupt(self):  # a worker stuck in C code does not react to SIGINT
        self.signals.append("INT")

    FakeHandle.interrupt = ignore_interrupt
    try:
        def sleep(seconds):
            clock.sleep(seconds)
            if clock.now >= 2.0 and sched._stop_requests < 2:
                sched.request_stop()

        sched.sleep = sleep
        outcome = sched.run([numbered_run(0)])
    finally:
        FakeHandle.interrupt = original_interrupt
    assert handles[0].signals[:2] == ["INT", "KILL"]
    assert clock.now < 30.0  # did not wait out the grace period
    assert outcome.interrupted == ["r0"]


class PlacedLaterLauncher(FakeLauncher):
    """Like a cluster: a run's node is known only some polls after it started."""

    def start(self, run, run_dir):
        handle = super().start(run, run_dir)
        handle.host = "waiting for a node"
        placed_at = self.clock() + 1.0
        poll = handle.poll

        def poll_and_place():
            if self.clock() >= placed_at:
                handle.host = "node-7"
            return poll()
        handle.poll = poll_and_place
        return handle


def test_a_run_placed_after_it_started_shows_its_node(tmp_path):
    clock = FakeClock()
    launcher = PlacedLaterLauncher(clock, {"r0": Script([(3.0, 0)])})
    sched, _ = scheduler(tmp_path, launcher, clock)
    seen = []
    record = sched.recorder.record

    def spy(run_dir, status):
        seen.append((status.state, status.host))
        record(run_dir, status)
    sched.recorder.record = spy
    sched.run([numbered_run(0)])
    assert seen[0] == (RunState.RUNNING, "waiting for a node")
    assert (RunState.RUNNING, "node-7") in seen
    assert SweepDir(tmp_path).run("r0").read_status().host == "node-7"  # kept in the final status


def test_a_launch_error_fails_that_run_and_the_others_go_on(tmp_path):
    clock = FakeClock()
    launcher = FakeLauncher(clock)
    original = launcher.start

    def start(run, run_dir):
        if run.run_id == "r0":
            raise LaunchError("sbatch refused the array (a.sh): slurmctld down")
        return original(run, run_dir)

    launcher.start = start
    SweepDir(tmp_path).run("r0").path.mkdir()
    sched, events = scheduler(tmp_path, launcher, clock)
    outcome = sched.run([numbered_run(i) for i in range(3)])
    assert outcome.failed == ["r0"] and sorted(outcome.succeeded) == ["r1", "r2"] and outcome.exit_code == 1
    status = SweepDir(tmp_path).run("r0").read_status()
    assert status.failure is FailureClass.ERROR and "slurmctld down" in status.error_tail


class OnDemand:
    """A RunSource: n runs made one at a time, only when asked; prunes `prune` once `after` of them ended."""

    def __init__(self, n: int, prune: str | None = None, after: int = 1):
        self.n, self.made, self.ends = n, 0, {}
        self.prune, self.after, self.pruned = prune, after, False

    def next_run(self):
        if self.made == self.n:
            return None
        self.made += 1
        return numbered_run(self.made - 1)

    def exhausted(self):
        return self.made == self.n

    def ended(self, run_id, state):
        self.ends[run_id] = state

    def to_prune(self):
        if self.prune and not self.pruned and len(self.ends) >= self.after:
            self.pruned = True
            return [self.prune]
        return []


def test_a_run_source_is_asked_only_when_a_slot_is_free(tmp_path):
    clock = FakeClock()
    launcher = FakeLauncher(clock, {f"r{i}": Script([(1.0 + i, 0)]) for i in range(5)})
    sched, _ = scheduler(tmp_path, launcher, clock, max_workers=2)
    source = OnDemand(5)
    outcome = sched.run([], source=source)
    assert launcher.max_cpus_in_use == 2 and launcher.started == [f"r{i}" for i in range(5)]
    assert sorted(outcome.succeeded) == [f"r{i}" for i in range(5)]
    assert source.ends == {f"r{i}": RunState.SUCCEEDED for i in range(5)}
    assert launcher.together[:3] == [{"r0"}, {"r0", "r1"}, {"r1", "r2"}]  # r2 made once r0 had ended


def test_a_stop_while_a_source_has_runs_to_make_exits_130_though_every_started_run_succeeded(tmp_path):
    """A stop between a search's or a population's runs interrupts nothing, yet the sweep is not done: a script
    must not read it as finished."""
    clock = FakeClock()
    launcher = FakeLauncher(clock, {f"r{i}": Script([(1.0, 0)]) for i in range(5)})
    sched, _ = scheduler(tmp_path, launcher, clock, max_workers=1)
    source = OnDemand(5)
    ended = source.ended

    def stop_once_one_ended(run_id, state):
        ended(run_id, state)
        sched.request_stop()  # as a Ctrl-C between two runs

    source.ended = stop_once_one_ended
    outcome = sched.run([], source=source)
    assert outcome.succeeded == ["r0"] and outcome.interrupted == [] and launcher.started == ["r0"]
    assert outcome.cut_short and outcome.exit_code == 130
    whole, _ = scheduler(tmp_path / "whole", FakeLauncher(clock, {f"r{i}": Script([(1.0, 0)]) for i in range(2)}),
                         clock)
    done = whole.run([], source=OnDemand(2))
    assert sorted(done.succeeded) == ["r0", "r1"] and not done.cut_short and done.exit_code == 0


def test_a_pruned_run_is_interrupted_and_recorded_pruned_never_retried(tmp_path):
    clock = FakeClock()
    launcher = FakeLauncher(clock, {"r0": Script([(1.0, 0)]), "r1": Script([(50.0, 0)])})
    sched, events = scheduler(tmp_path, launcher, clock, max_workers=2, retries=3)
    source = OnDemand(2, prune="r1", after=1)
    outcome = sched.run([], source=source)
    assert outcome.pruned == ["r1"] and outcome.succeeded == ["r0"] and outcome.exit_code == 0
    assert launcher.started == ["r0", "r1"]  # not retried
    assert source.ends["r1"] is RunState.PRUNED
    status = json.loads((tmp_path / "r1" / "status.json").read_text())
    assert status["state"] == "pruned" and status["returncode"] == 130
    assert [e.kind for e in events if e.run_id == "r1"][-1] is EventKind.PRUNED


class OomLauncher(FakeLauncher):
    """Ends the given runs' first attempts as the OOM killer does (-9, killed for memory), the memory
    `shared` with the other runs or a limit of their own (a SLURM task's --mem)."""

    def __init__(self, clock, scripts, oom: set[str], shared: bool = True):
        super().__init__(clock, scripts)
        self.oom, self.shared = oom, shared

    def start(self, run, run_dir):
        handle = super().start(run, run_dir)
        if run.run_id in self.oom and self.started.count(run.run_id) == 1:
            poll = handle.poll
            facts = OomFacts("the kernel's OOM killer", limit_mb=1000.0, shared=self.shared)
            handle.poll = lambda: None if poll() is None else RunExit.out_of_memory(facts)
        return handle


def test_a_run_killed_for_its_memory_is_retried_with_fewer_runs_at_once(tmp_path):
    clock = FakeClock()
    scripts = {f"r{i}": Script([(1.0 + i, 0), (1.0, 0)]) for i in range(5)}
    launcher = OomLauncher(clock, scripts, oom={"r0"})
    sched, events = scheduler(tmp_path, launcher, clock, max_workers=3)
    outcome = sched.run([numbered_run(i) for i in range(5)])
    assert outcome.exit_code == 0 and launcher.started.count("r0") == 2
    assert [len(t) for t in launcher.together][:3] == [1, 2, 3]
    assert max(len(t) for t in launcher.together[3:]) == 2  # after the kill: fewer at once than then
    said = [e.message for e in events if e.kind is EventKind.WARNING]
    assert said == ["a run was killed for its memory with 3 runs at once: at most 2 at once from now on"]
    [retry] = [e.message for e in events if e.kind is EventKind.RETRYING]
    assert retry.startswith("out-of-memory: killed by the kernel's OOM killer: its peak RSS 100 MiB, limit 1,000 MiB; "
                            "3 runs were running at once; it would fit with fewer --workers (about 10 fit")


@pytest.mark.parametrize("shared", [True, False])
def test_a_run_killed_for_its_memory_alone_or_over_its_own_limit_is_not_retried(tmp_path, shared):
    clock = FakeClock()
    launcher = OomLauncher(clock, {"r0": Script([(1.0, 0)]), "r1": Script([(2.0, 0)])}, oom={"r0"}, shared=shared)
    sched, events = scheduler(tmp_path, launcher, clock, max_workers=2 if not shared else 1)
    outcome = sched.run([numbered_run(i) for i in range(2)])
    assert outcome.failed == ["r0"] and launcher.started.count("r0") == 1
    status = SweepDir(tmp_path).run("r0").read_status()
    assert status.failure is FailureClass.OUT_OF_MEMORY
    assert status.cause.endswith("it ran alone; it would fit with more memory for the sweep" if shared
                                 else "2 runs were running at once; it would fit with a larger slurm.mem")


def test_what_a_run_was_for_decides_whether_exit_0_succeeded(tmp_path):
    """A launcher's runs that are not trainings (cross-evaluation) say themselves what a finished run leaves."""
    clock = FakeClock()
    launcher = FakeLauncher(clock, {"r0": Script([(1.0, 0)]), "r1": Script([(1.0, 0)])})
    sched = Scheduler(launcher, SweepDir(tmp_path), SchedulerOptions(max_workers=2, memory_guard=False, poll_s=0.5),
                      clock=clock, sleep=clock.sleep, completed=lambda run_dir: run_dir.run_id == "r0")
    outcome = sched.run([numbered_run(0), numbered_run(1)])
    assert outcome.succeeded == ["r0"] and outcome.failed == ["r1"]
    assert SweepDir(tmp_path).run("r1").read_status().failure is FailureClass.ERROR
