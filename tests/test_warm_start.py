"""Warm starts through the real `sweep` command: a source run trained on the tiny walker, then runs that start
from it, and the refusals before launch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from helpers.commands import run_dirs, run_sweep, write_spec
from helpers.models import TINY_XML, XML_DIR
from mjsweep.engine.warmstart import saved_shapes
from mjsweep.spec.warmstart import WarmStartSpec
from mjsweep.sweepdir.tables import read_evaluations

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
