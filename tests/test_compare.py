"""Which group is better and how sure: P(A > B) with its interval and a plain verdict, in `sweep report`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers.commands import run_sweep
from helpers.fake_sweep import make_run, result, run_spec
from mjsweep.results.compare import compare, pick
from mjsweep.sweepdir.models import RunState

RNG = np.random.default_rng(7)
FAR = {"good": list(RNG.normal(100, 5, 5)), "bad": list(RNG.normal(0, 5, 5))}


def test_groups_far_apart_are_separated_and_the_verdict_names_the_better_and_the_seeds():
    [c] = compare(FAR)
    assert c.separated and c.p == 1.0 and c.seeds_needed is None
    assert c.verdict() == "good > bad (P = 1.00 [1.00, 1.00], 5 seeds each)"
    [reverse] = compare(FAR, [("bad", "good")])
    assert reverse.verdict() == "good > bad (P = 1.00 [1.00, 1.00], 5 seeds each)"  # said of the better one


def test_close_groups_are_not_separated_and_the_verdict_says_how_many_seeds_would_do():
    returns = {"a": [10.0, 12.0, 9.0, 14.0], "b": [9.5, 11.0, 8.0, 10.0]}
    [c] = compare(returns)
    assert not c.separated and c.p is not None and c.p > 0.5
    assert c.seeds_needed is not None and c.seeds_needed > 4
    assert c.verdict().startswith("a vs b: not separated with 4 seeds each (P(a > b) = ")
    assert c.verdict().endswith(f"; at the spread seen, about {c.seeds_needed} seeds each would separate them")
    more = {k: v * 8 for k, v in returns.items()}  # the same spread seen over 32 seeds each
    assert compare(more)[0].separated


def test_identical_groups_are_never_said_to_differ():
    [c] = compare({"a": [1.0, 2.0, 3.0], "b": [1.0, 2.0, 3.0]})
    assert c.p == 0.5 and not c.separated and c.seeds_needed is None
    assert c.verdict().endswith("no difference seen: more seeds may never separate them")


def test_a_group_with_one_seed_is_not_compared():
    [c] = compare({"a": [1.0], "b": [2.0, 3.0]})
    assert c.p is None and c.verdict() == "a vs b: too few seeds to compare (1 and 2 seeds; at least 2 each)"


def test_names_pick_a_group_by_its_report_name_or_its_variant():
    groups = ["a", "b ppo.gamma=0.9", "b ppo.gamma=0.99"]
    variants = {"a": "a", "b ppo.gamma=0.9": "b", "b ppo.gamma=0.99": "b"}
    assert pick([], groups, variants) is None
    assert pick(["a", "b ppo.gamma=0.9"], groups, variants) == [("a", "b ppo.gamma=0.9")]
    with pytest.raises(ValueError, match="'b': more than one group"):
        pick(["a", "b"], groups, variants)
    with pytest.raises(ValueError, match="'c': no group"):
        pick(["a", "c"], groups, variants)
    with pytest.raises(ValueError, match="no group or two"):
        pick(["a"], groups, variants)


def sweep_of_two_variants(folder):
    for seed, (good, bad) in enumerate(zip(FAR["good"], FAR["bad"], strict=True)):
        make_run(folder, run_spec("good", seed), RunState.SUCCEEDED, result(float(good)))
        make_run(folder, run_spec("bad", seed), RunState.SUCCEEDED, result(float(bad)))


def test_sweep_report_compare_prints_the_verdicts_and_json_and_report_md_carry_them(tmp_path):
    sweep_of_two_variants(tmp_path)
    table = run_sweep("report", str(tmp_path), "--compare")
    assert table.returncode == 0, table.stderr
    assert "good > bad (P = 1.00 [1.00, 1.00], 5 seeds each)" in table.stdout
    assert "- good > bad (P = 1.00" in (tmp_path / "report.md").read_text()
    data = json.loads(run_sweep("report", str(tmp_path), "--compare", "bad", "good", "--format", "json").stdout)
    [c] = data["comparisons"]
    assert (c["a"], c["b"], c["p"], c["low"], c["high"], c["seeds_a"], c["separated"]) == \
        ("bad", "good", 0.0, 0.0, 0.0, 5, True)
    assert "comparisons" not in json.loads(run_sweep("report", str(tmp_path), "--format", "json").stdout)


def test_bad_group_names_are_one_line_and_exit_2_with_nothing_written(tmp_path):
    sweep_of_two_variants(tmp_path)
    unknown = run_sweep("report", str(tmp_path), "--compare", "good", "nope")
    assert unknown.returncode == 2 and "'nope': no group of that name; the groups: " in unknown.stderr
    stray = run_sweep("report", str(tmp_path), "good", "bad")
    assert stray.returncode == 2 and "group names go with --compare" in stray.stderr
    assert not (tmp_path / "report.csv").exists() and not (tmp_path / "report.md").exists()
