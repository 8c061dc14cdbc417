"""Run-dir files: atomic JSON writes, corrupt files reported instead of crashing."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time

import pytest

from helpers.commands import run_sweep, write_spec
from mjsweep.sweepdir.files import CorruptFileError, RunDir, read_json, write_json_atomic
from mjsweep.sweepdir.models import RunState, RunStatus


def _rewrite_forever(path: str) -> None:
    run = RunDir(os.path.dirname(path))
    i = 0
    while True:
        i += 1
        run.write_status(RunStatus(state=RunState.RUNNING, attempts=i, error_tail="x" * (i % 5000)))


def test_status_is_valid_json_at_every_instant_even_when_the_writer_is_killed(tmp_path):
    run = RunDir(tmp_path)
    run.write_status(RunStatus())
    writer = multiprocessing.get_context("fork").Process(target=_rewrite_forever, args=(str(run.status_json),))
    writer.start()
    try:
        seen = set()
        deadline = time.monotonic() + 60
        while len(seen) < 200 and time.monotonic() < deadline:
            status = run.read_status()  # raises CorruptFileError on a torn write
            seen.add(status.attempts)
        assert len(seen) >= 200
    finally:
        os.kill(writer.pid, signal.SIGKILL)  # killed mid-write, at some instant
        writer.join()
    assert run.read_status().state is RunState.RUNNING
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "status.json"]
    assert all(name.startswith(".status.json.") for name in leftovers)  # only a temp file may remain


def test_read_json_reports_corrupt_files(tmp_path):
    path = tmp_path / "result.json"
    assert read_json(path) is None
    path.write_text('{"eval_mean_return": 1.')
    try:
        read_json(path)
    except CorruptFileError as exc:
        assert "not valid JSON" in str(exc) and str(path) in str(exc)
    else:
        raise AssertionError("a truncated file was accepted")
    write_json_atomic(path, {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}
    assert oct(path.stat().st_mode & 0o777) == "0o644"


@pytest.mark.parametrize(("junk", "problem"), [
    (b'{"eval_mean_ret', "not valid JSON"),  # truncated by a crash of some other tool
    pytest.param(bytes(range(256)), "unreadable", marks=pytest.mark.slow),  # garbled by a failing disk
])
def test_run_and_report_name_corrupt_files(tmp_path, tiny_spec, junk, problem):
    spec = write_spec(tmp_path, tiny_spec)
    assert run_sweep("run", str(spec)).returncode == 0
    sweep_dir = tmp_path / "runs" / "tiny"
    [run_dir] = [p for p in sweep_dir.iterdir() if (p / "spec.json").is_file()]
    (run_dir / "result.json").write_bytes(junk)

    report = run_sweep("report", str(sweep_dir))
    assert report.returncode == 0, report.stderr
    assert f"{run_dir / 'result.json'}: {problem}" in report.stdout

    dry = run_sweep("run", str(spec), "--dry-run")
    assert dry.returncode == 0 and "corrupt" in dry.stdout and "start" in dry.stdout

    rerun = run_sweep("run", str(spec))
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert problem in rerun.stdout and "running it again" in rerun.stdout
    assert json.loads((run_dir / "result.json").read_text())["timesteps"] == 512
