"""Searches through the real `sweep` command: real workers on the tiny walker, real signals, real resume."""

from __future__ import annotations

import csv
import json
import signal
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from helpers.commands import launcher_output, run_dirs, run_sweep, start_sweep, wait_for, write_spec
from helpers.models import TINY_XML, legs_variant
from helpers.rendering import chromium, needs_browser
from mjsweep.search import pareto
from mjsweep.search.journal import replay
from mjsweep.search.samplers import RandomSampler
from mjsweep.spec.searchspace import SearchSpec
from mjsweep.sweepdir.files import RunDir
from mjsweep.sweepdir.models import TrialState
from mjsweep.ui.html_report import PARETO_CAPTION


def search_spec(tmp_path: Path, **search) -> Path:
    data = {
        "name": "tiny", "env": "HalfCheetah-v5", "max_episode_steps": 100,
        "variants": [{"name": "walker", "xml": str(TINY_XML)}], "total_timesteps": 512,
        "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1}, "eval": {"episodes": 1},
        "runs_dir": str(tmp_path / "runs"),
        "search": {"method": "random", "trials": 4, "seeds_per_trial": 2, "seed": 3,
                   "space": {"ppo.learning_rate": {"log_uniform": [1.0e-5, 1.0e-3]},
                             "ppo.gae_lambda": {"choice": [0.9, 0.95]}}, **search},
    }
    return write_spec(tmp_path, data)


def states(sweep_dir: Path) -> list[tuple[int, TrialState]]:
    return [(r.number, r.state) for r in replay(sweep_dir / "trials.jsonl")]


def test_dry_run_shows_the_same_first_trials_for_the_same_seed_and_starts_nothing(tmp_path):
    spec = search_spec(tmp_path)
    first, again = (run_sweep("run", str(spec), "--dry-run") for _ in range(2))
    assert first.returncode == 0, first.stdout + first.stderr
    assert "ppo.learning_rate: log_uniform [1e-05, 0.001]" in first.stdout and "seed 3" in first.stdout
    proposals = [line for line in first.stdout.splitlines() if "ppo.learning_rate=" in line]
    assert len(proposals) == 4 and proposals == [ln for ln in again.stdout.splitlines() if "ppo.learning_rate=" in ln]
    expected = RandomSampler(SearchSpec.model_validate(
        {"trials": 4, "space": {"ppo.learning_rate": {"log_uniform": [1.0e-5, 1.0e-3]},
                                "ppo.gae_lambda": {"choice": [0.9, 0.95]}}}).space, 3, 0).propose(0)
    assert f"ppo.learning_rate={expected['ppo.learning_rate']!r}" in proposals[0]
    other = run_sweep("run", str(search_spec(tmp_path / "other", seed=4)), "--dry-run")
    assert [ln for ln in other.stdout.splitlines() if "ppo.learning_rate=" in ln] != proposals
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_random_search_of_4_trials_x_2_seeds_ends_with_8_runs_and_a_ranked_report(tmp_path):
    spec = search_spec(tmp_path)
    proc = run_sweep("run", str(spec), "--workers", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sweep_dir = tmp_path / "runs" / "tiny"
    dirs = run_dirs(sweep_dir)
    assert len(dirs) == 8 and sorted({d.name[:4] for d in dirs}) == ["t000", "t001", "t002", "t003"]
    assert all(json.loads((d / "status.json").read_text())["state"] == "succeeded" for d in dirs)
    # forked from the template process, as the runs of a grid are (the default start here)
    assert {json.loads((d / "result.json").read_text())["started_by"] for d in dirs} == {"template"}
    records = replay(sweep_dir / "trials.jsonl")
    assert [(r.number, r.state, r.seeds_ok) for r in records] == [(n, TrialState.COMPLETE, 2) for n in range(4)]

    report = run_sweep("report", str(sweep_dir), env={"COLUMNS": "250"})
    assert report.returncode == 0, report.stderr
    assert "trials by eval_iqm, best first" in report.stdout
    best = max(records, key=lambda r: r.value or 0.0)
    assert f"best: trial {best.number} of walker" in report.stdout
    assert f"  learning_rate: {best.params['ppo.learning_rate']}" in report.stdout
    page = run_sweep("report", str(sweep_dir), "--format", "html")
    assert page.returncode == 0 and "Pareto" not in (sweep_dir / "report.html").read_text()  # one objective
    plot = run_sweep("plot", str(sweep_dir), "-o", str(tmp_path / "curves.svg"))
    assert plot.returncode == 0 and (tmp_path / "curves_search.svg").stat().st_size > 0

    again = run_sweep("run", str(spec), "--workers", "2")
    assert again.returncode == 0 and "8 succeeded" in again.stdout, again.stdout + again.stderr
    assert replay(sweep_dir / "trials.jsonl") == records and len(run_dirs(sweep_dir)) == 8


@pytest.mark.slow
def test_an_interrupted_search_resumes_without_new_or_repeated_trials(tmp_path):
    spec = search_spec(tmp_path, trials=2)
    data = spec.read_text().replace("total_timesteps: 512", "total_timesteps: 2048")
    spec.write_text(data.replace("eval:\n", "checkpoint_every: 256\neval:\n"))
    sweep_dir = tmp_path / "runs" / "tiny"
    proc = start_sweep(spec, "--workers", "1")
    first = wait_for(lambda: run_dirs(sweep_dir) and RunDir(run_dirs(sweep_dir)[0]).read_checkpoint(),
                     what="a checkpoint of the first run", timeout=300)
    assert first.timesteps >= 256
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=300) == 130, launcher_output(spec)
    assert states(sweep_dir) == [(0, TrialState.RUNNING)]

    again = run_sweep("run", str(spec), "--workers", "1")
    assert again.returncode == 0, again.stdout + again.stderr
    assert states(sweep_dir) == [(0, TrialState.COMPLETE), (1, TrialState.COMPLETE)]
    lines = (sweep_dir / "trials.jsonl").read_text().splitlines()
    asked = [json.loads(line)["number"] for line in lines if json.loads(line)["state"] == "running"]
    assert asked == [0, 1]  # each trial asked once, across both invocations
    resumed = RunDir(run_dirs(sweep_dir)[0])
    assert "resuming" in resumed.log.read_text()
    assert len(run_dirs(sweep_dir)) == 4


def seed_for(choices: list[float]) -> int:
    """A sampler seed whose first trials take these env_kwargs values in this order."""
    space = SearchSpec.model_validate({"trials": 2, "space": {"env_kwargs.ctrl_cost_weight": {"choice": [0.0, 500.0]}}})
    return next(seed for seed in range(1000)
                if [RandomSampler(space.space, seed, 0).propose(n)["env_kwargs.ctrl_cost_weight"]
                    for n in range(len(choices))] == choices)


@pytest.mark.slow
def test_a_trial_behind_the_median_is_stopped_and_recorded_as_pruned(tmp_path):
    # A control cost of 500 makes every step cost far more than the walker can earn: trial 1 falls behind
    # trial 0 at its first evaluation, and the median rule stops it there.
    spec = search_spec(tmp_path, trials=2, seeds_per_trial=1, seed=seed_for([0.0, 500.0]),
                       space={"env_kwargs.ctrl_cost_weight": {"choice": [0.0, 500.0]}},
                       prune={"method": "median", "after": 256})
    data = spec.read_text().replace("total_timesteps: 512", "total_timesteps: 8192")
    spec.write_text(data.replace("eval:\n", "eval:\n  every: 256\n"))
    proc = run_sweep("run", str(spec), "--workers", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sweep_dir = tmp_path / "runs" / "tiny"
    first, second = replay(sweep_dir / "trials.jsonl")
    assert first.state is TrialState.COMPLETE and second.state is TrialState.PRUNED, proc.stdout
    assert second.value is not None and second.value < first.value
    run = RunDir(sweep_dir / second.runs[0])
    status = json.loads(run.status_json.read_text())
    assert status["state"] == "pruned" and status["returncode"] == 130
    assert not run.result_json.exists() and run.read_checkpoint() is not None  # stopped as Ctrl-C stops a run
    assert "1 pruned" in proc.stdout
    report = run_sweep("report", str(sweep_dir), env={"COLUMNS": "250"})
    assert report.returncode == 0 and "pruned" in report.stdout
    again = run_sweep("run", str(spec), "--workers", "1")
    assert again.returncode == 0 and len(replay(sweep_dir / "trials.jsonl")) == 2  # never run again


@pytest.mark.slow
def test_tpe_searches_ppo_settings_and_a_robot_edit(tmp_path):
    pytest.importorskip("optuna")
    data = {
        "name": "legs", "env": "mjsweep/Locomotion-v0", "max_episode_steps": 50,
        "variants": [legs_variant()],
        "total_timesteps": 256, "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1}, "eval": {"episodes": 1},
        "runs_dir": str(tmp_path / "runs"),
        "search": {"method": "tpe", "trials": 3, "seeds_per_trial": 1, "seed": 0,
                   "space": {"ppo.learning_rate": {"log_uniform": [1.0e-5, 1.0e-3]},
                             "edits.legs": {"uniform": [0.8, 1.25]}}},
    }
    spec = write_spec(tmp_path, data)
    proc = run_sweep("run", str(spec), "--workers", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sweep_dir = tmp_path / "runs" / "legs"
    records = replay(sweep_dir / "trials.jsonl")
    assert [(r.number, r.state) for r in records] == [(n, TrialState.COMPLETE) for n in range(3)]
    for rec in records:
        [run_id] = rec.runs
        legs = rec.params["edits.legs"]
        assert 0.8 <= legs <= 1.25 and f"w_legs={legs!r}_" in run_id
        run_spec = json.loads((sweep_dir / run_id / "spec.json").read_text())
        assert run_spec["variant"] == f"w_legs={legs!r}" and run_spec["xml"].startswith(str(sweep_dir / "snapshots"))
    report = run_sweep("report", str(sweep_dir), env={"COLUMNS": "250"})
    assert "edit_grid:" in report.stdout and "legs:" in report.stdout
    # The searched values are data: a Run's fields, typed DataFrame columns, report.csv's columns.
    import mjsweep

    sweep = mjsweep.load(sweep_dir)
    by_run = {r.run_id: r for r in sweep.runs}
    for rec in records:
        [run_id] = rec.runs
        assert by_run[run_id].edits == {"legs": rec.params["edits.legs"]}
        assert by_run[run_id].grid["ppo.learning_rate"] == rec.params["ppo.learning_rate"]
    frame = sweep.to_dataframe()
    assert frame["legs"].dtype == "float64" and frame["ppo.learning_rate"].dtype == "float64"
    rows = list(csv.DictReader((sweep_dir / "report.csv").open()))
    assert sorted(float(r["legs"]) for r in rows) == sorted(rec.params["edits.legs"] for rec in records)


def test_a_bad_space_exits_2_with_one_line_and_writes_nothing(tmp_path):
    spec = search_spec(tmp_path, space={"ppo.learning_rate": {"log_uniform": [-1.0, 1.0e-3]}})
    proc = run_sweep("run", str(spec))
    assert proc.returncode == 2 and not (tmp_path / "runs").exists()
    [line] = proc.stderr.strip().splitlines()
    assert f"{spec}:" in line and "search.space.ppo.learning_rate: " in line and "bounds must be > 0" in line


@pytest.mark.slow
def test_a_multi_objective_robot_search_reports_its_pareto_front_and_resumes(tmp_path):
    pytest.importorskip("optuna")
    data = {
        "name": "design", "env": "mjsweep/Locomotion-v0", "max_episode_steps": 50,
        "variants": [legs_variant()],
        "total_timesteps": 256, "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1}, "eval": {"episodes": 2},
        "runs_dir": str(tmp_path / "runs"),
        "search": {"method": "tpe", "trials": 4, "seeds_per_trial": 1, "seed": 0,
                   "objective": [{"metric": "eval_iqm", "direction": "maximize"},
                                 {"metric": "mass", "direction": "minimize"},
                                 {"metric": "info:forward_velocity", "direction": "maximize"}],
                   "space": {"edits.legs": {"uniform": [0.8, 1.25]}}},
    }
    spec = write_spec(tmp_path, data)
    proc = run_sweep("run", str(spec), "--workers", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sweep_dir = tmp_path / "runs" / "design"
    records = replay(sweep_dir / "trials.jsonl")
    assert [(r.number, r.state) for r in records] == [(n, TrialState.COMPLETE) for n in range(4)]
    for rec in records:
        result = json.loads((sweep_dir / rec.runs[0] / "result.json").read_text())
        assert rec.values == [result["eval_mean_return"], rec.values[1], result["eval_info"]["forward_velocity"]]
    by_legs = sorted(records, key=lambda r: r.params["edits.legs"])
    assert [r.values[1] for r in by_legs] == sorted(r.values[1] for r in records)  # longer legs weigh more

    report = run_sweep("report", str(sweep_dir), env={"COLUMNS": "250"})
    assert report.returncode == 0, report.stderr
    assert "trials by Pareto front (objectives eval_iqm (maximize), mass (minimize)" in report.stdout
    assert "Pareto front:" in report.stdout and f"figure: {sweep_dir / 'report_pareto.svg'}" in report.stdout
    assert (sweep_dir / "report_pareto.svg").read_bytes().startswith(b"<?xml")
    markdown = (sweep_dir / "report.md").read_text()
    assert "![Pareto front](report_pareto.svg)" in markdown
    lightest = by_legs[0]  # the lightest robot is on the front whatever it learned
    assert f"trial {lightest.number} of w: eval_iqm" in report.stdout
    assert f"  legs:\n  - {lightest.params['edits.legs']}" in report.stdout  # its spec keys, ready to paste
    plot = run_sweep("plot", str(sweep_dir), "-o", str(tmp_path / "curves.svg"))
    assert plot.returncode == 0 and (tmp_path / "curves_pareto.svg").stat().st_size > 0

    again = run_sweep("run", str(spec), "--workers", "2")
    assert again.returncode == 0 and "4 succeeded" in again.stdout, again.stdout + again.stderr
    assert replay(sweep_dir / "trials.jsonl") == records


@pytest.mark.slow
def test_a_search_of_return_against_cpu_seconds_reports_both_on_its_pareto_front(tmp_path):
    objectives = [{"metric": "eval_iqm", "direction": "maximize"},
                  {"metric": "cpu_seconds", "direction": "minimize"}]
    spec = search_spec(tmp_path, trials=3, objective=objectives)
    proc = run_sweep("run", str(spec), "--workers", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sweep_dir = tmp_path / "runs" / "tiny"
    records = replay(sweep_dir / "trials.jsonl")
    assert [r.state for r in records] == [TrialState.COMPLETE] * 3
    for rec in records:
        results = [json.loads((sweep_dir / run_id / "result.json").read_text()) for run_id in rec.runs]
        assert all(r["cpu_s"] > 0 for r in results)  # the worker's own CPU time, measured
        assert rec.values[1] == pytest.approx(sum(r["cpu_s"] for r in results))  # a trial's cost: its seeds'

    report = run_sweep("report", str(sweep_dir), "-f", "json")
    assert report.returncode == 0, report.stderr
    markdown = (sweep_dir / "report.md").read_text()
    assert "objectives eval_iqm (maximize), cpu_seconds (minimize)" in markdown
    assert "| eval_iqm | cpu_seconds |" in markdown and "## Pareto front" in markdown
    on_front = [r for r in records if r.number in {t["number"] for t in json.loads(report.stdout)["trials"]
                                                   if t.get("pareto_rank") == 0}]
    cheapest = min(records, key=lambda r: (r.values[1], -r.values[0]))  # of the cheapest, the best learner
    assert cheapest in on_front  # is on the front whatever it learned
    for trial in json.loads(report.stdout)["trials"]:  # every trial's cost, an objective or not
        rec = next(r for r in records if r.number == trial["number"])
        assert trial["cpu_seconds"] == pytest.approx(rec.values[1]) and trial["env_steps"] == 2 * 512


@pytest.mark.slow
@needs_browser
def test_report_html_shows_a_multi_objective_searchs_pareto_front_in_chromium(tmp_path):
    from selenium.webdriver.common.by import By

    # The tiny walker's leg length and motor strength, as configs/ant_design.yaml searches the Ant's.
    data = {
        "name": "design", "env": "HalfCheetah-v5", "max_episode_steps": 100,
        "variants": [{"name": "walker", "base": str(TINY_XML),
                      "edits": [{"scale_body": {"body": ["front_leg", "back_leg"], "factor": "${legs}"}},
                                {"gear": {"actuator": ["front_hip", "back_hip"], "factor": "${strength}"}}],
                      "edit_grid": {"legs": [0.8, 1.25], "strength": [0.5, 1.5]}}],
        "total_timesteps": 512, "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1}, "eval": {"episodes": 1},
        "runs_dir": str(tmp_path / "runs"),
        "search": {"method": "random", "trials": 4, "seeds_per_trial": 1, "seed": 0,
                   "objective": [{"metric": "eval_iqm", "direction": "maximize"},
                                 {"metric": "mass", "direction": "minimize"},
                                 {"metric": "total_gear", "direction": "minimize"}],
                   "space": {"edits.legs": {"uniform": [0.8, 1.25]}, "edits.strength": {"uniform": [0.5, 1.5]}}},
    }
    spec = write_spec(tmp_path, data)
    # report.html as `sweep run` has it built once the runs ended (`sweep report --format html` in a child)
    proc = run_sweep("run", str(spec), "--workers", "2", "--report-every", "60s")
    assert proc.returncode == 0 and "not rewritten" not in proc.stderr, proc.stdout + proc.stderr
    sweep_dir = tmp_path / "runs" / "design"
    records = replay(sweep_dir / "trials.jsonl")
    assert [r.state for r in records] == [TrialState.COMPLETE] * 4
    on_front = [records[i] for i in pareto.front([r.values for r in records], [True, False, False])]
    expected = sorted(on_front, key=lambda r: -r.values[0])  # the front ranked by the first objective
    lightest = min(records, key=lambda r: r.values[1])
    weakest = min(records, key=lambda r: r.values[2])
    assert lightest is not weakest and {lightest.number, weakest.number} <= {r.number for r in on_front}

    with chromium(tmp_path / "profile") as driver:
        driver.get((sweep_dir / "report.html").as_uri())
        assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
        table = driver.find_element(By.CSS_SELECTOR, "table.pareto")
        assert table.is_displayed()
        head = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
        assert head == ["study", "trial", "eval_iqm", "mass", "total_gear", "spec keys"]
        shown = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
                 for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
        assert [row[:5] for row in shown] == [["walker", str(r.number), *(f"{v:.4g}" for v in r.values)]
                                              for r in expected]
        for row, rec in zip(shown, expected, strict=True):  # the spec keys to paste, as the block reads
            assert row[5] == ("edit_grid:  # under the variant, in place of the searched axes\n"
                              f"  legs:\n  - {rec.params['edits.legs']}\n"
                              f"  strength:\n  - {rec.params['edits.strength']}")
        figure = driver.execute_script(
            "const i = [...document.images].find(i => i.alt === arguments[0]);"
            "return i && [i.complete, i.naturalWidth, i.getBoundingClientRect().height];", PARETO_CAPTION)
    loaded, width, height = figure
    # the figure `sweep report` drew beside report.md, one panel per pair of objectives
    drawn = float(ET.parse(sweep_dir / "report_pareto.svg").getroot().get("width", "0"))
    assert loaded and drawn > 0 and abs(width - drawn) < 1 and height > 0
