"""`eval.physics` in the spec: held-out physics settings, and each refusal one file:line:key line."""

from __future__ import annotations

import pytest

from helpers.commands import run_sweep
from helpers.models import XML_DIR
from mjsweep.engine.sweep import prepare
from mjsweep.errors import SpecError

WALKER = XML_DIR / "tiny_walker.xml"

SPEC = f"""name: held
env: mjsweep/Locomotion-v0
max_episode_steps: 50
variants:
  - name: w
    xml: {WALKER}
    randomize:
      - mass: {{body: torso, factor: {{uniform: [0.8, 1.2]}}}}
seeds: 1
total_timesteps: 256
ppo: {{n_steps: 128, batch_size: 64, n_epochs: 1}}
eval:
  episodes: 1
  physics: {{draws: 4, seed: 7, threshold: 1.5}}
runs_dir: runs
"""


def _prepare(tmp_path, text):
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return prepare(path, check_envs=False)


def test_held_out_physics_defaults_to_the_variants_training_distribution(tmp_path):
    plan = _prepare(tmp_path, SPEC)
    [run] = plan.runs
    assert run.physics_eval == {"draws": 4, "seed": 7, "threshold": 1.5,
                                "randomize": [{"mass": {"body": "torso", "factor": {"uniform": [0.8, 1.2]}},
                                                              "per": "episode"}]}


def test_held_out_physics_of_its_own_distribution_leaves_the_run_id_alone(tmp_path):
    wider = SPEC.replace("{draws: 4, seed: 7, threshold: 1.5}",
                         "{draws: 4, randomize: [{mass: {body: torso, factor: {uniform: [0.5, 2]}}}]}")
    [run] = _prepare(tmp_path, wider).runs
    [plain] = _prepare(tmp_path, SPEC.replace("  physics: {draws: 4, seed: 7, threshold: 1.5}\n", "")).runs
    assert run.physics_eval is not None and plain.physics_eval is None
    assert run.physics_eval["randomize"][0]["mass"]["factor"] == {"uniform": [0.5, 2.0]}
    assert run.physics_eval["seed"] == 0
    assert run.run_id == plain.run_id  # an evaluation never changes what a run computes


@pytest.mark.parametrize("change, expected", [
    (("{draws: 4, seed: 7, threshold: 1.5}", "{draws: 0}"),
     "spec.yaml:14: eval.physics.draws: Input should be greater than or equal to 1 (got 0)"),
    (("{draws: 4, seed: 7, threshold: 1.5}", "{draws: 3, seed: -1}"),
     "spec.yaml:14: eval.physics.seed: Input should be greater than or equal to 0 (got -1)"),
    (("{draws: 4, seed: 7, threshold: 1.5}", "{draws: 3, spread: 2}"),
     "spec.yaml:14: eval.physics.spread: unknown key"),
    (("    randomize:\n      - mass: {body: torso, factor: {uniform: [0.8, 1.2]}}\n", ""),
     "spec.yaml:12: eval.physics: variant 'w' has no randomize to draw held-out physics from: give "
     "eval.physics.randomize"),
    (("{draws: 4, seed: 7, threshold: 1.5}", "{draws: 4, randomize: []}"),
     "spec.yaml:14: eval.physics.randomize: an empty list"),
    (("{draws: 4, seed: 7, threshold: 1.5}",
      "{draws: 4, randomize: [{mass: {body: torso, factor: {uniform: [-1, 2]}}}]}"),
     "spec.yaml:14: eval.physics.randomize[0].mass.factor: mass's factor must be positive"),
])
def test_bad_physics_evaluations_name_the_line_and_key(tmp_path, change, expected):
    with pytest.raises(SpecError) as raised:
        _prepare(tmp_path, SPEC.replace(*change))
    assert str(raised.value).startswith(f"{tmp_path}/{expected}")


def test_sweep_run_refuses_a_variant_without_a_distribution_in_one_line_and_exit_2(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.replace("    randomize:\n      - mass: {body: torso, factor: {uniform: [0.8, 1.2]}}\n", ""))
    done = run_sweep("run", str(path), cwd=tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line == (f"error: {path}:12: eval.physics: variant 'w' has no randomize to draw held-out physics from: "
                    "give eval.physics.randomize")
    assert not (tmp_path / "runs").exists()
