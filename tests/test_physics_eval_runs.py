"""Held-out physics: its draws (the evaluation seed's alone, never a training draw) and env; then through real
`sweep run`s each run's final policy on them (physics_eval.json), common to every run, a finished run gaining
eval.physics evaluated without training, a Menagerie robot, and `sweep evaluate --cross`'s held-out columns."""

from __future__ import annotations

import csv
import json

import pytest

from helpers.commands import run_dirs, run_sweep, write_spec
from helpers.models import ANYMAL_XML, TINY_XML
from mjsweep.robots import draws as drawlib
from mjsweep.robots.envs import make_env
from mjsweep.robots.randomized_env import RandomizedEnv
from mjsweep.spec.randomspec import RandomizedEdit
from mjsweep.sweepdir.files import read_lines
from mjsweep.sweepdir.models import DrawRecord, PhysicsEval
from mjsweep.worker.physics_eval import OneDraw

EDITS = [{"mass": {"body": "torso", "factor": {"uniform": [0.7, 1.4]}}},
         {"friction": {"body": "front_leg", "value": {"choice": [0.5, 0.9, 1.3]}}, "per": "env"}]
PHYSICS = {"draws": 3, "seed": 11, "threshold": 0.0}


def test_held_out_draws_are_the_evaluation_seeds_alone_and_never_a_training_draw():
    edits = [RandomizedEdit.model_validate(e) for e in EDITS[:1]]
    slots = drawlib.slots(edits)
    held = [drawlib.held_out(slots, 11, i)["_draw0_factor"] for i in range(50)]
    assert held == [drawlib.held_out(slots, 11, i)["_draw0_factor"] for i in range(50)]  # pure: no run's state
    assert len(set(held)) == 50 and held != [drawlib.held_out(slots, 12, i)["_draw0_factor"] for i in range(50)]
    trained = {drawlib.draw(slots, seed, drawlib.TRAIN, env, episode)["_draw0_factor"]
               for seed in (*range(20), 11) for env in range(2) for episode in range(50)}
    assert not trained & set(held)  # a run of seed 11 included: the streams, not the seeds, keep them apart


def test_the_held_out_env_is_on_the_draws_physics():
    edits = [RandomizedEdit.model_validate(e) for e in EDITS[:1]]
    env = make_env("HalfCheetah-v5", TINY_XML, {}, 40)
    nominal = float(env.unwrapped.model.body("torso").mass[0])
    held = OneDraw(RandomizedEnv(env, TINY_XML, edits, 11, env_index=2, stream=drawlib.HELD_OUT))
    factor = drawlib.held_out(drawlib.slots(edits), 11, 2)["_draw0_factor"]
    for _ in range(2):  # the vectorized env's reset at the episode's end keeps the draw
        held.reset()
        assert float(env.unwrapped.model.body("torso").mass[0]) == pytest.approx(nominal * factor)
    held.close()


def _physics_of(run_dir) -> PhysicsEval:
    return PhysicsEval.model_validate_json((run_dir / "physics_eval.json").read_text())


@pytest.mark.slow
def test_every_run_meets_the_same_held_out_draws_and_no_training_draw(tmp_path, tiny_spec):
    tiny_spec["variants"][0]["randomize"] = EDITS
    tiny_spec.update({"seeds": 2, "max_episode_steps": 40, "eval": {"episodes": 1, "physics": PHYSICS}})
    done = run_sweep("run", str(write_spec(tmp_path, tiny_spec)))
    assert done.returncode == 0, done.stdout + done.stderr
    runs = run_dirs(tmp_path / "runs" / "tiny")
    assert len(runs) == 2
    evaluations = [_physics_of(run) for run in runs]
    slots = drawlib.slots([RandomizedEdit.model_validate(e) for e in EDITS])
    expected = [list(drawlib.held_out(slots, 11, i).values()) for i in range(3)]
    for evaluation in evaluations:
        assert [list(v.values()) for v in evaluation.values] == expected  # a function of eval.physics.seed alone
        assert len(evaluation.returns) == len(evaluation.lengths) == 3
        assert all(0 < n <= 40 for n in evaluation.lengths)
        assert evaluation.deterministic is True
    assert evaluations[0].values == evaluations[1].values
    assert evaluations[0].returns != evaluations[1].returns  # two seeds' policies
    assert len({tuple(v["randomize[0].mass.factor"] for v in e.values) for e in evaluations}) == 1
    trained = {value for run in runs for record in read_lines(run / "draws.jsonl", DrawRecord)
               for value in record.values.values() if value not in (0.5, 0.9, 1.3)}  # choice repeats by design
    held = {v["randomize[0].mass.factor"] for v in evaluations[0].values}
    assert trained and not trained & held
    report = json.loads(run_sweep("report", str(tmp_path / "runs" / "tiny"), "--format", "json").stdout)
    [group] = report["held_out_physics"]["groups"]
    assert sorted(s["mean"] for s in group["seeds"]) == sorted(sum(e.returns) / 3 for e in evaluations)
    assert "Held-out physics" in (tmp_path / "runs" / "tiny" / "report.md").read_text()


@pytest.mark.slow
def test_a_finished_run_gaining_eval_physics_is_evaluated_without_training(tmp_path, tiny_spec):
    tiny_spec["variants"][0]["randomize"] = EDITS
    tiny_spec["max_episode_steps"] = 40
    spec = write_spec(tmp_path, tiny_spec)
    assert run_sweep("run", str(spec)).returncode == 0
    [run] = run_dirs(tmp_path / "runs" / "tiny")
    trained = {name: (run / name).read_bytes() for name in ("model.zip", "monitor.csv", "progress.csv")}
    result = json.loads((run / "result.json").read_text())
    assert not (run / "physics_eval.json").exists()

    tiny_spec["eval"]["physics"] = PHYSICS
    dry = run_sweep("run", str(write_spec(tmp_path, tiny_spec)), "--dry-run")
    assert "1 to evaluate again" in dry.stdout and "3 episodes from their final models" in dry.stdout, dry.stdout
    again = run_sweep("run", str(spec))
    assert again.returncode == 0, again.stdout + again.stderr
    assert run_dirs(tmp_path / "runs" / "tiny") == [run]  # the same run id
    assert len(_physics_of(run).returns) == 3
    assert {name: (run / name).read_bytes() for name in trained} == trained
    assert json.loads((run / "result.json").read_text())["eval_mean_return"] == result["eval_mean_return"]
    assert "held-out draws of physics; no training" in (run / "log.txt").read_text()

    third = run_sweep("run", str(spec))
    assert third.returncode == 0 and "0 to run, 1 already succeeded" in third.stdout, third.stdout


@pytest.mark.slow
@pytest.mark.skipif(not ANYMAL_XML.exists(), reason=f"needs ANYmal C at {ANYMAL_XML}")
def test_a_randomized_anymal_c_is_evaluated_on_wider_held_out_physics(tmp_path, tiny_spec):
    wider = [{"mass": {"body": "base", "factor": {"uniform": [0.5, 2.0]}}},
             {"friction": {"body": "*_SHANK", "factor": {"log_uniform": [0.25, 4.0]}}}]
    tiny_spec.update({"env": "mjsweep/Locomotion-v0", "total_timesteps": 256, "max_episode_steps": 30,
                      "eval": {"episodes": 1, "physics": {"draws": 2, "seed": 4, "randomize": wider}},
                      "variants": [{"name": "anymal", "xml": str(ANYMAL_XML), "randomize": [
                          {"mass": {"body": "base", "factor": {"uniform": [0.8, 1.25]}}}]}]})
    spec = write_spec(tmp_path, tiny_spec)
    checked = run_sweep("validate", str(spec))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    done = run_sweep("run", str(spec))
    assert done.returncode == 0, done.stdout + done.stderr
    [run_dir] = run_dirs(tmp_path / "runs" / "tiny")
    evaluation = _physics_of(run_dir)
    assert len(evaluation.returns) == 2 and all(0 < n <= 30 for n in evaluation.lengths)
    assert list(evaluation.values[0]) == ["randomize[0].mass.factor", "randomize[1].friction.factor"]
    slots = drawlib.slots([RandomizedEdit.model_validate(e) for e in wider])  # eval's distribution, not training's
    assert [list(v.values()) for v in evaluation.values] == [list(drawlib.held_out(slots, 4, i).values())
                                                             for i in range(2)]


@pytest.mark.slow
def test_cross_evaluation_adds_each_variants_held_out_physics_as_a_test_column(tmp_path, tiny_spec):
    tiny_spec["variants"] = [{"name": "nominal", "xml": tiny_spec["variants"][0]["xml"]},
                             {"name": "randomized", "xml": tiny_spec["variants"][0]["xml"], "randomize": EDITS}]
    tiny_spec.update({"max_episode_steps": 40, "seeds": 2,
                      "eval": {"episodes": 1, "physics": {**PHYSICS, "randomize": EDITS[:1]}}})
    done = run_sweep("run", str(write_spec(tmp_path, tiny_spec)))
    assert done.returncode == 0, done.stdout + done.stderr
    sweep = tmp_path / "runs" / "tiny"
    crossed = run_sweep("evaluate", str(sweep), "--cross", "--episodes", "1", "--workers", "2")
    assert crossed.returncode == 0, crossed.stdout + crossed.stderr
    for run in run_dirs(sweep):
        on_own = json.loads((sweep / "cross" / run.name / f"{json.loads((run / 'spec.json').read_text())['variant']}"
                                                          "@held-out.json").read_text())
        # the same draws, policy and deterministic actions as the run's own held-out evaluation
        assert on_own["returns"] == _physics_of(run).returns and on_own["physics"]["draws"] == 3
    rows = {(r["train"], r["test"]): r for r in csv.DictReader((sweep / "cross" / "matrix.csv").open())}
    assert set(rows) == {(train, test) for train in ("nominal", "randomized")
                         for test in ("nominal", "randomized", "nominal@held-out", "randomized@held-out")}
    assert all(int(r["seeds"]) == 2 for r in rows.values())
