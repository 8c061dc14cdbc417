"""Warm starts through the real `sweep` command: a source run trained on the tiny walker, then runs that start
from it, and the refusals before launch."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from helpers.commands import launcher_output, run_dirs, run_sweep, start_sweep, wait_for, write_spec
from helpers.fake_sweep import run_spec
from helpers.models import TINY_XML, XML_DIR, legs_variant
from mjsweep.engine.sweep import prepare
from mjsweep.engine.warmstart import saved_shapes
from mjsweep.launchers.filesync import local_run_dir, pack_model, pack_warm_source
from mjsweep.search.journal import replay
from mjsweep.search.nearest import distance, nearest, starts_cold
from mjsweep.spec.searchspace import Dimension
from mjsweep.spec.warmstartspec import WarmStartSpec
from mjsweep.sweepdir.csvfiles import read_evaluations
from mjsweep.sweepdir.files import RunDir
from mjsweep.sweepdir.models import TrialRecord, TrialState, WarmSource

ALGO_SETTINGS = {
    "ppo": {"ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1}, "total_timesteps": 256},
    "sac": {"algo": "sac", "sac": {"learning_starts": 64, "buffer_size": 1000, "batch_size": 32},
            "total_timesteps": 160, "checkpoint_every": 80},
}


def spec_data(tmp_path: Path, name: str, algo: str = "ppo", xml: Path = TINY_XML, **extra) -> dict:
    return {"name": name, "env": "HalfCheetah-v5", "max_episode_steps": 50,
            "variants": [{"name": "walker", "xml": str(xml)}], "seeds": 1, "normalize": True,
            "eval": {"episodes": 2, "every": 10_000}, "runs_dir": str(tmp_path / "runs"),
            **ALGO_SETTINGS[algo], **extra}


def train(tmp_path: Path, data: dict) -> Path:
    """Runs the spec to its end; the sweep folder."""
    proc = run_sweep("run", str(write_spec(tmp_path, data, f"{data['name']}.yaml")), "--workers", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp_path / "runs" / data["name"]


def result_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "result.json").read_text())


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_a_warm_runs_first_evaluation_is_its_sources_last(tmp_path, algo):
    (source,) = run_dirs(train(tmp_path, spec_data(tmp_path, "source", algo)))
    warm = {"from": str(source), **({"replay_buffer": True} if algo == "sac" else {})}
    (run,) = run_dirs(train(tmp_path, spec_data(tmp_path, "warm", algo, warm_start=warm)))
    first = read_evaluations(run / "evaluations.csv")[0]
    # the same weights, the same frozen statistics, the same evaluation seed: the same episodes
    assert (first.timesteps, first.mean_return) == (0, result_of(source)["eval_mean_return"])
    started = result_of(run)["warm_start"]
    assert (started["run_id"], started["run_dir"]) == (source.name, str(source))
    assert json.loads((run / "spec.json").read_text())["warm_start"]["run_id"] == source.name
    if algo == "sac":
        assert "with its replay buffer" in (run / "log.txt").read_text()
    cold = train(tmp_path, spec_data(tmp_path, "source", algo))  # the same settings, cold: not the warm run
    assert run.name != source.name and run_dirs(cold) == [source]


@pytest.mark.slow
def test_a_node_that_cannot_see_the_source_warm_starts_from_the_files_shipped_with_the_run(tmp_path):
    # What the Ray launcher ships: the run's folder and its source's files; the node then reads no source path.
    (source,) = run_dirs(train(tmp_path, spec_data(tmp_path, "source", "sac")))
    expected = result_of(source)["eval_mean_return"]
    plan = prepare(write_spec(tmp_path, spec_data(tmp_path, "warm", "sac", warm_start={
        "from": str(source), "replay_buffer": True}), "warm.yaml"))
    [run] = plan.runs
    shipped = pack_warm_source(run.warm_start)
    assert sorted(shipped) == sorted(["warm_source/model.zip", "warm_source/vecnormalize.pkl",
                                      "warm_source/checkpoints/checkpoint.json",
                                      f"warm_source/checkpoints/{RunDir(source).read_checkpoint().replay_buffer_file}"])
    node = local_run_dir(tmp_path / "node", run.model_dump(mode="json"), shipped, pack_model(Path(run.xml)))
    source.rename(tmp_path / "elsewhere")  # the source's folder is out of the node's reach
    done = subprocess.run([sys.executable, "-m", "mjsweep.worker", str(node)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "with its replay buffer, its files shipped with the run" in done.stdout
    assert read_evaluations(node / "evaluations.csv")[0].mean_return == expected  # the source's own policy


@pytest.mark.slow
def test_an_interrupted_warm_run_resumes_from_its_own_checkpoint(tmp_path):
    (source,) = run_dirs(train(tmp_path, spec_data(tmp_path, "source")))
    data = spec_data(tmp_path, "warm", warm_start={"from": str(source)}, total_timesteps=4096, checkpoint_every=256)
    spec = write_spec(tmp_path, data, "warm.yaml")
    sweep = tmp_path / "runs" / "warm"
    proc = start_sweep(spec, "--workers", "1")
    saved = wait_for(lambda: run_dirs(sweep) and RunDir(run_dirs(sweep)[0]).read_checkpoint(),
                     what="the warm run's first checkpoint", timeout=300)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=300) == 130, launcher_output(spec)
    again = run_sweep("run", str(spec), "--workers", "1")
    assert again.returncode == 0, again.stdout + again.stderr
    (run,) = run_dirs(sweep)
    log = (run / "log.txt").read_text()
    assert log.count(f"warm start from {source.name}") == 1  # the first attempt only
    assert result_of(run)["resumed_from"] >= saved.timesteps and result_of(run)["timesteps"] == 4096
    assert result_of(run)["warm_start"]["run_id"] == source.name
    assert [e.timesteps for e in read_evaluations(run / "evaluations.csv")].count(0) == 1  # written once


@pytest.mark.slow
def test_every_trial_of_a_search_starts_from_a_fixed_source(tmp_path):
    (source,) = run_dirs(train(tmp_path, spec_data(tmp_path, "source")))
    data = spec_data(tmp_path, "tuned", warm_start={"from": str(source)}, total_timesteps=128,
                     search={"method": "random", "trials": 2, "space": {"ppo.gamma": {"uniform": [0.9, 0.99]}}})
    del data["seeds"]
    sweep = train(tmp_path, data)
    records = replay(sweep / "trials.jsonl")
    assert [r.state for r in records] == [TrialState.COMPLETE] * 2 and {r.start for r in records} == {None}
    for rec in records:
        (run_id,) = rec.runs
        assert result_of(sweep / run_id)["warm_start"]["run_id"] == source.name
        assert read_evaluations(sweep / run_id / "evaluations.csv")[0].mean_return == \
            result_of(source)["eval_mean_return"]


def test_a_source_with_other_observations_is_refused_before_launch(tmp_path):
    other = XML_DIR / "planar_walker.xml"
    (source,) = run_dirs(train(tmp_path, spec_data(tmp_path, "source", xml=other)))
    spec = write_spec(tmp_path, spec_data(tmp_path, "warm", warm_start={"from": str(source)}))
    proc = run_sweep("run", str(spec))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    obs, _ = saved_shapes(source / "model.zip")
    assert line.startswith("error: ") and "warm_start: the observation spaces differ" in line
    assert f"has shape {obs}" in line and "variant 'walker' has shape" in line
    assert not (tmp_path / "runs" / "warm").exists()  # nothing written


@pytest.mark.slow
def test_a_source_whose_network_or_normalization_differs_is_refused(tmp_path):
    (source,) = run_dirs(train(tmp_path, spec_data(tmp_path, "source")))
    smaller = {**ALGO_SETTINGS["ppo"]["ppo"], "policy_kwargs": {"net_arch": [8]}}
    for change, problem in [({"ppo": smaller}, "the weights would not fit"),
                            ({"normalize": False}, "normalizes its observations and run")]:
        spec = write_spec(tmp_path, spec_data(tmp_path, "warm", warm_start={"from": str(source)}, **change))
        proc = run_sweep("validate", str(spec))
        assert proc.returncode == 2 and f"warm_start: the source run {source.name}" in proc.stderr, proc.stderr
        assert problem in proc.stderr


@pytest.mark.slow
def test_the_best_run_of_a_variant_is_the_source_and_a_missing_one_is_refused(tmp_path):
    sweep = train(tmp_path, spec_data(tmp_path, "source", seeds=2))
    best = max(run_dirs(sweep), key=lambda r: result_of(r)["eval_mean_return"])
    warm = {"sweep": str(sweep), "variant": "walker", "best": True}
    proc = run_sweep("run", str(write_spec(tmp_path, spec_data(tmp_path, "warm", warm_start=warm))), "--dry-run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run,) = run_dirs(train(tmp_path, {**spec_data(tmp_path, "warm", warm_start=warm), "total_timesteps": 128}))
    assert result_of(run)["warm_start"]["run_id"] == best.name
    missing = {**warm, "variant": "nobody"}
    proc = run_sweep("run", str(write_spec(tmp_path, spec_data(tmp_path, "w2", warm_start=missing))))
    assert proc.returncode == 2 and "warm_start: sweep" in proc.stderr and "'nobody'" in proc.stderr


def test_a_model_zip_says_its_spaces_without_torch(tmp_path):
    (source,) = run_dirs(train(tmp_path, spec_data(tmp_path, "source")))
    obs, act = saved_shapes(source / "model.zip")
    assert obs is not None and act is not None and len(obs) == len(act) == 1
    assert saved_shapes(tmp_path / "nothing.zip") == (None, None)


@pytest.mark.parametrize("value, problem", [
    ({"from": "a", "variant": "x", "best": True}, "not both"),
    ({"sweep": "runs/s", "variant": "x"}, "name the source run"),
    ({"from": "a", "cold_share": 0.5}, "cold_share goes with nearest only"),
    ({"nearest": True, "from": "a"}, "nearest picks its own source"),
    ({"nearest": True, "cold_share": 1.5}, "less than or equal to 1"),
])
def test_a_warm_start_names_one_source(value, problem):
    with pytest.raises(ValidationError, match=problem):
        WarmStartSpec.model_validate(value)


def test_the_spec_forms_of_a_warm_start():
    assert WarmStartSpec.model_validate("nearest") == WarmStartSpec(nearest=True, cold_share=0.25)
    by_id = WarmStartSpec.model_validate({"from": "walker_s0_abc", "sweep": "runs/smoke"})
    assert (by_id.source, str(by_id.sweep)) == ("walker_s0_abc", "runs/smoke")


def test_a_warm_run_is_another_experiment_than_the_cold_one_and_than_another_sources():
    def source(run_id: str, buffer: bool = False) -> WarmSource:
        return WarmSource(run_dir=f"/runs/s/{run_id}", run_id=run_id, replay_buffer=buffer)

    cold = run_spec("walker", 0)
    experiments = {run_spec("walker", 0, warm_start=warm).experiment
                   for warm in (source("a"), source("b"), source("a", buffer=True))}
    assert len(experiments | {cold.experiment}) == 4
    moved = run_spec("walker", 0, warm_start=source("a").model_copy(update={"run_dir": "/elsewhere/a"}))
    assert moved.experiment == run_spec("walker", 0, warm_start=source("a")).experiment  # its folder may move


def test_a_quarter_of_the_trials_stay_cold_whatever_the_budget():
    assert [n for n in range(12) if starts_cold(n, 0.25)] == [3, 7, 11]
    assert [n for n in range(4) if starts_cold(n, 0.5)] == [1, 3]
    assert not any(starts_cold(n, 0.0) for n in range(10)) and all(starts_cold(n, 1.0) for n in range(10))


def test_the_nearest_design_is_nearest_in_normalized_edit_values():
    dims = {"edits.legs": Dimension(uniform=(0.5, 1.5)), "edits.mass": Dimension(log_uniform=(1.0, 100.0)),
            "ppo.learning_rate": Dimension(log_uniform=(1e-5, 1e-3))}
    done = [TrialRecord(study="s", number=n, params=p, runs=[], state=state) for n, p, state in [
        (0, {"edits.legs": 0.5, "edits.mass": 10.0, "ppo.learning_rate": 3e-4}, TrialState.COMPLETE),
        (1, {"edits.legs": 1.4, "edits.mass": 10.0, "ppo.learning_rate": 3e-4}, TrialState.COMPLETE),
        (2, {"edits.legs": 1.0, "edits.mass": 10.0, "ppo.learning_rate": 3e-4}, TrialState.RUNNING)]]
    asked = {"edits.legs": 1.0, "edits.mass": 10.0, "ppo.learning_rate": 1e-5}
    # legs: 0.5 and 0.4 of the span away; the learning rate is no edit and does not count
    assert distance(asked, done[0].params, dims) == pytest.approx(0.5)
    assert nearest(asked, done, dims) == done[1]  # the running trial 2 is no source
    # mass on the log scale: 10 is halfway between 1 and 100
    assert distance({"edits.mass": 1.0}, {"edits.mass": 10.0}, dims) == pytest.approx(0.5)
    assert nearest(asked, done[2:], dims) is None


@pytest.mark.slow
def test_a_design_search_starts_designs_from_the_nearest_finished_one_and_keeps_some_cold(tmp_path):
    data = {
        "name": "design", "env": "mjsweep/Locomotion-v0", "max_episode_steps": 50,
        "variants": [legs_variant()],
        "total_timesteps": 256, "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1}, "eval": {"episodes": 2},
        "runs_dir": str(tmp_path / "runs"), "warm_start": "nearest",
        "search": {"method": "random", "trials": 4, "seeds_per_trial": 1, "seed": 0,
                   "space": {"edits.legs": {"uniform": [0.8, 1.25]}}},
    }
    spec = write_spec(tmp_path, data)
    proc = run_sweep("run", str(spec), "--workers", "1")  # one at a time: each trial asked once the last ended
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sweep = tmp_path / "runs" / "design"
    records = replay(sweep / "trials.jsonl")
    assert [(r.start, r.state) for r in records] == [("cold", TrialState.COMPLETE), ("warm", TrialState.COMPLETE),
                                                     ("warm", TrialState.COMPLETE), ("cold", TrialState.COMPLETE)]
    legs = [r.params["edits.legs"] for r in records]
    assert records[1].warm_from == 0  # the only finished design
    assert records[2].warm_from == min((0, 1), key=lambda n: (abs(legs[n] - legs[2]), n))
    for rec in records:
        started = json.loads((sweep / rec.runs[0] / "spec.json").read_text()).get("warm_start")
        source = records[rec.warm_from].runs[0] if rec.warm_from is not None else None
        assert (started or {}).get("run_id") == source
        assert ("warm start from" in (sweep / rec.runs[0] / "log.txt").read_text()) == (source is not None)
    report = run_sweep("report", str(sweep))
    assert report.returncode == 0, report.stderr
    markdown = (sweep / "report.md").read_text()
    assert "## Warm against cold starts" in markdown and "| warm | 2 |" in markdown and "| cold | 2 |" in markdown
    again = run_sweep("run", str(spec), "--workers", "1")
    assert again.returncode == 0 and "4 succeeded" in again.stdout, again.stdout + again.stderr
    assert replay(sweep / "trials.jsonl") == records  # resumed: the same trials, the same sources


@pytest.mark.parametrize("warm, search, problem", [
    ("nearest", None, "warm_start: nearest starts each design of a search"),
    ({"from": "somewhere"}, {"method": "random", "trials": 2, "space": {"ppo.gamma": {"uniform": [0.9, 0.99]}}},
     "warm_start: no run folder"),
    ({"from": "no/such/run"}, None, "warm_start: no run folder"),
])
def test_a_warm_start_the_sweep_cannot_take_is_refused_in_one_line(tmp_path, warm, search, problem):
    data = spec_data(tmp_path, "warm", warm_start=warm, **({"search": search} if search else {}))
    if search:
        del data["seeds"]
    proc = run_sweep("validate", str(write_spec(tmp_path, data)))
    assert proc.returncode == 2 and problem in proc.stderr, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("error: ")
