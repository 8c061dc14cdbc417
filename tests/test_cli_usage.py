"""A bad option is one `error:` line naming the option and the value, exit 2, and nothing written: through the
real `sweep` console script and through typer's CliRunner, for a value of the wrong type, out of range, not
among an option's choices, a bad duration, a missing value, an unknown option."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from helpers.commands import run_sweep
from mjsweep.ui.cli import app
from mjsweep.ui.usage import given

SMOKE = Path(__file__).resolve().parents[1] / "configs" / "smoke.yaml"


@pytest.mark.parametrize(("args", "line"), [
    (["--timeout", "abc"], "error: --timeout 'abc': not a duration like 90m, 2h, 1h30m or 45s"),
    (["--backend", "k8s"], "error: --backend 'k8s': expected local, ray or slurm"),
    (["--start=fork"], "error: --start 'fork': expected auto, template or exec"),
    (["--order", "depth"], "error: --order 'depth': expected breadth or variant"),
    (["--workers", "many"], "error: --workers 'many': input should be a valid integer"),
    (["-w", "0"], "error: --workers '0': input should be greater than or equal to 1"),
    (["--grace", "-1"], "error: --grace '-1': input should be greater than or equal to 0"),
    (["--report-every", "soon"], "error: --report-every 'soon': not a duration"),
    (["--timeout"], "error: option '--timeout' requires an argument."),
    (["--bogus"], "error: no such option: --bogus"),
])
def test_a_bad_run_option_is_one_error_line_and_exit_2_with_nothing_written(tmp_path, args, line):
    done = run_sweep("run", str(SMOKE), "--runs-dir", str(tmp_path / "runs"), *args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [done.stderr.strip()] and done.stderr.startswith(line), done.stderr
    assert done.stdout == "" and not (tmp_path / "runs").exists()


def test_a_bad_value_from_the_environment_is_named_with_its_option(tmp_path):
    done = run_sweep("run", str(SMOKE), "--runs-dir", str(tmp_path / "runs"), "--dry-run",
                     env={"MJSWEEP_REPORT_EVERY": "later"})
    assert done.returncode == 2
    assert done.stderr.strip() == "error: --report-every 'later': not a duration like 90m, 2h, 1h30m or 45s"


@pytest.mark.parametrize(("args", "line"), [
    (["report", "somewhere", "--format", "xls"], "error: --format 'xls': expected table, csv, md, json or html"),
    (["report", "somewhere", "--rank", "worst"], "error: --rank 'worst': expected final or best"),
    (["status", "somewhere", "--interval", "0.1"], "error: --interval '0.1': input should be greater than or"),
    (["evaluate", "somewhere", "--episodes", "two"], "error: --episodes 'two': input should be a valid integer"),
    (["bench", "--steps=0"], "error: --steps '0': input should be greater than or equal to 1"),
    (["run"], "error: missing argument"),
    (["launch"], "error: no such command 'launch'"),
])
def test_every_commands_bad_options_are_one_line_through_typers_runner(args, line):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [result.stderr.strip()], result.stderr
    assert result.stderr.startswith(line), result.stderr
    assert "╭" not in result.output and "Usage:" not in result.output


def test_no_command_at_all_still_shows_the_help_and_exits_2():
    result = CliRunner().invoke(app, [])
    assert result.exit_code == 2 and "Usage:" in result.output and "error:" not in result.output


def test_the_value_is_found_in_every_spelling_of_the_option(monkeypatch):
    opts = ["--workers", "-w"]
    assert given(["run", "x.yaml", "-w", "3"], opts) == "3"
    assert given(["run", "--workers=4", "x.yaml"], opts) == "4"
    assert given(["run", "-w", "1", "--workers", "5"], opts) == "5"  # the last one given is the one parsed
    assert given(["run", "x.yaml"], opts) is None
    monkeypatch.setenv("MJSWEEP_TEST_EVERY", "9m")
    assert given(["run", "x.yaml"], ["--report-every"], "MJSWEEP_TEST_EVERY") == "9m"
