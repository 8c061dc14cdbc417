"""The answer first: a plain `sweep report` and report.html open with which group leads and whether it is
separated (`sweep run`'s end summary: tests/test_live.py's smoke sweep), and the terminal table fits 100
columns, leaving out whole columns by a stated rule."""

from __future__ import annotations

import re
from pathlib import Path

from helpers.commands import run_sweep
from helpers.fake_sweep import make_run, result, run_spec
from helpers.terminal import on_terminal
from mjsweep.results.answer import MOST_GROUPS, answer
from mjsweep.results.compare import compare
from mjsweep.results.report import GroupRow
from mjsweep.sweepdir.models import RunState
from mjsweep.ui.console_tables import DROPPED_FIRST, REPORT_COLUMNS

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def three_groups(folder: Path, seeds: int) -> Path:
    """long (returns 100, 110, ...) above mid (50, 51, ...) above short (1, 2, ...), each over `seeds` seeds."""
    for seed in range(seeds):
        make_run(folder, run_spec("long", seed), RunState.SUCCEEDED, result=result(10.0 * (seed + 10)))
        make_run(folder, run_spec("mid", seed), RunState.SUCCEEDED, result=result(float(seed + 50)))
        make_run(folder, run_spec("short", seed), RunState.SUCCEEDED, result=result(float(seed + 1)))
    return folder


def test_a_plain_report_opens_with_the_leader_separated(tmp_path):
    folder = three_groups(tmp_path / "sep", 8)
    done = run_sweep("report", str(folder))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == ("answer: long leads (mean 135.00), separated from every other group at "
                                           f"95%; details: sweep report {folder} --compare")


def test_a_plain_report_says_why_the_leader_is_not_separated(tmp_path):
    folder = three_groups(tmp_path / "few", 3)
    first = run_sweep("report", str(folder)).stdout.splitlines()[0]
    assert first == ("answer: long leads (mean 110.00), not separated from mid, short at 95%: 3 vs 3 seeds cannot "
                     f"separate anything; details: sweep report {folder} --compare")


def test_one_group_has_no_answer_to_give(tmp_path):
    folder = tmp_path / "one"
    for seed in range(3):
        make_run(folder, run_spec("only", seed), RunState.SUCCEEDED, result=result(float(seed)))
    assert not any(line.startswith("answer:") for line in run_sweep("report", str(folder)).stdout.splitlines())


def test_the_leader_not_separated_from_one_group_names_that_group():
    returns = {"a": [10.0 + i for i in range(8)], "b": [9.5 + i for i in range(8)], "c": [float(i) for i in range(8)]}
    groups = [GroupRow(name, name, {}, 8, 8, 0, sum(r) / 8, 1.0, None) for name, r in returns.items()]
    line = answer(groups, compare(returns), "sweep report X --compare")
    assert line == "answer: a leads (mean 13.50), not separated from b at 95%; details: sweep report X --compare"


def test_report_html_opens_with_the_answer(tmp_path):
    folder = three_groups(tmp_path / "sep", 8)
    assert run_sweep("report", str(folder), "--format", "html").returncode == 0
    page = (folder / "report.html").read_text()
    body = page[page.index("<body>"):]
    first = re.findall(r"<(h1|p|table|h2)[ >]", body)[:2]
    assert first == ["h1", "p"] and '<p class="answer">answer: long leads (mean 135.00), separated' in body
    assert body.index('class="answer"') < body.index("<table")


def test_the_report_table_fits_a_100_column_terminal_leaving_out_whole_columns(tmp_path):
    folder = three_groups(tmp_path / "sep", 8)
    code, text = on_terminal("report", str(folder), env={}, columns=100)
    assert code == 0, text
    lines = ANSI.sub("", text).replace("\r", "").splitlines()
    assert max(len(line) for line in lines if not line.startswith(("answer:", "left out"))) <= 100
    header = next(line for line in lines if "variant" in line and "mean" in line)
    shown = [col for col in REPORT_COLUMNS if col in header]
    left_out = [col for col in REPORT_COLUMNS if col not in shown]
    # Whole columns, the first of the drop order, and said under the table.
    assert left_out and set(left_out) == set(DROPPED_FIRST[:len(left_out)])
    assert f"left out to fit 100 columns: {', '.join(left_out)} " in " ".join(lines)
    row = next(line for line in lines if line.startswith("│ long"))
    assert "135.00" in row and "[" in row and "]" in row  # the mean and its interval whole on the row


def test_above_twenty_groups_the_answer_names_the_leader_and_leaves_the_tests_to_compare(tmp_path):
    folder = tmp_path / "many"
    for i in range(MOST_GROUPS + 1):
        make_run(folder, run_spec(f"v{i:02d}", 0), RunState.SUCCEEDED, result=result(float(i)))
    first = run_sweep("report", str(folder)).stdout.splitlines()[0]
    assert first == (f"answer: v20 leads (mean 20.00) of 21 groups, too many to test every pair here; whether it is "
                     f"separated: sweep report {folder} --compare")
