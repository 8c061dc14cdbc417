"""The StatusRecorder: status.json for every change, an index line for every end, a warning for a failed write."""

from __future__ import annotations

import json

from helpers.fake_sweep import make_run, run_spec
from mjsweep.engine.status_recorder import StatusRecorder
from mjsweep.sweepdir.files import SweepDir
from mjsweep.sweepdir.models import RunState, RunStatus


def test_status_for_every_change_and_an_index_line_for_each_end(tmp_path):
    sweep = SweepDir(tmp_path)
    run_dir = make_run(tmp_path, run_spec("r0", 0, run_id="r0"))
    stray = sweep.run("stray")  # a folder without spec.json is not a run of the sweep
    stray.path.mkdir()
    stray.write_status(RunStatus(state=RunState.FAILED, attempts=1, peak_rss_mb=999.0))
    warnings = []
    recorder = StatusRecorder(sweep, warn=lambda run_id, message: warnings.append((run_id, message)))
    recorder.restarting("r0")
    recorder.record(run_dir, RunStatus(state=RunState.RUNNING, attempts=1))
    assert recorder.previous(run_dir).state is RunState.RUNNING
    assert recorder.measured_peaks().for_admission() == {}
    recorder.record(run_dir, RunStatus(state=RunState.SUCCEEDED, attempts=1, peak_rss_mb=321.0, peak_uss_mb=45.0))
    lines = [json.loads(line) for line in sweep.index_jsonl.read_text().splitlines()]
    assert lines[0] == {"run_id": "r0", "state": "running"}
    assert [(line["run_id"], line["state"]) for line in lines] == [("r0", "running"), ("r0", "succeeded")]
    peaks = recorder.measured_peaks()
    assert (peaks.uss_mb, peaks.rss_mb) == ({"ppo": [45.0]}, {"ppo": [321.0]}) and warnings == []


def test_a_status_that_cannot_be_written_is_a_warning(tmp_path):
    sweep = SweepDir(tmp_path)
    warnings = []
    recorder = StatusRecorder(sweep, warn=lambda run_id, message: warnings.append((run_id, message)))
    recorder.record(sweep.run("gone"), RunStatus(state=RunState.FAILED, attempts=1))  # its folder does not exist
    assert warnings == [("gone", f"cannot write {sweep.run('gone').status_json}: No such file or directory (ENOENT)")]
    assert not sweep.index_jsonl.exists()  # no line for a run whose status was not written
