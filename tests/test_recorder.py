"""The StatusRecorder: status.json for every change, an index line for every end, a warning for a failed write."""

from __future__ import annotations

import json

from mjsweep.recorder import StatusRecorder
from mjsweep.rundir import RunState, RunStatus, SweepDir


def test_status_for_every_change_and_an_index_line_for_each_end(tmp_path):
    sweep = SweepDir(tmp_path)
    run_dir = sweep.run("r0")
    run_dir.path.mkdir()
    warnings = []
    recorder = StatusRecorder(sweep, lambda d: {"run_id": d.run_id, "state": d.read_status().state.value},
                              warn=lambda run_id, message: warnings.append((run_id, message)))
    recorder.restarting("r0")
    recorder.record(run_dir, RunStatus(state=RunState.RUNNING, attempts=1))
    assert recorder.previous(run_dir).state is RunState.RUNNING
    recorder.record(run_dir, RunStatus(state=RunState.SUCCEEDED, attempts=1, peak_rss_mb=321.0))
    lines = [json.loads(line) for line in sweep.index_jsonl.read_text().splitlines()]
    assert lines == [{"run_id": "r0", "state": "running"}, {"run_id": "r0", "state": "succeeded"}]
    assert recorder.measured_peaks_mb() == []  # a run dir without spec.json is not a run of the sweep
    run_dir.spec_json.write_text("{}")
    assert recorder.measured_peaks_mb() == [321.0] and warnings == []


def test_a_status_that_cannot_be_written_is_a_warning(tmp_path):
    sweep = SweepDir(tmp_path)
    warnings = []
    recorder = StatusRecorder(sweep, lambda d: {}, warn=lambda run_id, message: warnings.append((run_id, message)))
    recorder.record(sweep.run("gone"), RunStatus(state=RunState.FAILED, attempts=1))  # its folder does not exist
    assert [run_id for run_id, _ in warnings] == ["gone"] and "cannot write status.json" in warnings[0][1]
    assert not sweep.index_jsonl.exists()  # no line for a run whose status was not written
