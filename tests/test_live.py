"""Progress while a sweep runs: plain lines of a real sweep, the live table, refresh limits, NO_COLOR."""

from __future__ import annotations

import importlib.util
import io
import re
from pathlib import Path

from helpers.fake_sweep import make_run, result, run_spec, write_progress
from rich.console import Console

from conftest import run_sweep, write_spec
from mjsweep import live
from mjsweep.rundir import RunState, SweepDir
from mjsweep.scheduler import Event, EventKind
from mjsweep.sweep import Action, PlannedRun

SUMMARY = re.compile(r"^\[ *[\d.]+s\] summary +.*\| [\d.k]+/1\.0k steps \(\d+%\), \d+ fps, ETA \S+$")


def test_plain_lines_of_a_real_sweep(tmp_path, tiny_spec):
    tiny_spec.update(seeds=2, tensorboard=True)
    proc = run_sweep("run", str(write_spec(tmp_path, tiny_spec)), env={"MJSWEEP_SUMMARY_EVERY": "0.5"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "\x1b" not in proc.stdout  # not a terminal: no cursor moves, no colour
    lines = proc.stdout.splitlines()
    sweep = tmp_path / "runs" / "tiny"
    run_ids = sorted(p.name for p in sweep.iterdir() if p.is_dir())
    assert lines[0] == "2 runs: 2 to run, 0 already succeeded"
    assert lines[-1] == f"sweep tiny: 2 succeeded, 0 failed, 0 interrupted -> {sweep}"
    for run_id in run_ids:
        started = [i for i, ln in enumerate(lines) if re.search(rf"\] started +{run_id}: attempt 1$", ln)]
        done = [i for i, ln in enumerate(lines) if re.search(rf"\] succeeded +{run_id}$", ln)]
        assert len(started) == 1 and len(done) == 1 and started[0] < done[0], proc.stdout
    summaries = [ln for ln in lines if " summary " in ln]
    assert summaries and all(SUMMARY.match(ln) for ln in summaries), summaries
    other = [ln for ln in lines[1:-1] if not (ln.startswith("[") or ln.startswith("warning: "))]
    assert other == [], other
    for run_id in run_ids:  # tensorboard: true logs there when installed, and says why not otherwise
        log = (sweep / run_id / "log.txt").read_text()
        if importlib.util.find_spec("tensorboard"):
            assert (sweep / run_id / "tensorboard").is_dir()
        else:
            assert "tensorboard package is not installed" in log


def test_quiet_prints_only_the_end_summary(tmp_path, tiny_spec):
    proc = run_sweep("run", str(write_spec(tmp_path, tiny_spec)), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"sweep tiny: 1 succeeded, 0 failed, 0 interrupted -> "
                                        f"{tmp_path / 'runs' / 'tiny'}"]


def planned(specs, action=Action.START):
    return [PlannedRun(s, action) for s in specs]


def terminal(monkeypatch, no_color: bool) -> tuple[Console, io.StringIO]:
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    buf = io.StringIO()
    return Console(file=buf, force_terminal=True, width=160), buf


def test_live_view_final_frame(tmp_path, monkeypatch):
    specs = [run_spec("v", i) for i in range(3)]
    make_run(tmp_path, specs[0], RunState.SUCCEEDED, result(7.5, torch_threads=3))
    make_run(tmp_path, specs[1], RunState.RUNNING, progress=[(250, 125.0, -4.25)], attempts=2)
    make_run(tmp_path, specs[2])
    out, buf = terminal(monkeypatch, no_color=True)
    progress = live.make_progress(out, SweepDir(tmp_path))
    assert isinstance(progress, live.LiveProgress)
    progress.planned(planned(specs))
    progress.event(Event(EventKind.STARTED, "v_s0"))
    progress.event(Event(EventKind.SUCCEEDED, "v_s0"))
    progress.event(Event(EventKind.STARTED, "v_s1", "attempt 2"))
    progress.event(Event(EventKind.RETRYING, "v_s1", "killed (exit -9)"))
    progress.event(Event(EventKind.STARTED, "v_s1", "attempt 2"))
    progress.close()
    text = buf.getvalue()
    frame = text[text.rfind("━") - 50:]  # the last frame drawn
    row = next(ln for ln in frame.splitlines() if ln.startswith("v_s1"))
    assert row.split() == ["v_s1", "running", "250/1.0k", "125", "6s", "-4.25", "-", "2"]
    assert "1 succeeded (best eval return 7.50), 1 pending" in frame
    assert "warning: v_s0: torch used 3 threads (expected 1)" in frame
    assert "retrying: v_s1: killed (exit -9)" in text  # printed above the table
    assert "1.2k/3.0k steps" in frame and "ETA 14s" in frame  # (3000 - 1250) / 125
    assert not re.search(r"\x1b\[[0-9;]*(3[0-9]|4[0-9]|9[0-7])m", text)  # NO_COLOR: no colour codes


def test_live_view_colours_without_no_color(tmp_path, monkeypatch):
    spec = run_spec("v", 0)
    make_run(tmp_path, spec, RunState.SUCCEEDED, result(1.0, torch_threads=2))
    out, buf = terminal(monkeypatch, no_color=False)
    progress = live.LiveProgress(out, SweepDir(tmp_path))
    progress.planned(planned([spec], Action.SKIP))
    progress.close()
    assert re.search(r"\x1b\[[0-9;]*33m", buf.getvalue())  # the warning is yellow


def test_compact_table_for_many_runs():
    runs = [live.RunView(f"r{i:03d}", "v", {}, i, "succeeded", total_timesteps=100, final_return=float(i))
            for i in range(100)]
    runs += [live.RunView(f"run{i}", "v", {}, i, "running", timesteps=50, total_timesteps=100, fps=10.0)
             for i in range(2)]
    runs += [live.RunView(f"p{i}", "v", {}, i, "pending", total_timesteps=100) for i in range(18)]
    runs += [live.RunView(f"f{i}", "v", {}, i, "failed", total_timesteps=100) for i in range(30)]
    out = Console(file=io.StringIO(), width=160)
    out.print(live.sweep_renderable(runs, [], compact=True))
    text = out.file.getvalue()
    rows = [ln.split()[0] for ln in text.splitlines()[2:] if ln and ln[0] in "rfp" and ln.split()[0] != "run"]
    assert rows[:2] == ["run0", "run1"] and len(rows) == 2 + live.MAX_LISTED  # active + the last failures
    assert "f29" in rows and "f0" not in rows and not any(r.startswith("r0") for r in rows)
    assert "100 succeeded (best eval return 99.00), 18 pending" in text
    assert len(text.splitlines()) < 30


def test_tracker_reads_at_most_once_a_second_and_never_pending_runs(tmp_path):
    clock = [100.0]
    active, waiting = run_spec("v", 0), run_spec("v", 1)
    run = make_run(tmp_path, active, RunState.RUNNING, progress=[(100, 50.0, 1.0)])
    tracker = live.Tracker(SweepDir(tmp_path), clock=lambda: clock[0])
    tracker.planned(planned([active, waiting]))  # v_s1 has no folder at all: reading it would flag a problem
    tracker.event(Event(EventKind.STARTED, "v_s0"))
    assert tracker.refresh()[0].timesteps == 100
    write_progress(run, [(100, 50.0, 1.0), (200, 60.0, 2.0)])
    assert tracker.refresh()[0].timesteps == 100  # within the second: no new read
    clock[0] += 1.0
    views = tracker.refresh()
    assert views[0].timesteps == 200 and views[0].fps == 60.0
    assert views[1].state == "pending" and views[1].problems == ()


def test_renderer_choice():
    sweep = SweepDir(Path("/nonexistent"))
    assert isinstance(live.make_progress(Console(file=io.StringIO()), sweep), live.PlainProgress)
    tty = Console(file=io.StringIO(), force_terminal=True)
    assert isinstance(live.make_progress(tty, sweep), live.LiveProgress)
    quiet = live.make_progress(tty, sweep, quiet=True)
    assert isinstance(quiet, live.PlainProgress) and quiet.quiet
