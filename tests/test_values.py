"""Values as data: every grid value and edit-grid value of a run is a field of its `Run`, a typed column of
`Sweep.to_dataframe()`, a column of report.csv and a key of the report's JSON, never only part of a name.
Through `sweep run`, `sweep report` and `mjsweep.load`, on the tiny walker and on ANYmal C."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import mjsweep
from helpers.commands import run_sweep, write_spec
from helpers.fake_sweep import make_run, result, run_spec
from helpers.models import TINY_XML
from mjsweep.results.report import value_columns
from mjsweep.sweepdir.models import RunState

ANYMAL = Path(__file__).resolve().parents[2] / "shared" / "robots" / "anybotics_anymal_c" / "scene.xml"


def edited_walker(tmp_path: Path, tiny_spec: dict) -> Path:
    """The tiny walker with its torso's mass scaled over an edit grid, and a grid key (gamma): 2 runs."""
    tiny_spec["variants"] = [{"name": "w", "base": str(TINY_XML),
                              "edits": [{"mass": {"body": "torso", "factor": "${torso}"}}],
                              "edit_grid": {"torso": [1.0, 1.5]}}]
    tiny_spec["grid"] = {"ppo.gamma": [0.99]}
    tiny_spec["total_timesteps"] = 128
    return write_spec(tmp_path, tiny_spec)


def test_a_folders_values_reach_the_report_and_the_dataframe(tmp_path):
    """Run folders as spec.json describes them (two edit-grid points, a grid key, two seeds each), read by
    `sweep report` and mjsweep.load; a run of a spec.json from before `edits` reads as no edit values."""
    folder = tmp_path / "fake"
    for torso in (1.0, 1.5):
        for seed in range(2):
            spec = run_spec(f"w_torso={torso!r}", seed, grid={"ppo.gamma": 0.99}, edits={"torso": torso})
            make_run(folder, spec, RunState.SUCCEEDED, result=result(10 * torso + seed))
    report = run_sweep("report", str(folder), "--format", "json")
    assert report.returncode == 0, report.stderr
    groups = json.loads(report.stdout)["groups"]
    assert sorted((g["edits"]["torso"], g["grid"]["ppo.gamma"], g["runs"]) for g in groups) == [
        (1.0, 0.99, 2), (1.5, 0.99, 2)]
    rows = list(csv.DictReader((folder / "report.csv").open()))
    assert sorted((float(r["torso"]), float(r["ppo.gamma"])) for r in rows) == [(1.0, 0.99), (1.5, 0.99)]
    frame = mjsweep.load(folder).to_dataframe()
    assert frame["torso"].dtype == "float64"
    assert frame.groupby("torso")["final_return"].mean().to_dict() == {1.0: 10.5, 1.5: 15.5}

    old = tmp_path / "old"
    spec = run_spec("w", 0).model_dump(mode="json")
    del spec["edits"]
    make_run(old, run_spec("w", 0), RunState.SUCCEEDED, result=result(1.0))
    (old / "w_s0" / "spec.json").write_text(json.dumps(spec))
    [run] = mjsweep.load(old).runs
    assert run.edits == {} and "torso" not in mjsweep.load(old).to_dataframe().columns


@pytest.mark.slow
def test_grid_and_edit_values_are_fields_columns_and_keys(tmp_path, tiny_spec):
    done = run_sweep("run", str(edited_walker(tmp_path, tiny_spec)), "--workers", "2", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    sweep_dir = tmp_path / "runs" / "tiny"
    report = run_sweep("report", str(sweep_dir), "--format", "json")
    assert report.returncode == 0, report.stderr

    sweep = mjsweep.load(sweep_dir)
    expected = {(1.0, 0.99), (1.5, 0.99)}
    assert {(r.edits["torso"], r.grid["ppo.gamma"]) for r in sweep.runs} == expected
    for run in sweep.runs:
        assert run.variant == f"w_torso={run.edits['torso']!r}"

    frame = sweep.to_dataframe()
    assert frame["torso"].dtype == "float64" and frame["ppo.gamma"].dtype == "float64"
    assert set(zip(frame["torso"], frame["ppo.gamma"], strict=True)) == expected
    assert frame.groupby("torso")["final_return"].count().to_dict() == {1.0: 1, 1.5: 1}

    rows = list(csv.DictReader((sweep_dir / "report.csv").open()))
    assert {(float(r["torso"]), float(r["ppo.gamma"])) for r in rows} == expected

    groups = json.loads(report.stdout)["groups"]
    assert {(g["edits"]["torso"], g["grid"]["ppo.gamma"]) for g in groups} == expected


def test_a_value_named_like_a_fixed_column_keeps_both():
    """An edit label `seed` cannot take the seed's column: it is edit_seed; a grid key `algo`, grid_algo."""
    grids, edits = value_columns([{"algo": "ppo", "ppo.gamma": 0.9}], [{"seed": 1.25, "ppo.gamma": 2}],
                                 ["seed", "algo"])
    assert grids == {"algo": "grid_algo", "ppo.gamma": "ppo.gamma"}
    assert edits == {"seed": "edit_seed", "ppo.gamma": "edit_ppo.gamma"}


@pytest.mark.slow
@pytest.mark.skipif(not ANYMAL.is_file(), reason=f"{ANYMAL} is not there")
def test_anymal_edit_grid_values_are_data(tmp_path):
    """ANYmal C with its mass and shank length over an edit grid (issue 45's sweep), a short run each."""
    spec = {"name": "anymal", "env": "mjsweep/Locomotion-v0", "env_kwargs": {"forward_axis": "root"},
            "variants": [{"name": "anymal", "base": str(ANYMAL),
                          "edits": [{"mass": {"body": "base", "factor": "${base_mass}"}},
                                    {"scale_body": {"body": "*_SHANK", "factor": "${shank}"}}],
                          "edit_grid": {"base_mass": [1.0, 1.2], "shank": [0.9]}}],
            "seeds": 1, "total_timesteps": 128, "max_episode_steps": 100,
            "ppo": {"n_steps": 64, "batch_size": 32, "n_epochs": 1}, "eval": {"episodes": 1}, "runs_dir": "runs"}
    done = run_sweep("run", str(write_spec(tmp_path, spec)), "--workers", "2", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    sweep_dir = tmp_path / "runs" / "anymal"
    frame = mjsweep.load(sweep_dir).to_dataframe()
    assert sorted(zip(frame["base_mass"], frame["shank"], strict=True)) == [(1.0, 0.9), (1.2, 0.9)]
    assert frame["base_mass"].dtype == "float64"
    report = run_sweep("report", str(sweep_dir), "--format", "json")
    assert sorted(g["edits"]["base_mass"] for g in json.loads(report.stdout)["groups"]) == [1.0, 1.2]
    assert sorted(float(r["base_mass"]) for r in csv.DictReader((sweep_dir / "report.csv").open())) == [1.0, 1.2]
