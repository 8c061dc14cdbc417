"""report.html kept current while `sweep run` runs: when builds happen (a fake clock, and the scheduler with a
fake launcher), a real sweep's page opened in Chromium mid-sweep and at its end, and a Ctrl-C that leaves
no build behind. What the page's state line says: test_report.py."""

from __future__ import annotations

import os
import re
import signal
import sys

import psutil

from helpers.commands import launcher_output, start_sweep, wait_for, write_spec
from helpers.fake_launcher import FakeClock, FakeLauncher, Script
from helpers.fake_sweep import numbered_run
from helpers.rendering import chromium, needs_browser
from mjsweep.engine import livereport
from mjsweep.engine.livereport import LiveReport
from mjsweep.engine.scheduler import Event, EventKind, Scheduler, SchedulerOptions
from mjsweep.sweepdir.files import SweepDir

ENDED = Event(EventKind.SUCCEEDED, "r0")


class FakeBuilds:
    """Builds that take `duration` seconds of the fake clock and exit with `code`; when each started, ended or
    was ended early, and how many ran at once."""

    def __init__(self, clock: FakeClock, duration: float = 5.0, code: int = 0):
        self.clock, self.duration, self.code = clock, duration, code
        self.started: list[float] = []
        self.finished: list[float] = []
        self.killed: list[float] = []
        self.running = self.most_at_once = 0
        self.interrupt_wait = False

    def __call__(self, command: list[str]) -> FakeBuild:
        assert command == ["build"]
        self.started.append(self.clock())
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        return FakeBuild(self)


class FakeBuild:
    def __init__(self, builds: FakeBuilds):
        self.builds, self.ends_at, self.done = builds, builds.clock() + builds.duration, False

    def poll(self) -> int | None:
        if self.builds.clock() < self.ends_at:
            return None
        if not self.done:
            self.done = True
            self.builds.running -= 1
            self.builds.finished.append(self.builds.clock())
        return self.builds.code

    def wait(self, timeout: float) -> int | None:
        if self.builds.interrupt_wait:
            raise KeyboardInterrupt
        self.builds.clock.now = min(self.ends_at, self.builds.clock() + timeout)
        return self.poll()

    def error(self) -> str:
        return "error: boom"

    def end(self) -> None:
        if not self.done:
            self.done = True
            self.builds.running -= 1
            self.builds.killed.append(self.builds.clock())


def live(every_s: float | None = 60.0, duration: float = 5.0, code: int = 0):
    clock = FakeClock()
    builds = FakeBuilds(clock, duration, code)
    warnings: list[str] = []
    return LiveReport(["build"], every_s, warn=warnings.append, clock=clock, start=builds), clock, builds, warnings


def ticks_until(report: LiveReport, clock: FakeClock, until: float, step: float = 0.1) -> None:
    """The scheduler's polling rounds up to `until` on the fake clock."""
    while clock.now < until - 1e-9:
        report.tick()
        clock.now = round(clock.now + step, 6)
    report.tick()


def test_builds_only_after_a_run_ended_one_at_a_time_and_the_interval_after_the_last_ended():
    report, clock, builds, warnings = live(every_s=60.0, duration=5.0)
    ticks_until(report, clock, 100.0)
    for kind in (EventKind.STARTED, EventKind.WARNING, EventKind.RETRYING, EventKind.WAITING_MEMORY):
        report.event(Event(kind, "r0"))
    ticks_until(report, clock, 100.0)
    assert builds.started == []  # nothing ended: nothing new to show
    report.event(ENDED)
    ticks_until(report, clock, 101.0)
    assert builds.started == [100.0]  # the first at once
    report.event(Event(EventKind.FAILED, "r1", "error: x"))
    ticks_until(report, clock, 164.9)
    assert builds.started == [100.0] and builds.finished == [105.0]  # not while one runs, nor 60 s after it
    ticks_until(report, clock, 165.0)
    assert builds.started == [100.0, 165.0]
    ticks_until(report, clock, 1000.0)
    assert builds.started == [100.0, 165.0]  # nothing ended since: no build
    report.event(Event(EventKind.TRIAL, None, "trial 3 ended"))  # a search's trial ended: its table changed
    ticks_until(report, clock, 1000.1)
    assert builds.started[-1] == 1000.0 and builds.most_at_once == 1
    assert warnings == []


def test_a_failing_build_is_one_warning_line_and_the_sweep_goes_on():
    report, clock, builds, warnings = live(every_s=10.0, duration=1.0, code=2)
    for t in (0.0, 20.0, 40.0):
        clock.now = t
        report.event(ENDED)
        ticks_until(report, clock, t + 2.0)
    assert builds.started == [0.0, 20.0, 40.0]
    assert warnings == ["report.html not rewritten: error: boom"]  # the same failure is said once


def test_the_final_build_replaces_one_in_flight():
    report, clock, builds, _ = live(every_s=60.0, duration=5.0)
    report.event(ENDED)
    ticks_until(report, clock, 2.0)
    report.finish(stopped=False)
    assert builds.killed == [2.0] and builds.started == [0.0, 2.0] and builds.finished == [7.0]
    assert builds.running == 0


def test_the_final_build_after_a_live_one_even_when_nothing_ended_since():
    report, clock, builds, _ = live(every_s=60.0, duration=1.0)
    report.event(ENDED)
    ticks_until(report, clock, 30.0)
    report.finish(stopped=False)  # the last page said the sweep runs: it must say that it ended
    assert builds.started == [0.0, 30.0]


def test_no_final_build_when_nothing_ended():
    report, clock, builds, _ = live()
    ticks_until(report, clock, 30.0)
    report.finish(stopped=False)
    assert builds.started == []


def test_after_ctrl_c_the_final_build_gets_a_few_seconds_and_is_ended_after():
    report, clock, builds, warnings = live(every_s=60.0, duration=60.0)
    report.event(ENDED)
    report.finish(stopped=True)
    assert builds.started == [0.0] and builds.killed == [livereport.STOPPED_WAIT_S] and builds.running == 0
    assert len(warnings) == 1 and "cut short" in warnings[0]


def test_a_second_ctrl_c_skips_the_final_build():
    report, _, builds, warnings = live(every_s=60.0, duration=60.0)
    builds.interrupt_wait = True
    report.event(ENDED)
    report.finish(stopped=True)  # the KeyboardInterrupt stops here: the sweep's own exit code stands
    assert builds.killed == [0.0] and builds.running == 0 and "cut short" in warnings[0]


def test_off_builds_nothing():
    report, clock, builds, _ = live(every_s=None)
    report.event(ENDED)
    ticks_until(report, clock, 100.0)
    report.finish(stopped=False)
    assert builds.started == []


def test_close_ends_a_build_in_flight():
    report, clock, builds, _ = live(duration=30.0)
    report.event(ENDED)
    ticks_until(report, clock, 1.0)
    report.close()
    assert builds.killed == [1.0] and builds.running == 0


class FakeWaitingBuilds(FakeBuilds):
    """Final builds started ahead: each waits (imports done) until told to go, then takes `duration`."""

    def __init__(self, clock: FakeClock, duration: float = 5.0, dies: bool = False):
        super().__init__(clock, duration)
        self.told: list[float] = []
        self.dies = dies

    def __call__(self) -> FakeWaitingBuild:  # type: ignore[override]
        self.started.append(self.clock())
        self.running += 1
        return FakeWaitingBuild(self)


class FakeWaitingBuild(FakeBuild):
    def __init__(self, builds: FakeWaitingBuilds):
        super().__init__(builds)
        self.ends_at = float("inf")  # waits until told

    def go(self) -> bool:
        builds = self.builds
        assert isinstance(builds, FakeWaitingBuilds)
        if builds.dies:
            return False
        builds.told.append(builds.clock())
        self.ends_at = builds.clock() + builds.duration
        return True


def live_with_final(duration: float = 5.0, final_duration: float = 0.5, dies: bool = False):
    clock = FakeClock()
    builds, finals = FakeBuilds(clock, duration), FakeWaitingBuilds(clock, final_duration, dies)
    report = LiveReport(["build"], 60.0, warn=lambda m: None, clock=clock, start=builds, start_final=finals)
    return report, clock, builds, finals


def test_the_final_build_starts_ahead_once_a_run_ended_and_waits_to_be_told():
    report, clock, builds, finals = live_with_final(duration=5.0, final_duration=0.5)
    ticks_until(report, clock, 10.0)
    assert finals.started == []  # nothing ended yet: no final build may be needed
    report.event(ENDED)
    ticks_until(report, clock, 30.0)
    assert builds.started == [10.0] and builds.finished == [15.0] and finals.started == [10.0]
    assert finals.told == [] and finals.running == 1  # it waits, however long the sweep goes on
    report.event(ENDED)
    report.finish(stopped=False)
    assert finals.told == [30.0] and finals.finished == [30.5] and builds.started == [10.0]  # no cold build
    assert builds.running == finals.running == 0


def test_a_final_build_that_cannot_be_told_is_replaced_by_a_cold_one():
    report, clock, builds, finals = live_with_final(dies=True)
    report.event(ENDED)
    ticks_until(report, clock, 20.0)
    report.finish(stopped=False)
    assert finals.started == [0.0] and finals.killed == [20.0] and builds.started == [0.0, 20.0]
    assert builds.running == finals.running == 0


def test_close_ends_the_final_build_waiting():
    report, clock, builds, finals = live_with_final()
    report.event(ENDED)
    ticks_until(report, clock, 20.0)
    report.close()
    assert finals.killed == [20.0] and finals.running == 0 and finals.told == []


def test_a_real_waiting_final_build_builds_only_when_told_and_none_outlives_close(tmp_path):
    marker = tmp_path / "built"
    code = f"import sys, pathlib; line = sys.stdin.readline(); pathlib.Path({str(marker)!r}).write_text(line)"
    told = livereport.ChildBuild([sys.executable, "-c", code], waiting=True)
    assert told.poll() is None and not marker.exists()
    assert told.go() and told.wait(60) == 0 and marker.read_text() == "go\n"
    told.end()
    left = livereport.ChildBuild([sys.executable, "-c", code.replace("built", "left")], waiting=True)
    pid = left.pid
    left.end()  # the launcher leaves without a final build
    assert not psutil.pid_exists(pid) and not marker.with_name("left").exists()  # killed and reaped, unbuilt


def test_the_scheduler_ticks_the_live_report_while_runs_run(tmp_path):
    clock = FakeClock()
    runs = [numbered_run(i) for i in range(6)]
    launcher = FakeLauncher(clock, {r.run_id: Script([(10.0, 0)]) for r in runs})
    builds = FakeBuilds(clock, duration=3.0)
    report = LiveReport(["build"], 15.0, warn=lambda m: None, clock=clock, start=builds)
    options = SchedulerOptions(max_workers=2, memory_guard=False, poll_s=0.5)
    outcome = Scheduler(launcher, SweepDir(tmp_path), options, on_event=report.event, on_poll=report.tick,
                        clock=clock, sleep=clock.sleep).run(runs)
    assert len(outcome.succeeded) == 6 and clock.now == 30.0  # two at a time, ending at 10, 20 and 30 s
    # At 10 s the first; the next not before 15 s after it ended (13 s), though runs ended at 20 s.
    assert builds.started == [10.0, 28.0]
    report.finish(stopped=False)  # the one begun at 28 s read a sweep that still ran
    assert builds.started == [10.0, 28.0, 30.0] and builds.killed == [30.0] and builds.most_at_once == 1


def html_state(text: str) -> str:
    match = re.search(r'<p id="sweep-state"[^>]*>([^<]*)</p>', text)
    assert match, "no state line"
    return match.group(1)


# -- a real sweep -----------------------------------------------------------------------------------


def page_state(driver) -> tuple[str, list[list[str]]]:
    """The page's state line and its table's rows, as Chromium shows them."""
    state = driver.execute_script("const p = document.getElementById('sweep-state'); return p ? p.innerText : ''")
    rows = driver.execute_script(
        "return [...document.querySelectorAll('tbody tr')].map(r => [...r.cells].map(c => c.innerText))")
    return state, rows


@needs_browser
def test_a_real_sweep_rewrites_report_html_mid_sweep_and_at_its_end(tmp_path, tiny_spec):
    tiny_spec.update(seeds=4, total_timesteps=4096)
    spec = write_spec(tmp_path, tiny_spec)
    page = tmp_path / "runs" / "tiny" / "report.html"
    launcher = start_sweep(spec, "--workers", "1", "--report-every", "1s")
    try:
        with chromium(tmp_path / "profile") as driver:  # started first: the page opens as soon as it exists
            wait_for(page.exists, "report.html written while the sweep runs")
            driver.get(page.as_uri())
            state, rows = page_state(driver)
            # One run at a time: the first page comes after the first run ended, with three still to train.
            match = re.fullmatch(r"sweep running: (\d) of 4 runs ended, last updated [\d:]+; reload for more", state)
            assert match and 1 <= int(match.group(1)) < 4, state
            assert len(rows) == 1 and rows[0][0] == "walker" and int(rows[0][2].split("/")[0]) >= 1, rows
            assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []

            assert launcher.wait(timeout=600) == 0, launcher_output(spec)
            # The final build, started ahead, built and ended with the launcher: none is left behind.
            assert report_builds(page.parent, "mjsweep.ui.report_child") == []
            driver.refresh()  # as a user who kept it open reloads it
            state, rows = page_state(driver)
            assert re.fullmatch(r"sweep ended: all 4 runs succeeded; report written [\d-]+ [\d:]+", state), state
            assert rows[0][2] == "4/4", rows
            assert "sweep running" not in driver.page_source
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    out = launcher_output(spec)
    # Said once at the start; the builds print nothing into the launcher's output (no path, no traceback).
    assert out.count("report.html") == 1 and f"report: {page} (" in out, out
    assert "Traceback" not in out and "warning: sweep: report.html" not in out


def report_builds(sweep_dir, module: str = "mjsweep.ui.cli") -> list[psutil.Process]:
    """Every process building this sweep's report, wherever it is in the process tree (module
    mjsweep.ui.report_child: the final build started ahead)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if module in cmdline and "report" in cmdline and str(sweep_dir) in cmdline:
            found.append(proc)
    return found


def test_ctrl_c_leaves_no_report_build_running(tmp_path, tiny_spec):
    tiny_spec.update(seeds=6, total_timesteps=4096)
    spec = write_spec(tmp_path, tiny_spec)
    sweep_dir = tmp_path / "runs" / "tiny"
    launcher = start_sweep(spec, "--workers", "1", "--report-every", "1s")
    try:
        in_flight = wait_for(lambda: report_builds(sweep_dir), "a report build in flight", every=0.05)[0]
        assert in_flight.ppid() == launcher.pid and in_flight.nice() == livereport.NICENESS
        os.kill(launcher.pid, signal.SIGINT)
        assert launcher.wait(timeout=600) == 130, launcher_output(spec)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert not in_flight.is_running()  # ended and reaped by the launcher: not even a zombie
    assert report_builds(sweep_dir) == [] and report_builds(sweep_dir, "mjsweep.ui.report_child") == []
    out = launcher_output(spec)
    state = html_state((sweep_dir / "report.html").read_text())
    assert state.startswith("sweep ended: ") or "final build was cut short" in out, (state, out)
