"""`sweep status`: every state, stale runs of a dead launcher, contention warnings, JSON, light imports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from typer.testing import CliRunner

from helpers.commands import run_sweep, sweep_exe, write_spec
from helpers.fake_sweep import PROGRESS_HEADER, every_state, make_run, result, run_spec, write_progress
from mjsweep.sweepdir.csvfiles import read_progress
from mjsweep.sweepdir.files import SweepDir
from mjsweep.sweepdir.lock import lock_holder, sweep_lock
from mjsweep.sweepdir.models import DisplayState, RunState
from mjsweep.ui.cli import app
from mjsweep.ui.status import load_warnings, read_sweep, totals

WAIT = 300.0


def test_every_state_under_a_live_launcher(tmp_path):
    every_state(tmp_path)
    with sweep_lock(SweepDir(tmp_path)):
        view = read_sweep(tmp_path, load1=0.0, cores=2)
        assert view.launcher_pid == os.getpid()
    states = {r.run_id: r.state for r in view.runs}
    assert states == {"v_s0": "pending", "v_s1": "running", "v_s2": DisplayState.STALE, "v_s3": "succeeded",
                      "v_s4": "failed", "v_s5": "interrupted", "v_s6": "unknown"}
    assert view.counts == {"running": 1, DisplayState.STALE: 1, "pending": 1, "failed": 1, "interrupted": 1,
                           "unknown": 1, "succeeded": 1}
    running = next(r for r in view.runs if r.run_id == "v_s1")
    assert (running.timesteps, running.fps, running.ep_rew_mean) == (200, 400.0, -2.0)
    assert running.eta_s == (1000 - 200) / 400.0
    assert next(r for r in view.runs if r.run_id == "v_s4").attempts == 2
    assert next(r for r in view.runs if r.run_id == "v_s6").problems


def test_without_a_launcher_every_running_run_is_stale(tmp_path):
    every_state(tmp_path)
    view = read_sweep(tmp_path, load1=0.0, cores=2)
    assert view.launcher_pid is None and lock_holder(SweepDir(tmp_path)) is None
    assert view.counts[DisplayState.STALE] == 2 and "running" not in view.counts


def test_status_of_a_crashed_launcher(tmp_path, tiny_spec):
    """kill -9 the real launcher while a run is running: status says stale, and says so in its table."""
    tiny_spec["total_timesteps"] = 100_000  # long enough to be caught running
    spec = write_spec(tmp_path, tiny_spec)
    proc = subprocess.Popen([sweep_exe(), "run", str(spec)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "NO_COLOR": "1"})
    sweep = tmp_path / "runs" / "tiny"
    try:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if list(sweep.glob("*/status.json")) and '"running"' in next(sweep.glob("*/status.json")).read_text():
                break
            time.sleep(0.2)
        live = json.loads(run_sweep("status", str(sweep), "--json").stdout)
        assert live["launcher_pid"] == proc.pid and live["counts"] == {"running": 1}
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    after = run_sweep("status", str(sweep), "--json")
    data = json.loads(after.stdout)
    assert data["launcher_pid"] is None and data["counts"] == {DisplayState.STALE: 1}
    table = run_sweep("status", str(sweep))
    assert table.returncode == 0 and "no launcher running" in table.stdout
    assert "1 run(s) stale" in table.stdout and DisplayState.STALE in table.stdout


def test_contention_warnings(tmp_path):
    make_run(tmp_path, run_spec("v", 0), RunState.SUCCEEDED, result=result(1.0, fps=1000.0))
    make_run(tmp_path, run_spec("v", 1), RunState.SUCCEEDED, result=result(1.0, fps=1000.0, torch_threads=4))
    make_run(tmp_path, run_spec("v", 2), RunState.SUCCEEDED, result=result(1.0, fps=300.0))
    with sweep_lock(SweepDir(tmp_path)):
        make_run(tmp_path, run_spec("v", 3), RunState.RUNNING, pid=os.getpid(),
                 progress=[(100, 1000.0, None), (200, 1000.0, None), (300, 1000.0, None), (400, 900.0, None),
                           (500, 400.0, None)])
        # Ended, but averaged under half its early pace: starved for much of its run.
        make_run(tmp_path, run_spec("v", 4), RunState.SUCCEEDED, result=result(1.0, fps=700.0),
                 progress=[(100, 2000.0, None), (200, 2000.0, None), (300, 2000.0, None), (400, 400.0, None),
                           (500, 400.0, None)])
        view = read_sweep(tmp_path, load1=5.0, cores=2)
    kinds = {(w.subject, w.kind) for w in view.warnings}
    assert kinds == {("v_s1", "threads"), ("v_s3", "fps-drop"), ("v_s2", "fps-median"), ("machine", "load"),
                     ("v_s4", "fps-drop")}
    assert "v_s4: averaged 700 fps, under half its early 2000" in map(str, view.warnings)
    assert "torch used 4 threads" in str(next(w for w in view.warnings if w.kind == "threads"))


def test_load_warning_only_above_the_cores():
    assert load_warnings(2.0, 2) == []
    assert [w.kind for w in load_warnings(2.5, 2)] == ["load"]
    assert load_warnings(3.9, 2, running=4) == []  # the sweep's own 4 runs on 2 cores, as measured best
    assert [w.kind for w in load_warnings(5.5, 2, running=4)] == ["load"]


def test_progress_ignores_a_row_still_being_written(tmp_path):
    run = make_run(tmp_path, run_spec("v", 0), progress=[(100, 10.0, -1.0), (200, 20.0, -0.5)])
    with open(run.progress_csv, "a") as fh:
        fh.write("3,300,1.0,30")  # no newline yet
    progress = read_progress(run.progress_csv)
    assert (progress.timesteps, progress.fps, progress.ep_rew_mean) == (200, 20.0, -0.5)
    assert progress.early_fps is None  # too few rows to judge a drop


def test_progress_of_a_long_file_reads_head_and_tail(tmp_path):
    run = make_run(tmp_path, run_spec("v", 0))
    write_progress(run, [(i * 10, 800.0 if i <= 3 else 100.0, float(i)) for i in range(1, 3001)])
    progress = read_progress(run.progress_csv)
    assert (progress.timesteps, progress.early_fps, progress.ep_rew_mean) == (30_000, 800.0, 3000.0)


def test_early_fps_starts_after_an_off_policy_warm_up(tmp_path):
    run = make_run(tmp_path, run_spec("v", 0))
    # SAC's rows before learning_starts: no updates (train_s 0), several times the pace of training
    warmup = [[i, i * 1000, i * 0.2, 5000.0, "", "", 0.2, 0.0] for i in range(1, 6)]
    trained = [[i, i * 1000, i * 10.0, 100.0, "", "", 1.0, 9.0] for i in range(6, 11)]
    lines = [",".join(map(str, r)) for r in [PROGRESS_HEADER, *warmup, *trained]]
    run.progress_csv.write_text("\n".join(lines) + "\n")
    progress = read_progress(run.progress_csv)
    assert (progress.timesteps, progress.fps, progress.early_fps) == (10_000, 100.0, 100.0)


def test_each_algorithm_is_compared_with_its_own_median_fps(tmp_path):
    for seed, (algo, fps) in enumerate([("ppo", 900.0), ("ppo", 1000.0), ("sac", 60.0), ("sac", 70.0),
                                        ("sac", 20.0)]):
        make_run(tmp_path, run_spec("v", seed, grid={"algo": algo}), RunState.SUCCEEDED, result=result(1.0, fps=fps))
    view = read_sweep(tmp_path, load1=0.0, cores=2)
    assert [(w.subject, w.kind) for w in view.warnings] == [("v_algo=sac_s4", "fps-median")]


def test_totals_and_eta(tmp_path):
    make_run(tmp_path, run_spec("v", 0), RunState.SUCCEEDED, result=result(1.0))
    with sweep_lock(SweepDir(tmp_path)):
        make_run(tmp_path, run_spec("v", 1), RunState.RUNNING, pid=os.getpid(), progress=[(400, 200.0, None)])
        make_run(tmp_path, run_spec("v", 2))
        t = totals(read_sweep(tmp_path, load1=0.0, cores=2).runs)
    assert (t.done, t.total, t.fps) == (1400, 3000, 200.0)
    assert t.eta_s == (3000 - 1400) / 200.0


def test_status_shows_training_fps_and_the_other_figures_apart(tmp_path):
    timed = {"timesteps": 4096, "rollout_s": 5.0, "train_s": 3.0}
    make_run(tmp_path, run_spec("v", 0), RunState.SUCCEEDED,
             result=result(1.0, fps=512.0, **timed, training_s=8.0, eval_s=11.0, save_s=0.2, startup_s=2.5))
    make_run(tmp_path, run_spec("v", 1), RunState.SUCCEEDED, result=result(1.0, fps=212.9, **timed))  # older file
    data = json.loads(CliRunner().invoke(app, ["status", str(tmp_path), "--json"]).stdout)
    new, old = sorted(data["runs"], key=lambda r: r["run_id"])
    figures = ("fps", "training_s", "eval_s", "save_s", "startup_s")
    assert [new[k] for k in figures] == [512.0, 8.0, 11.0, 0.2, 2.5]
    assert (old["fps"], old["training_s"], old["eval_s"]) == (512.0, None, None)


def test_cli_status_json_and_table(tmp_path):
    every_state(tmp_path)
    runner = CliRunner()
    data = json.loads(runner.invoke(app, ["status", str(tmp_path), "--json"]).stdout)
    assert data["counts"]["succeeded"] == 1 and data["counts"][DisplayState.STALE] == 2
    assert {r["run_id"] for r in data["runs"]} == {f"v_s{i}" for i in range(7)}
    text = runner.invoke(app, ["status", str(tmp_path)]).stdout
    for state in ("pending", DisplayState.STALE, "succeeded", "failed", "interrupted", "unknown"):
        assert state in text


def test_watch_refreshes_until_ctrl_c(tmp_path):
    """Off a terminal --watch prints the whole view again every interval, with what changed since."""
    make_run(tmp_path, run_spec("v", 0))
    proc = subprocess.Popen([sweep_exe(), "status", str(tmp_path), "--watch", "--interval", "0.5"],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "NO_COLOR": "1"})
    try:
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if line.split()[:2] == ["v_s0", "pending"]:
                make_run(tmp_path, run_spec("v", 0), RunState.SUCCEEDED, result=result(3.0))
            if line.split()[:2] == ["v_s0", "succeeded"]:
                break
        assert seen and seen[-1].split()[:2] == ["v_s0", "succeeded"], seen
        assert sum(1 for ln in seen if ln.startswith(f"sweep {tmp_path.name} ")) >= 2
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=WAIT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cli_status_of_a_folder_without_runs(tmp_path):
    proc = run_sweep("status", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and len(proc.stderr.splitlines()) == 1


def test_status_imports_nothing_heavy(tmp_path):
    every_state(tmp_path)
    code = ("import sys; from typer.testing import CliRunner; from mjsweep.ui.cli import app; "
            f"r = CliRunner().invoke(app, ['status', {str(tmp_path)!r}]); assert r.exit_code == 0, r.output; "
            "print(sorted(m for m in ('torch', 'stable_baselines3', 'matplotlib', 'mujoco') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
