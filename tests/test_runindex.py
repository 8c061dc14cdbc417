"""index.jsonl: `sweep status` reads ended runs from it in one file, and the run folders stay the truth."""

from __future__ import annotations

import errno
import json
import os

from helpers.fake_launcher import FakeClock, FakeLauncher, Script, scheduler
from helpers.fake_sweep import every_state, make_run, numbered_run, result, run_spec
from mjsweep.engine.sweep import reindex
from mjsweep.plan.planned import Action, PlannedRun
from mjsweep.results.runview import index_entry
from mjsweep.sweepdir import index as runindex
from mjsweep.sweepdir.files import SweepDir
from mjsweep.sweepdir.models import RunState
from mjsweep.ui.status import read_sweep


def index_as_launcher_would(sweep: SweepDir) -> None:
    """One line per ended run, read from its files."""
    runindex.rewrite(sweep.index_jsonl, [index_entry(run_dir) for run_dir in sweep.run_dirs()])


def test_status_from_the_index_equals_status_from_the_files(tmp_path):
    every_state(tmp_path)
    sweep = SweepDir(tmp_path)
    from_files = read_sweep(tmp_path, load1=0.0, cores=2)
    index_as_launcher_would(sweep)
    assert sorted(runindex.ended_entries(sweep.index_jsonl)) == ["v_s3", "v_s4", "v_s5"]  # the ended ones
    assert read_sweep(tmp_path, load1=0.0, cores=2).runs == from_files.runs

    # The index is what was read: an ended run shows from its line even with its status.json gone.
    sweep.run("v_s3").status_json.unlink()
    succeeded = next(r for r in read_sweep(tmp_path, load1=0.0, cores=2).runs if r.run_id == "v_s3")
    assert (succeeded.state, succeeded.final_return) == ("succeeded", 5.0)


def test_a_restarted_run_is_read_from_its_files(tmp_path):
    make_run(tmp_path, run_spec("v", 0), RunState.SUCCEEDED, result=result(5.0))
    sweep = SweepDir(tmp_path)
    index_as_launcher_would(sweep)
    runindex.IndexWriter(sweep.index_jsonl).restarting("v_s0")
    sweep.run("v_s0").result_json.unlink()  # started again from scratch: no result yet
    make_run(tmp_path, run_spec("v", 0), RunState.RUNNING, pid=os.getpid(), progress=[(100, 500.0, -1.0)])
    assert runindex.ended_entries(sweep.index_jsonl) == {}
    (view,) = read_sweep(tmp_path, load1=0.0, cores=2).runs
    assert (view.state, view.timesteps) == ("stale", 100)  # no launcher holds the lock in this test


def test_torn_blank_and_foreign_lines_are_skipped(tmp_path):
    for seed in (0, 1):
        make_run(tmp_path, run_spec("v", seed), RunState.SUCCEEDED, result=result(5.0))
    sweep = SweepDir(tmp_path)
    good = index_entry(sweep.run("v_s0")).to_file()
    foreign = {**index_entry(sweep.run("v_s1")).to_file(), "final_return": 99.0,
               "from_a_later_version": 1}
    sweep.index_jsonl.write_text("\n".join([json.dumps({**good, "final_return": 42.0}), "", "[1, 2]",
                                            json.dumps(foreign), '{"run_id": "v_s1", "sta']) + "\n")
    assert sorted(runindex.ended_entries(sweep.index_jsonl)) == ["v_s0", "v_s1"]
    views = {r.run_id: r for r in read_sweep(tmp_path, load1=0.0, cores=2).runs}
    assert views["v_s0"].final_return == 42.0  # from its line
    assert views["v_s1"].final_return == 5.0   # a line this version cannot read: from the files


def test_a_failed_append_removes_the_index(tmp_path, monkeypatch):
    make_run(tmp_path, run_spec("v", 0), RunState.SUCCEEDED, result=result(5.0))
    sweep = SweepDir(tmp_path)
    index_as_launcher_would(sweep)
    writer = runindex.IndexWriter(sweep.index_jsonl)

    def disk_full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(runindex.os, "write", disk_full)
        writer.restarting("v_s0")
    assert writer.broken and not sweep.index_jsonl.exists()
    writer.ended(index_entry(sweep.run("v_s0")))
    assert not sweep.index_jsonl.exists()  # never written again by this launcher: absent, not wrong


def test_the_scheduler_indexes_each_end_and_each_restart(tmp_path):
    sweep = SweepDir(tmp_path)
    runs = [numbered_run(i) for i in range(3)]
    for run in runs:
        make_run(tmp_path, run)
    clock = FakeClock()
    launcher = FakeLauncher(clock, {"r1": Script([(0.5, -9), (0.5, 0)]), "r2": Script([(0.5, 1)])})
    sched, _ = scheduler(tmp_path, launcher, clock, retries=1)
    sched.run(runs)
    lines = [json.loads(line) for line in sweep.index_jsonl.read_text().splitlines()]
    r1 = [(e["state"], e.get("attempts")) for e in lines if e["run_id"] == "r1"]
    assert r1 == [("running", None), ("failed", 1), ("running", None), ("succeeded", 2)]
    entries = runindex.ended_entries(sweep.index_jsonl)
    assert {k: e.state for k, e in entries.items()} == {"r0": "succeeded", "r1": "succeeded", "r2": "failed"}
    assert [entries[k] for k in sorted(entries)] == [index_entry(sweep.run(k))
                                                      for k in sorted(entries)]


def test_a_launcher_keeps_the_lines_of_runs_it_leaves_alone(tmp_path):
    sweep = SweepDir(tmp_path)
    kept, rerun, unplanned, unindexed = (run_spec("v", seed) for seed in range(4))
    for spec in (kept, rerun, unplanned, unindexed):
        make_run(tmp_path, spec, RunState.SUCCEEDED, result=result(float(spec.seed)))
    index_as_launcher_would(sweep)
    entries = runindex.ended_entries(sweep.index_jsonl)
    runindex.rewrite(sweep.index_jsonl, [entries[k] for k in ("v_s0", "v_s1", "v_s2")])

    reindex(sweep, [PlannedRun(kept, Action.SKIP), PlannedRun(rerun, Action.START),
                     PlannedRun(unindexed, Action.SKIP)])
    after = runindex.ended_entries(sweep.index_jsonl)
    assert sorted(after) == ["v_s0", "v_s2", "v_s3"]  # the run to start again is read from its files
    assert after["v_s3"] == index_entry(sweep.run("v_s3"))


def test_a_line_from_before_training_fps_is_read_again_from_the_files(tmp_path):
    spec = run_spec("v", 0)
    make_run(tmp_path, spec, RunState.SUCCEEDED,
             result=result(5.0, fps=212.9, timesteps=4096, rollout_s=5.0, train_s=3.0))  # an older result.json
    sweep = SweepDir(tmp_path)
    older = index_entry(sweep.run("v_s0")).model_dump(
        mode="json", exclude={"schema_version", "training_s", "eval_s", "save_s", "startup_s"})
    sweep.index_jsonl.write_text(json.dumps({**older, "fps": 212.9}) + "\n")  # as the previous version wrote it
    (view,) = read_sweep(tmp_path, load1=0.0, cores=2).runs
    assert view.fps == 512.0  # from result.json's rollout + update, not the line's wall-time fps
    reindex(sweep, [PlannedRun(spec, Action.SKIP)])
    assert runindex.ended_entries(sweep.index_jsonl)["v_s0"] == index_entry(sweep.run("v_s0"))  # rebuilt


def test_the_live_view_takes_skipped_runs_from_the_index(tmp_path):
    from mjsweep.ui import live

    spec = run_spec("v", 0)
    make_run(tmp_path, spec, RunState.SUCCEEDED, result=result(5.0))
    sweep = SweepDir(tmp_path)
    index_as_launcher_would(sweep)
    sweep.run("v_s0").result_json.unlink()  # so a view with the return can only have come from the index
    tracker = live.Tracker(sweep)
    tracker.planned([PlannedRun(spec, Action.SKIP)])
    assert not tracker.dirty  # nothing left to read from the run's files
    (view,) = tracker.refresh(force=True)
    assert (view.state, view.final_return, view.fps) == ("succeeded", 5.0, 1000.0)
