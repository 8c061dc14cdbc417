"""Progress while a sweep runs: plain lines of a real sweep, the live table, refresh limits, NO_COLOR."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import math
import re
import statistics
from pathlib import Path

import pytest
from rich.console import Console

from helpers.commands import run_sweep, write_spec
from helpers.fake_sweep import make_run, result, run_spec, write_progress
from helpers.images import not_blank
from helpers.models import REPO
from helpers.terminal import on_terminal
from mjsweep.engine.scheduler import Event, EventKind
from mjsweep.plan.planned import Action, PlannedRun
from mjsweep.sweepdir.files import SweepDir
from mjsweep.sweepdir.models import RunState
from mjsweep.ui import live, runs_table

SUMMARY = re.compile(r"^\[ *[\d.]+s\] summary +.*\| [\d.k]+/1\.0k steps \(\d+%\), \d+ fps, ETA \S+$")
COLOUR = re.compile(r"\x1b\[[0-9;]*(3[0-9]|4[0-9]|9[0-7])m")  # SGR foreground/background colours
CURSOR_UP = "\x1b[1A"  # the live view redraws itself in place
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_plain_lines_of_a_real_sweep(tmp_path, tiny_spec):
    tiny_spec.update(seeds=2, tensorboard=True)
    proc = run_sweep("run", str(write_spec(tmp_path, tiny_spec)), env={"MJSWEEP_SUMMARY_EVERY": "0.5"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "\x1b" not in proc.stdout  # not a terminal: no cursor moves, no colour
    lines = proc.stdout.splitlines()
    sweep = tmp_path / "runs" / "tiny"
    run_ids = sorted(p.name for p in sweep.iterdir() if (p / "spec.json").is_file())
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
    if not importlib.util.find_spec("tensorboard"):  # and the launcher says so once, up front
        assert proc.stderr.count("warning: the spec sets tensorboard: true") == 1, proc.stderr


@pytest.mark.slow
def test_live_view_on_a_real_terminal(tmp_path, tiny_spec):
    tiny_spec.update(seeds=2)
    spec = str(write_spec(tmp_path, tiny_spec))
    # Started by exec: each run then spends seconds starting, long enough for the once-a-second redraw
    # to show it running (forked from the template, a run of 512 steps can end between two redraws).
    code, text = on_terminal("run", spec, "--start", "exec", env={})
    assert code == 0, text
    plain = ANSI.sub("", text).replace("\r\n", "\n")
    assert CURSOR_UP in text and COLOUR.search(text)  # redrawn in place, in colour
    assert re.search(r"^run +state +timesteps +fps +ETA +return +eval +attempts *$", plain, re.M), plain
    assert re.search(r"^walker_s0_\w+ +running +[\d.k]+/512 ", plain, re.M), plain
    frames = [ln for ln in plain.splitlines() if " steps " in ln and "|" in ln]
    assert "100.0%  1.0k/1.0k steps" in frames[-1] and frames[-1].endswith("| 2 succeeded"), frames[-1]
    assert "sweep tiny: 2 succeeded, 0 failed, 0 interrupted -> " in plain.split(frames[-1])[-1]
    # Again, all done already, with NO_COLOR: still the live view, without a single colour.
    code, text = on_terminal("run", spec, env={"NO_COLOR": "1"})
    assert code == 0 and "2 succeeded (best eval return" in ANSI.sub("", text), text
    assert not COLOUR.search(text)


def hand_summary(returns: list[float]) -> dict:
    """Two seeds, by hand: IQM is the mean; the mean's 95% interval is Student's t with 1 degree of freedom,
    mean +- t s / sqrt(2) with t = tan(0.975 pi - pi / 2) = 12.7062 (the Cauchy quantile)."""
    assert len(returns) == 2
    mean, std = sum(returns) / 2, abs(returns[0] - returns[1]) / 2 ** 0.5
    half = math.tan(0.475 * math.pi) * std / 2 ** 0.5
    return {"mean_return": mean, "std_return": std, "iqm_return": mean, "ci_low": mean - half, "ci_high": mean + half}


@pytest.mark.slow
def test_smoke_sweep_output_status_report_and_plot(tmp_path):
    """configs/smoke.yaml for real, off a terminal; then status, report and plot of what it wrote."""
    proc = run_sweep("run", str(REPO / "configs" / "smoke.yaml"), "--runs-dir", str(tmp_path / "runs"),
                     env={"MJSWEEP_SUMMARY_EVERY": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sweep = tmp_path / "runs" / "smoke"
    lines = proc.stdout.splitlines()
    assert lines[0] == "4 runs: 4 to run, 0 already succeeded" and "\x1b" not in proc.stdout
    assert lines[-1] == f"sweep smoke: 4 succeeded, 0 failed, 0 interrupted -> {sweep}"
    results = {p.parent.name: json.loads(p.read_text()) for p in sweep.glob("*/result.json")}
    assert len(results) == 4
    for run_id in results:
        assert sum(1 for ln in lines if re.search(rf"\] started +{run_id}: attempt 1$", ln)) == 1
        assert sum(1 for ln in lines if re.search(rf"\] succeeded +{run_id}$", ln)) == 1
    summaries = [ln for ln in lines if " summary " in ln]
    assert summaries and all(re.search(r"\| [\d.k]+/8\.2k steps \(\d+%\), \d+ fps, ETA \S+$", ln)
                             for ln in summaries), summaries

    status = json.loads(run_sweep("status", str(sweep), "--json").stdout)
    assert status["counts"] == {"succeeded": 4} and status["timesteps_done"] == 4 * 2048

    report = json.loads(run_sweep("report", str(sweep), "-f", "json").stdout)
    by_variant: dict[str, list[dict]] = {}
    for r in results.values():
        by_variant.setdefault(json.loads((sweep / r["run_id"] / "spec.json").read_text())["variant"], []).append(r)
    expected = sorted(by_variant, key=lambda v: -statistics.fmean(r["eval_mean_return"] for r in by_variant[v]))
    assert [g["variant"] for g in report["groups"]] == expected  # best first
    # The answer first: above the counts, the leader and why 2 seeds each cannot separate it; a plain report
    # opens with the same line.
    assert lines[-2] == (f"answer: {expected[0]} leads (mean {report['groups'][0]['mean_return']:.2f}), not "
                         f"separated from {expected[1]} at 95%: 2 vs 2 seeds cannot separate anything; details: "
                         f"sweep report {sweep} --compare")
    assert run_sweep("report", str(sweep)).stdout.splitlines()[0] == lines[-2]
    for group in report["groups"]:
        runs = by_variant[group["variant"]]
        for key, value in hand_summary([r["eval_mean_return"] for r in runs]).items():
            assert group[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
        assert group["mean_fps"] == pytest.approx(sum(r["fps"] for r in runs) / 2)
        assert (group["succeeded"], group["failed"], group["model"]["joints"]) == (2, 0, 5)
    rows = list(csv.DictReader((sweep / "report.csv").open()))
    assert [r["variant"] for r in rows] == expected and (sweep / "report.md").is_file()

    plot = run_sweep("plot", str(sweep), "-o", str(tmp_path / "smoke.svg"))
    assert plot.returncode == 0, plot.stderr
    not_blank(tmp_path / "smoke.svg")
    not_blank(tmp_path / "smoke_final.svg")


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
    runs = [live.RunView(run_id=f"r{i:03d}", variant="v", grid={}, seed=i, state="succeeded",
                         total_timesteps=100, final_return=float(i))
            for i in range(100)]
    runs += [live.RunView(run_id=f"run{i}", variant="v", grid={}, seed=i, state="running",
                          timesteps=50, total_timesteps=100, fps=10.0)
             for i in range(2)]
    runs += [live.RunView(run_id=f"p{i}", variant="v", grid={}, seed=i, state="pending",
                          total_timesteps=100) for i in range(18)]
    runs += [live.RunView(run_id=f"f{i}", variant="v", grid={}, seed=i, state="failed",
                          total_timesteps=100) for i in range(30)]
    out = Console(file=io.StringIO(), width=160)
    out.print(runs_table.sweep_renderable(runs, [], compact=True))
    text = out.file.getvalue()
    rows = [ln.split()[0] for ln in text.splitlines()[2:] if ln and ln[0] in "rfp" and ln.split()[0] != "run"]
    assert rows[:2] == ["run0", "run1"] and len(rows) == 2 + runs_table.MAX_LISTED  # active + the last failures
    assert "f29" in rows and "f0" not in rows and not any(r.startswith("r0") for r in rows)
    assert "100 succeeded (best eval return 99.00), 18 pending" in text
    assert len(text.splitlines()) < 30


def test_narrow_terminal_keeps_one_line_per_run():
    runs = [live.RunView(run_id=f"walker-long_ppo.learning_rate=0.0003_ppo.gamma=0.99_s{i}_3422ae80", variant="v",
                         grid={}, seed=i, state="running", timesteps=5000, total_timesteps=100_000, fps=1100.0,
                         ep_rew_mean=-1.5)
            for i in range(2)]
    out = Console(file=io.StringIO(), width=80)
    out.print(runs_table.sweep_renderable(runs, [], compact=True, width=80))
    lines = out.file.getvalue().splitlines()
    assert len(lines) == 5 and all(len(ln.rstrip()) <= 80 for ln in lines), lines  # bar, header, 2 runs, counts
    assert [ln.split()[0] for ln in lines[2:4]] == ["walker-…gamma=0.99_s0", "walker-…gamma=0.99_s1"]
    assert lines[2].split()[1:] == ["running", "5.0k/100.0k", "1100", "1m26s", "-1.50", "-", "0"]
    assert runs_table.fit("walker_s0_3422ae80", 12) == "walker_s0" and runs_table.fit("short", 12) == "short"


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


def test_thousands_of_runs_print_one_plain_line_each():
    """Past PLAIN_ROWS the status and plan tables are plain aligned lines: every run on its own line,
    no box drawing, nothing wrapped."""
    from types import SimpleNamespace

    from mjsweep.results.runview import RunView
    from mjsweep.ui import console_tables

    runs = [RunView(run_id=f"v_s{i}", variant="v", grid={}, seed=i, state="succeeded",
                    attempts=1, timesteps=1000, total_timesteps=1000,
                    fps=700.0, final_return=float(i)) for i in range(console_tables.PLAIN_ROWS + 1)]
    out = Console(file=io.StringIO(), width=200)
    out.print(runs_table.sweep_renderable(runs, [], compact=False))
    lines = out.file.getvalue().splitlines()
    cells = [runs_table.run_cells(r, None) for r in runs]
    table = console_tables.plain_table(runs_table.RUN_COLUMNS, cells).splitlines()
    assert lines[1:] == table and len(table) == len(runs) + 1
    assert lines[-1].split() == ["v_s500", "succeeded", "1.0k/1.0k", "700", "-", "-", "500.00", "1"]

    plan = SimpleNamespace(spec=SimpleNamespace(name="big"), sweep_dir=SimpleNamespace(path=Path("/runs/big")))
    specs = [run_spec("v", i) for i in range(console_tables.PLAIN_ROWS + 1)]
    out = Console(file=io.StringIO(), width=200)
    console_tables.plan_table(out, plan, planned(specs))
    lines = out.file.getvalue().splitlines()
    assert lines[0] == f"sweep big: {len(specs)} runs -> /runs/big"
    assert lines[1].split() == ["run", "id", "variant", "grid", "seed", "action"]
    assert [ln.split()[0] for ln in lines[2:-1]] == [s.run_id for s in specs]
    assert lines[-1] == f"dry run: {len(specs)} to start, 0 to resume, 0 to skip; nothing started"
