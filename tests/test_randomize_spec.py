"""`randomize:` in the spec: distributions parsed, and every refusal one file:line:key line before anything runs."""

from __future__ import annotations

import pytest

from helpers.commands import run_sweep
from helpers.models import XML_DIR
from mjsweep.engine.sweep import prepare
from mjsweep.errors import SpecError
from mjsweep.spec.randomspec import Distribution, parse_distribution

WALKER = XML_DIR / "tiny_walker.xml"

SPEC = f"""name: rnd
env: mjsweep/Locomotion-v0
max_episode_steps: 50
variants:
  - name: w
    xml: {WALKER}
    randomize:
      - mass: {{body: torso, factor: {{uniform: [0.8, 1.2]}}}}
      - friction: {{body: front_leg, value: {{log_uniform: [0.5, 1.5]}}}}
        per: env
seeds: 1
total_timesteps: 256
ppo: {{n_steps: 128, batch_size: 64, n_epochs: 1}}
eval: {{episodes: 1}}
runs_dir: runs
"""


def test_distributions_parse_with_their_support():
    assert parse_distribution({"uniform": [1, 2]}) == Distribution("uniform", (1.0, 2.0))
    normal = parse_distribution({"normal": {"mean": 1, "std": 0.1, "low": 0.5, "high": 1.5}})
    assert normal.support == (0.5, 1.5)
    assert parse_distribution({"choice": [3, 1, 2]}).support == (1.0, 3.0)
    assert parse_distribution({"normal": {"mean": 0, "std": 1}}).support == (float("-inf"), float("inf"))


def test_a_randomized_variant_prepares_with_its_edits(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC)
    plan = prepare(path, check_envs=False)
    [variant] = [c.variant for c in plan.checks]
    assert [e.op for e in variant.randomize] == ["mass", "friction"]
    assert [e.per for e in variant.randomize] == ["episode", "env"]


@pytest.mark.parametrize("change, expected", [
    (("{uniform: [0.8, 1.2]}", "{beta: [1, 2]}"),
     "spec.yaml:8: variants[0].randomize[0].mass: a distribution is one of {uniform: ..., log_uniform: ..., "
     "normal: ..., choice: ...}"),
    (("{uniform: [0.8, 1.2]}", "{uniform: [-0.5, 1.2]}"),
     "spec.yaml:8: variants[0].randomize[0].mass.factor: mass's factor must be positive, but uniform [-0.5, 1.2] "
     "can draw -0.5"),
    (("{log_uniform: [0.5, 1.5]}", "{normal: {mean: 1, std: 0.2}}"),
     "spec.yaml:9: variants[0].randomize[1].friction.value: friction's value must be non-negative: a normal on it "
     "needs bounds"),
    (("{log_uniform: [0.5, 1.5]}", "{normal: {mean: 1, std: 0.2, low: -1, high: 2}}"),
     "friction's value must be non-negative, but normal"),
    (("{log_uniform: [0.5, 1.5]}", "{normal: {mean: 1, std: 0.01, low: 3, high: 4}}"),
     "variants[0].randomize[1].friction: normal's bounds [3, 4] hold 0.00% of its mass"),
    (("{uniform: [0.8, 1.2]}", "1.5"),
     "spec.yaml:8: variants[0].randomize[0].mass: no distribution (uniform, log_uniform, normal, choice) in its "
     "value or factor: a fixed edit belongs under 'edits'"),
    (("{uniform: [0.8, 1.2]}", "{uniform: [1.2, 0.8]}"), "uniform needs low < high"),
    (("{uniform: [0.8, 1.2]}", "{choice: []}"), "choice takes a non-empty list of numbers"),
    (("{log_uniform: [0.5, 1.5]}", "{log_uniform: [0, 1.5]}"), "log_uniform needs 0 < low"),
    (("        per: env\n", "        per: step\n"), "variants[0].randomize[1].per: Input should be 'episode' or 'env'"),
    (("body: torso,", "body: head,"), "spec.yaml:8: variants[0].randomize[0]: mass: no body named 'head'"),
    (("- mass: {body: torso, factor: {uniform: [0.8, 1.2]}}",
      "- ctrlrange: {actuator: back_hip, value: [{uniform: [-1, 0.5]}, {uniform: [0, 1]}]}"),
     "variants[0].randomize[0].ctrlrange.value: [low, high] must keep low < high on every draw"),
    # a distribution where the edit takes a list: one per entry, or none
    (("- mass: {body: torso, factor: {uniform: [0.8, 1.2]}}",
      "- ctrlrange: {actuator: back_hip, value: {uniform: [0.5, 1]}}"),
     "spec.yaml:8: variants[0].randomize[0]: ctrlrange: value must be a list of 2 numbers (got 0.5)"),
    (("- mass: {body: torso, factor: {uniform: [0.8, 1.2]}}", "- kp: {actuator: back_hip, factor: {uniform: [1, 2]}}"),
     "variants[0].randomize[0]: kp: actuator 'back_hip' is not a position servo"),
])
def test_bad_randomize_specs_name_the_line_and_key(tmp_path, change, expected):
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.replace(*change))
    with pytest.raises(SpecError) as info:
        prepare(path, check_envs=False)
    message = str(info.value).replace(str(tmp_path) + "/", "")
    assert expected in message


def test_validate_refuses_a_negative_mass_with_one_line_and_exit_2(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.replace("{uniform: [0.8, 1.2]}", "{uniform: [-0.5, 1.2]}"))
    done = run_sweep("validate", str(path), cwd=tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: {path}:8: variants[0].randomize[0].mass.factor: mass's factor must be positive")
    assert not (tmp_path / "runs").exists()


def test_randomize_applies_after_a_base_variants_edits_on_every_grid_point(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.replace(f"    xml: {WALKER}\n", f"""    base: {WALKER}
    edits:
      - mass: {{body: torso, value: "${{torso}}"}}
    edit_grid:
      torso: [1.0, 2.0]
"""))
    plan = prepare(path, check_envs=False)
    assert [c.variant.name for c in plan.checks] == ["w_torso=1.0", "w_torso=2.0"]
    assert all(len(c.variant.randomize) == 2 for c in plan.checks)
    assert len({r.run_id for r in plan.runs}) == 2
    # a fixed edit that breaks the model is reported at its own key, not at the randomized ones
    path.write_text(path.read_text().replace("body: torso, value", "body: head, value"))
    with pytest.raises(SpecError, match=r"variants\[0\]\.edits\[0\]: variant 'w_torso=1\.0': mass: no body named"):
        prepare(path, check_envs=False)
