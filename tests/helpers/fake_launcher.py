"""A launcher and a clock for the scheduler's decisions: runs end when a script says, on time that only
the scheduler's sleeps move."""

from __future__ import annotations

from dataclasses import dataclass, field

from mjsweep.engine.scheduler import Scheduler, SchedulerOptions
from mjsweep.launchers.base import Launcher, RunExit
from mjsweep.sweepdir.files import SweepDir, write_json_atomic


class FakeClock:
    """Time that passes only when the scheduler sleeps."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Script:
    """How a fake run behaves on each attempt: seconds it runs, then its exit code."""
    attempts: list[tuple[float, int]] = field(default_factory=lambda: [(1.0, 0)])


class FakeHandle:
    def __init__(self, launcher: FakeLauncher, run_dir, duration: float, code: int):
        self.launcher, self.run_dir = launcher, run_dir
        self.ends_at, self.code = launcher.clock() + duration, code
        self.pid, self.host = 1000 + len(launcher.started), "fake"
        self.signals: list[str] = []

    def poll(self):
        if self.launcher.clock() < self.ends_at:
            return None
        if self in self.launcher.running:
            self.launcher.running.remove(self)
            if self.code == 0:
                write_json_atomic(self.run_dir.result_json, {"eval_mean_return": 1.0})
            else:
                self.run_dir.log.write_text("Traceback (most recent call last):\nValueError: boom\n")
        return RunExit.from_returncode(self.code)

    def interrupt(self):
        self.signals.append("INT")
        self.ends_at, self.code = self.launcher.clock(), 130

    def kill(self):
        self.signals.append("KILL")
        self.ends_at, self.code = self.launcher.clock(), -9

    def peak_rss_mb(self):
        return 100.0

    def peak_uss_mb(self):
        return None  # as Ray and SLURM: the admission counts the RSS


class FakeLauncher(Launcher):
    """Starts no process: each run ends on the fake clock as its Script says, and what ran together is kept."""

    def __init__(self, clock: FakeClock, scripts: dict[str, Script] | None = None):
        self.clock, self.scripts = clock, scripts or {}
        self.started: list[str] = []
        self.running: list[FakeHandle] = []
        self.max_cpus_in_use = 0
        self.together: list[set[str]] = []  # the runs running right after each start

    def start(self, run, run_dir):
        run_dir.path.mkdir(parents=True, exist_ok=True)
        attempt = self.started.count(run.run_id)
        self.started.append(run.run_id)
        duration, code = self.scripts.get(run.run_id, Script()).attempts[attempt]
        handle = FakeHandle(self, run_dir, duration, code)
        handle.cpus, handle.run_id = run.cpus, run.run_id
        self.running.append(handle)
        self.together.append({h.run_id for h in self.running})
        self.max_cpus_in_use = max(self.max_cpus_in_use, sum(h.cpus for h in self.running))
        return handle


def scheduler(tmp_path, launcher, clock, **options):
    """A scheduler on the fake clock, and the list its events go to."""
    opts = SchedulerOptions(**{"max_workers": 2, "memory_guard": False, "poll_s": 0.5, **options})
    events = []
    sched = Scheduler(launcher, SweepDir(tmp_path), opts, on_event=events.append,
                      clock=clock, sleep=clock.sleep)
    return sched, events
