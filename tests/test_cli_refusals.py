"""Commands that refuse a bad folder argument: one error line, exit 2, nothing written."""

from __future__ import annotations

from helpers.commands import run_sweep
from helpers.fake_sweep import make_run, result, run_spec
from mjsweep.sweepdir.models import RunState


def finished_sweep(tmp_path):
    sweep = tmp_path / "sweep"
    make_run(sweep, run_spec("walker", 0), RunState.SUCCEEDED, result(1.0))
    return sweep


def test_verify_refuses_a_scratch_folder_inside_the_sweep_without_making_it(tmp_path):
    sweep = finished_sweep(tmp_path)
    done = run_sweep("verify", str(sweep), "--scratch", str(sweep / "again"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {sweep / 'again'}: the scratch folder must lie outside the sweep folder"]
    assert not (sweep / "again").exists()


def test_verify_refuses_a_scratch_folder_that_holds_the_run_already(tmp_path):
    sweep = finished_sweep(tmp_path)
    (tmp_path / "scratch" / "walker_s0").mkdir(parents=True)
    done = run_sweep("verify", str(sweep), "--scratch", str(tmp_path / "scratch"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'scratch'}: already holds walker_s0; give another --scratch"]


def test_video_to_another_folder_fails_in_one_line_when_it_cannot_draw(tmp_path):
    sweep = finished_sweep(tmp_path)
    done = run_sweep("video", str(sweep), "-o", str(tmp_path / "videos"))
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: sweep video: ")
    assert not (tmp_path / "videos").exists()


def test_reading_commands_refuse_a_file_or_a_missing_path_as_a_sweep_folder(tmp_path):
    """report, status and verify given a file (or nothing) in place of a sweep folder: exit 2, the one line saying
    so, and nothing written beside it (report once wrote nothing either but failed with exit 1 on FILE/sweep.lock)."""
    afile = tmp_path / "results.csv"
    afile.write_text("a,b\n")
    for command in ("report", "status", "verify"):
        done = run_sweep(command, str(afile))
        assert done.returncode == 2, (command, done.stderr)
        assert done.stderr.strip().splitlines() == [
            f"error: {afile}: not a sweep folder but a file; give the folder a sweep writes: <runs_dir>/<sweep name>"]
        done = run_sweep(command, str(tmp_path / "missing"))
        assert done.returncode == 2, (command, done.stderr)
        assert done.stderr.strip().splitlines() == [
            f"error: {tmp_path / 'missing'}: no such folder; give the folder a sweep writes: <runs_dir>/<sweep name>"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv"]
    assert afile.read_text() == "a,b\n"
