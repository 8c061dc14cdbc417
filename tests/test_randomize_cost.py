"""The randomization cost benchmark (benchmarks/randomize_cost.py) at its --quick sizes: that it runs the three
conditions side by side and reports both figures for each randomized one (the figures themselves are not
asserted: at these sizes they are noise)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchmarks import randomize_cost
from helpers.models import REPO


def test_every_condition_goes_first_once_in_three_rounds():
    orders = [randomize_cost.order(r) for r in range(3)]
    assert all(sorted(o) == sorted(randomize_cost.CONDITIONS) for o in orders)
    for position in range(3):
        assert {o[position] for o in orders} == set(randomize_cost.CONDITIONS)


def test_the_quick_benchmark_reports_both_figures_for_each_randomized_condition(tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchmarks.randomize_cost", "--quick", "--json",
                           str(tmp_path / "cost.json"), "--markdown", str(tmp_path / "cost.md")],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((tmp_path / "cost.json").read_text())
    quick = randomize_cost.QUICK
    trainings = result["trainings"]
    assert sorted(t["condition"] for t in trainings) == ["field", "nominal", "structural"]
    for training in trainings:
        assert training["steps"] == quick.steps and training["updates"] == quick.steps // quick.ppo["n_steps"]
        assert training["episodes"] >= 1 and 0 < training["update_s"] < training["wall_s"]
    costs = {c["condition"]: c for c in result["costs"]}
    assert list(costs) == ["field", "structural"]
    verdicts = {v["condition"]: v for v in result["verdicts"]}
    assert {name: v["target"] for name, v in verdicts.items()} == {"field": 0.01, "structural": 0.05}
    for name, verdict in verdicts.items():
        cost = costs[name]
        mine = [t for t in trainings if t["condition"] == name]
        assert cost["length"] == round(sum(t["steps"] for t in mine) / sum(t["episodes"] for t in mine))
        assert cost["wrapped_us"] > 0 and cost["plain_us"] > 0
        assert cost["added_us"] == pytest.approx(cost["wrapped_us"] - cost["plain_us"], abs=0.02)
        added_s = verdict["episodes"] * cost["added_us"] * 1e-6  # episodes x what the wrapper adds to each
        assert verdict["share"] == pytest.approx(added_s / result["nominal_cpu_s"], rel=0.01, abs=1e-6)
        assert verdict["met"] == (verdict["share"] <= verdict["target"])
        assert verdict["ratio_low"] <= verdict["ratio"] <= verdict["ratio_high"]
        assert verdict["cpu_ratio_low"] <= verdict["cpu_ratio"] <= verdict["cpu_ratio_high"]
    table = (tmp_path / "cost.md").read_text()
    assert table == done.stdout
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    assert [row.split(" | ")[0] for row in rows] == ["| condition", "| nominal", "| field", "| structural"]
    assert all(row.count("|") == rows[0].count("|") for row in rows)


def test_a_bad_size_is_one_error_line():
    done = subprocess.run([sys.executable, "-m", "benchmarks.randomize_cost", "--steps", "0"], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr == "error: --steps must be at least 1, not 0\n" and done.stdout == ""
