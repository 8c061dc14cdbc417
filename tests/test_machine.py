"""The load warning judged from the present: fake clocks and fake readings, plus one real reading."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers.fake_sweep import make_run, run_spec
from mjsweep.engine.machine import (
    Competition,
    Competitor,
    CpuReading,
    MachineLoad,
    PresentLoad,
    competition,
    cpu_reading,
)
from mjsweep.sweepdir.files import SweepDir
from mjsweep.sweepdir.lock import sweep_lock
from mjsweep.sweepdir.models import RunState
from mjsweep.ui import live
from mjsweep.ui.status import load_warnings, read_sweep


def reading(at: float, busy_s: float, own_s: float, **others: tuple[int, float]) -> CpuReading:
    """others: name=(pid, CPU seconds)."""
    return CpuReading(at, busy_s, own_s, {pid: (name, cpu) for name, (pid, cpu) in others.items()})


def test_others_take_the_busy_time_the_sweep_did_not_use():
    before = reading(100.0, busy_s=1000.0, own_s=500.0, stress=(42, 10.0), sshd=(7, 3.0))
    after = reading(110.0, busy_s=1030.0, own_s=519.0, stress=(42, 19.0), sshd=(7, 3.2), gcc=(99, 1.5))
    c = competition(before, after)
    assert c.cores == (30.0 - 19.0) / 10.0
    assert c.named == (Competitor("stress", 42, 0.9), Competitor("gcc", 99, 0.15))  # sshd: 0.02, not named


def test_a_sweep_process_that_vanished_never_makes_others_look_busier():
    before = reading(0.0, busy_s=100.0, own_s=80.0)
    after = reading(5.0, busy_s=110.0, own_s=70.0)  # a worker's CPU gone from the count before it was reaped
    assert competition(before, after).cores == 2.0  # at most the busy time itself, never more
    assert competition(after, after) is None  # no time passed


def test_a_lagging_load_with_nothing_competing_now_is_no_warning():
    """Right after heavy work ended: the 1-minute load is still 3.5, but others take 0.1 of the 2 cores."""
    quiet = Competition(0.1, ())
    assert load_warnings(3.5, 2, running=2, competition=quiet) == []
    assert load_warnings(3.5, 2, running=1, competition=Competition(1.4)) == []  # 1 core left free for them


def test_competition_now_is_a_warning_that_names_the_competitors():
    busy = Competition(1.4, (Competitor("stress-ng", 4242, 0.9), Competitor("python3", 77, 0.5)))
    [warning] = load_warnings(3.5, 2, running=2, competition=busy)
    assert (warning.subject, warning.kind) == ("machine", "load")
    assert str(warning) == ("machine: load 3.5 (1-minute average) is above its 2 usable cores and other processes "
                            "take 1.4 of them now: stress-ng (pid 4242) 0.9, python3 (pid 77) 0.5")
    assert load_warnings(5.5, 2, running=4, competition=Competition(0.8)) != []  # more runs than cores: no spare
    assert load_warnings(3.9, 2, running=4, competition=Competition(0.8)) == []  # the sweep's own 4 runs


class FakeMachine:
    """A load average and CPU counters that the test moves, on a fake clock."""

    def __init__(self):
        self.now, self.load1, self.busy_s, self.own_s, self.readings = 0.0, 0.5, 0.0, 0.0, 0

    def read_cpu(self) -> CpuReading:
        self.readings += 1
        return reading(self.now, self.busy_s, self.own_s)

    def advance(self, seconds: float, own_cores: float, other_cores: float) -> None:
        self.now += seconds
        self.own_s += own_cores * seconds
        self.busy_s += (own_cores + other_cores) * seconds

    def present(self, window_s: float = 5.0) -> PresentLoad:
        return PresentLoad(cores=2, read_load=lambda: self.load1, read_cpu=self.read_cpu, clock=lambda: self.now,
                           window_s=window_s)


def test_the_present_is_read_only_while_the_load_is_high_and_once_per_window():
    machine = FakeMachine()
    present = machine.present()
    assert present.sample(running=2) == MachineLoad(0.5, 2, None) and machine.readings == 0  # quiet: free
    machine.load1 = 3.5
    assert present.sample(running=2) is None and machine.readings == 1  # one reading: no judgement yet
    machine.advance(1.0, own_cores=2.0, other_cores=0.05)
    assert present.sample(running=2) is None and machine.readings == 1  # within the window
    machine.advance(4.0, own_cores=2.0, other_cores=0.05)
    judged = present.sample(running=2)
    assert machine.readings == 2 and judged.load1 == 3.5 and abs(judged.competition.cores - 0.05) < 1e-9
    machine.load1 = 1.9
    assert present.sample(running=2).competition is None  # low again: the next high load starts afresh
    machine.load1 = 3.0
    assert present.sample(running=2) is None


def test_without_proc_stat_the_load_alone_decides():
    present = PresentLoad(cores=2, read_load=lambda: 3.5, read_cpu=lambda: None, clock=lambda: 0.0)
    assert present.sample(running=2) == MachineLoad(3.5, 2, None)


def test_the_live_view_warns_only_about_competition_that_lasts_into_the_present(tmp_path):
    """The new sweep of the issue, after heavy work ended, then a real competitor starting."""
    machine = FakeMachine()
    machine.load1 = 3.5
    tracker = live.Tracker(SweepDir(tmp_path), clock=lambda: machine.now, present=machine.present())
    runs = [live.RunView(run_id=f"run{i}", variant="v", grid={}, seed=i, state="running",
                         timesteps=50, total_timesteps=100, fps=10.0)
            for i in range(2)]
    tracker.states = {r.run_id: "running" for r in runs}
    for _ in range(8):  # 8 s of the two runs alone on the 2 cores
        tracker.refresh(force=True)
        assert tracker.warnings(runs) == []
        machine.advance(1.0, own_cores=1.95, other_cores=0.05)
    for _ in range(10):  # then something takes a core: seen within two 5-second windows
        machine.advance(1.0, own_cores=1.0, other_cores=1.0)
        tracker.refresh(force=True)
    assert [(w.subject, w.kind) for w in tracker.warnings(runs)] == [("machine", "load")]


def test_status_judges_the_load_with_what_others_take_now(tmp_path):
    make_run(tmp_path, run_spec("v", 0), RunState.RUNNING, pid=os.getpid())
    with sweep_lock(SweepDir(tmp_path)):
        assert not read_sweep(tmp_path, load1=3.5, cores=2, competition=Competition(0.1)).warnings
        assert read_sweep(tmp_path, load1=3.5, cores=2, competition=Competition(1.8)).warnings  # 1 core left free
        assert read_sweep(tmp_path).path == tmp_path  # measured here, whatever this machine's load


def test_a_real_reading_counts_the_sweep_tree_as_its_own():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        mine = cpu_reading([])  # this process and its children are always the sweep's
        assert mine is not None and mine.busy_s > 0 and mine.own_s > 0
        assert os.getpid() not in mine.others and child.pid not in mine.others
    finally:
        child.kill()
        child.wait()
