"""The report's held-out physics section: per group over seeds, the mean over draws, the 10th percentile and the
fraction at the threshold with their t intervals, and which group is more robust with seeds as the units, in
every format."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from helpers.commands import run_sweep
from helpers.fake_sweep import make_run, result, run_spec
from mjsweep.results import stats
from mjsweep.results.physics_report import read
from mjsweep.results.rows import collect
from mjsweep.results.sections import Table
from mjsweep.sweepdir.files import SweepDir, write_model
from mjsweep.sweepdir.models import PhysicsEval, RunState

RANDOMIZE = [{"mass": {"body": "torso", "factor": {"uniform": [0.5, 2.0]}}, "per": "episode"}]
SETTINGS = {"draws": 5, "seed": 3, "threshold": 10.0, "randomize": RANDOMIZE}
# Per seed, the returns on the five draws: "sturdy" keeps its return on every draw, "brittle" loses it on most.
RETURNS = {
    "sturdy": [[12, 11, 13, 12, 10], [11, 12, 12, 13, 11], [13, 12, 11, 12, 12], [12, 13, 12, 11, 12],
               [11, 11, 12, 13, 12], [12, 12, 13, 11, 10]],
    "brittle": [[14, 2, 1, 3, 12], [15, 1, 2, 2, 3], [13, 3, 2, 11, 1], [14, 2, 3, 1, 2], [16, 1, 1, 2, 3],
                [15, 2, 12, 1, 2]],
}


def _sweep(tmp_path, settings_of=lambda variant: SETTINGS):
    folder = tmp_path / "fake"
    for variant, seeds in RETURNS.items():
        for seed, returns in enumerate(seeds):
            settings = settings_of(variant)
            spec = run_spec(variant, seed, physics_eval=settings)
            run = make_run(folder, spec, RunState.SUCCEEDED, result(float(np.mean(returns))))
            write_model(run.physics_eval_json, PhysicsEval(settings=settings, deterministic=True,
                                                           values=[{"randomize[0].mass.factor": 1.0}] * 5,
                                                           returns=[float(r) for r in returns], lengths=[40] * 5,
                                                           eval_s=0.1))
    return folder


def test_each_group_over_seeds_and_the_more_robust_one(tmp_path):
    folder = SweepDir(_sweep(tmp_path))
    physics = read(folder, collect(folder), ["brittle", "sturdy"])
    assert physics is not None
    assert [g.group for g in physics.groups] == ["brittle", "sturdy"]
    brittle = physics.groups[0]
    assert [s.mean for s in brittle.seeds] == [float(np.mean(r)) for r in RETURNS["brittle"]]
    assert [s.p10 for s in brittle.seeds] == [float(np.percentile(r, 10)) for r in RETURNS["brittle"]]
    assert [s.fraction for s in brittle.seeds] == [np.mean(np.array(r) >= 10) for r in RETURNS["brittle"]]
    means = [float(np.mean(r)) for r in RETURNS["brittle"]]
    assert brittle.summary("mean") == (float(np.mean(means)), *stats.mean_interval(means))
    [verdict] = physics.comparisons
    assert verdict.separated and verdict.p == 0.0  # every sturdy seed beats every brittle one on the draws
    assert verdict.verdict().startswith("sturdy > brittle")


def test_one_seed_has_its_numbers_and_no_interval(tmp_path):
    folder = SweepDir(_sweep(tmp_path))
    rows = [r for r in collect(folder) if r.run_id in ("sturdy_s0", "brittle_s0")]
    physics = read(folder, rows, ["sturdy", "brittle"])
    assert physics is not None
    assert physics.groups[0].summary("mean") == (float(np.mean(RETURNS["sturdy"][0])), None, None)
    [table] = [block for block in physics.section().blocks if isinstance(block, Table)]
    assert table.rows[0][:4] == ("sturdy", "1", "5", "11.60")  # the mean alone, no [x, x]
    assert physics.csv_columns()["sturdy"]["physics_mean_ci95_low"] is None
    assert "too few seeds" in physics.comparisons[0].verdict()


def test_groups_evaluated_on_other_draws_are_not_compared(tmp_path):
    other = {**SETTINGS, "randomize": [{**RANDOMIZE[0], "mass": {"body": "torso", "factor": {"uniform": [0.9, 1.1]}}}]}
    folder = SweepDir(_sweep(tmp_path, lambda variant: other if variant == "sturdy" else SETTINGS))
    physics = read(folder, collect(folder), ["sturdy", "brittle"])
    assert physics is not None and physics.comparisons == []
    assert "No two groups met the same draws" in str(physics.section())


def test_a_stale_evaluation_is_left_out(tmp_path):
    folder = SweepDir(_sweep(tmp_path))
    stale = PhysicsEval.model_validate_json(folder.run("sturdy_s0").physics_eval_json.read_text())
    write_model(folder.run("sturdy_s0").physics_eval_json, stale.model_copy(update={"settings": {**SETTINGS,
                                                                                              "draws": 4}}))
    physics = read(folder, collect(folder), ["sturdy", "brittle"])
    assert physics is not None and len(physics.groups[0].seeds) == 5


def test_report_csv_has_each_groups_held_out_columns(tmp_path):
    folder = _sweep(tmp_path)
    shown = run_sweep("report", str(folder), "--format", "csv")
    assert shown.returncode == 0, shown.stderr
    rows = {row["variant"]: row for row in csv.DictReader(io.StringIO(shown.stdout))}
    means = [float(np.mean(r)) for r in RETURNS["brittle"]]
    low, high = stats.mean_interval(means)
    assert float(rows["brittle"]["physics_mean"]) == pytest.approx(np.mean(means), rel=1e-3)
    assert float(rows["brittle"]["physics_mean_ci95_low"]) == pytest.approx(low, rel=1e-3)
    assert float(rows["brittle"]["physics_mean_ci95_high"]) == pytest.approx(high, rel=1e-3)
    assert float(rows["sturdy"]["physics_fraction"]) == 1.0
    assert {"physics_p10", "physics_p10_ci95_low", "physics_fraction_ci95_high"} <= set(rows["sturdy"])
    assert (folder / "report.csv").read_text() == shown.stdout


def test_report_html_has_the_section_and_its_table(tmp_path):
    folder = _sweep(tmp_path)
    shown = run_sweep("report", str(folder), "--format", "html")
    assert shown.returncode == 0, shown.stderr
    page = (folder / "report.html").read_text()
    assert "held-out physics" in page and 'class="robustness"' in page and "sturdy &gt; brittle" in page


@pytest.mark.parametrize("fmt", ["table", "md", "json"])
def test_sweep_report_shows_the_section(tmp_path, fmt):
    folder = _sweep(tmp_path)
    shown = run_sweep("report", str(folder), "--format", fmt)
    assert shown.returncode == 0, shown.stderr
    if fmt == "json":
        data = json.loads(shown.stdout)["held_out_physics"]
        assert [g["group"] for g in data["groups"]] == ["sturdy", "brittle"]
        assert data["groups"][0]["fraction"]["mean"] == pytest.approx(np.mean([np.mean(np.array(r) >= 10)
                                                                                for r in RETURNS["sturdy"]]))
        assert data["comparisons"][0]["separated"] is True
        return
    text = shown.stdout
    assert ("## Held-out physics" if fmt == "md" else "held-out physics") in text
    assert "10th percentile" in text and "sturdy > brittle" in text
    assert (folder / "report.md").read_text().count("Held-out physics") == 1


def test_the_api_hands_out_the_held_out_report_and_refuses_a_sweep_without_one(tmp_path):
    import mjsweep

    physics = mjsweep.load(_sweep(tmp_path)).held_out()
    assert isinstance(physics, mjsweep.PhysicsReport)
    assert sorted(g.group for g in physics.groups) == ["brittle", "sturdy"]
    [verdict] = physics.comparisons
    assert verdict.verdict().startswith("sturdy > brittle")
    plain = tmp_path / "plain"
    make_run(plain, run_spec("walker", 0), RunState.SUCCEEDED, result(1.0))
    with pytest.raises(mjsweep.InputError, match="no held-out physics evaluation"):
        mjsweep.load(plain).held_out()
