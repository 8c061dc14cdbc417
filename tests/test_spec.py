"""Spec errors: each names the file, the line and the key, and nothing is written or started."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from helpers.commands import run_sweep
from helpers.models import TINY_XML
from mjsweep.engine.sweep import prepare
from mjsweep.errors import SpecError
from mjsweep.spec import loading
from mjsweep.spec import sweepspec as speclib

GOOD = f"""\
name: demo
env: HalfCheetah-v5
max_episode_steps: 50
variants:
  - {{name: a, xml: {TINY_XML}}}
seeds: 2
total_timesteps: 256
ppo: {{n_steps: 64, batch_size: 32}}
eval: {{episodes: 1}}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def error_of(tmp_path: Path, text: str, full: bool = False) -> str:
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        prepare(path) if full else loading.load(path)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_good_spec_loads_and_resolves_paths(tmp_path):
    spec = loading.load(write(tmp_path, GOOD + "runs_dir: out\n"))
    assert spec.seed_list == [0, 1]
    assert spec.runs_dir == (tmp_path / "out").resolve()
    assert spec.variants[0].xml == TINY_XML


def test_adaptive_seeds_load_with_every_seed_a_run_may_train(tmp_path):
    spec = loading.load(write(tmp_path, GOOD.replace("seeds: 2", "seeds: {min: 3, max: 5, until: separated}")))
    assert spec.adaptive_seeds == speclib.AdaptiveSeeds(min=3, max=5, until="separated", confidence=0.95)
    assert spec.seed_list == [0, 1, 2, 3, 4]
    assert loading.load(write(tmp_path, GOOD)).adaptive_seeds is None


def test_relative_paths_resolve_against_the_spec_folder(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "w.xml").write_bytes(TINY_XML.read_bytes())
    text = GOOD.replace(str(TINY_XML), "models/w.xml")
    spec = loading.load(write(tmp_path, text))
    assert spec.variants[0].xml == (tmp_path / "models" / "w.xml").resolve()


@pytest.mark.parametrize("text, expected", [
    ("name: [unclosed\n", "spec.yaml:2: YAML syntax error"),
    ("- just\n- a list\n", "spec.yaml:1: the spec must be a YAML mapping"),
    (GOOD + "bogus: 1\n", "spec.yaml:10: bogus: unknown key (allowed: name, env,"),
    (GOOD.replace("total_timesteps: 256", "total_timesteps: lots"),
     "spec.yaml:7: total_timesteps: Input should be a valid integer"),
    (GOOD.replace("eval: {episodes: 1}", "eval: {episodes: 1, evrey: 3}"),
     "spec.yaml:9: eval.evrey: unknown key (allowed: every, episodes, deterministic, physics)"),
    (GOOD.replace(f"{{name: a, xml: {TINY_XML}}}", f"{{name: a, xml: {TINY_XML}, normalize: {{clip: 5}}}}"),
     "spec.yaml:5: variants[0].normalize.clip: unknown key (allowed: norm_obs, norm_reward, clip_obs, clip_reward,"),
    (GOOD.replace("name: demo\n", ""), "spec.yaml:1: name: required key is missing"),
    (GOOD.replace("seeds: 2", "seeds: [1, 1]"), "spec.yaml:6: seeds: seeds repeat"),
    (GOOD.replace("seeds: 2", "seeds: 0"), "spec.yaml:6: seeds: a seed count must be at least 1"),
    (GOOD.replace("seeds: 2", "seeds: [1, x]"), "spec.yaml:6: seeds[1]: Input should be a valid integer"),
    (GOOD.replace("seeds: 2", "seeds: {min: 3, max: 2}"), "spec.yaml:6: seeds.max: max (2) is below min (3)"),
    (GOOD.replace("seeds: 2", "seeds: {min: 1, max: 4}"),
     "spec.yaml:6: seeds.min: Input should be greater than or equal to 2 (got 1)"),
    (GOOD.replace("seeds: 2", "seeds: {max: 4}"), "spec.yaml:6: seeds.min: required key is missing"),
    (GOOD.replace("seeds: 2", "seeds: {min: 2, max: 4, until: forever}"),
     "spec.yaml:6: seeds.until: Input should be 'separated' (got 'forever')"),
    (GOOD.replace("seeds: 2", "seeds: {min: 2, max: 4, confidence: 0.3}"),
     "spec.yaml:6: seeds.confidence: Input should be greater than 0.5"),
    (GOOD.replace("seeds: 2", "seeds: {min: 2, max: 4, mni: 2}"),
     "spec.yaml:6: seeds.mni: unknown key (allowed: min, max, until, confidence, equal_within)"),
    (GOOD + "checkpoints_kept: 0\n", "spec.yaml:10: checkpoints_kept: Input should be greater than or equal to 1"),
])
def test_syntax_keys_and_types(tmp_path, text, expected):
    message = error_of(tmp_path, text)
    assert message.replace(str(tmp_path) + "/", "").startswith(expected)


@pytest.mark.parametrize("variants, expected", [
    ("variants: []", "spec.yaml:4: variants: no variants: list some under 'variants' or set 'xml_glob'"),
    (f"variants:\n  - {{name: a, xml: {TINY_XML}}}\n  - {{name: a, xml: {TINY_XML}}}",
     "spec.yaml:6: variants[1].name: duplicate variant name 'a' (also variants[0])"),
    (f"variants:\n  - {{name: ../up, xml: {TINY_XML}}}", "spec.yaml:5: variants[0].name: unsafe name '../up'"),
    (f"variants:\n  - {{name: a/b, xml: {TINY_XML}}}", "spec.yaml:5: variants[0].name: unsafe name 'a/b'"),
    (f"variants:\n  - {{name: a, xml: {TINY_XML}, color: red}}",
     "spec.yaml:5: variants[0].color: unknown key (allowed: name, xml,"),
])
def test_variant_list_errors(tmp_path, variants, expected):
    text = GOOD.replace(f"variants:\n  - {{name: a, xml: {TINY_XML}}}", variants)
    assert expected in error_of(tmp_path, text).replace(str(tmp_path) + "/", "")


@pytest.mark.parametrize("extra, expected", [
    ("ppo: {n_steps: 64, learnin_rate: 0.1}",
     "spec.yaml:8: ppo.learnin_rate: unknown PPO keyword argument 'learnin_rate'"),
    ("ppo: {seed: 3}", "spec.yaml:8: ppo.seed: 'seed' is set by mjsweep: use the top-level 'seeds' key"),
    ("ppo: {policy_kwargs: {activation_fn: sigmoid}}",
     "spec.yaml:8: ppo.policy_kwargs.activation_fn: unknown activation 'sigmoid'"),
])
def test_ppo_kwargs(tmp_path, extra, expected):
    text = GOOD.replace("ppo: {n_steps: 64, batch_size: 32}", extra)
    assert expected in error_of(tmp_path, text).replace(str(tmp_path) + "/", "")


@pytest.mark.parametrize("grid, expected", [
    ("grid:\n  foo.bar: [1, 2]\n", "spec.yaml:12: grid.foo.bar: unknown grid key: use ppo.<kwarg>"),
    ("grid:\n  ppo.lr: [1, 2]\n", "spec.yaml:12: grid.ppo.lr: unknown PPO keyword argument 'lr'"),
    ("grid:\n  ppo.gamma: []\n", "spec.yaml:12: grid.ppo.gamma: a grid axis needs at least one value"),
    ("grid:\n  ppo.gamma: 0.9\n", "spec.yaml:12: grid.ppo.gamma: Input should be a valid list"),
    ("grid:\n  total_timesteps: [100, -5]\n", "spec.yaml:12: grid.total_timesteps: total_timesteps values"),
])
def test_grid_keys(tmp_path, grid, expected):
    message = error_of(tmp_path, GOOD + "\n" + grid)
    assert expected in message.replace(str(tmp_path) + "/", "")


def test_missing_xml_names_its_line(tmp_path):
    text = GOOD.replace(str(TINY_XML), "nowhere/robot.xml")
    message = error_of(tmp_path, text, full=True).replace(str(tmp_path) + "/", "")
    assert message.startswith("spec.yaml:5: variants[0].xml: XML file not found:")
    assert "nowhere/robot.xml" in message


def test_xml_that_does_not_compile(tmp_path):
    (tmp_path / "bad.xml").write_text("<mujoco><worldbody><body><geom type='sphere' size='x'/></body>"
                                      "</worldbody></mujoco>")
    text = GOOD.replace(str(TINY_XML), "bad.xml")
    message = error_of(tmp_path, text, full=True).replace(str(tmp_path) + "/", "")
    assert message.startswith("spec.yaml:5: variants[0]: 1 of 1 variants broken: variant 'a': MuJoCo cannot compile")


def test_xml_with_syntax_error(tmp_path):
    (tmp_path / "broken.xml").write_text("<mujoco><worldbody>")
    text = GOOD.replace(str(TINY_XML), "broken.xml")
    assert "MuJoCo cannot compile" in error_of(tmp_path, text, full=True)


@pytest.mark.parametrize("change, expected", [
    (("env: HalfCheetah-v5", "env: NoSuchEnv-v9"), "variant 'a': env 'NoSuchEnv-v9': NameNotFound"),
    (("env: HalfCheetah-v5", "env: nosuchpkg.envs:Robot"), "cannot import 'nosuchpkg.envs'"),
    (("env: HalfCheetah-v5", "env: tests.helpers.flaky_env:NoSuchRobot"), "has no attribute 'NoSuchRobot'"),
])
def test_env_that_cannot_be_built(tmp_path, change, expected):
    message = error_of(tmp_path, GOOD.replace(*change), full=True)
    assert "spec.yaml:5: variants[0]:" in message.replace(str(tmp_path) + "/", "")
    assert expected in message


@pytest.mark.parametrize("extra, expected", [
    ("env_kwargs: {ctrl_cost_weigth: 2}\n",
     "spec.yaml:10: env_kwargs.ctrl_cost_weigth: HalfCheetah-v5 takes no keyword argument 'ctrl_cost_weigth'; "
     "did you mean ctrl_cost_weight?"),
    ("grid:\n  env_kwargs.wobble: [1, 2]\n",
     "spec.yaml:11: grid.env_kwargs.wobble: HalfCheetah-v5 takes no keyword argument 'wobble'; it takes: "),
])
def test_env_kwargs_the_env_does_not_take_name_their_key(tmp_path, extra, expected):
    message = error_of(tmp_path, GOOD + extra, full=True).replace(str(tmp_path) + "/", "")
    assert message.startswith(expected), message


def test_variant_env_kwargs_the_env_does_not_take_name_their_key(tmp_path):
    text = GOOD.replace("xml: " + str(TINY_XML) + "}", "xml: " + str(TINY_XML) + ", env_kwargs: {wobble: 1}}")
    message = error_of(tmp_path, text, full=True).replace(str(tmp_path) + "/", "")
    assert message.startswith("spec.yaml:5: variants[0].env_kwargs.wobble: HalfCheetah-v5 takes no"), message


def test_env_kwargs_from_the_grid_are_checked(tmp_path):
    message = error_of(tmp_path, GOOD + "grid:\n  env_kwargs.ctrl_cost_weight: [0.1, oops]\n", full=True)
    assert "with env_kwargs {'ctrl_cost_weight': 'oops'}" in message


def test_glob_variants_are_named_by_stem(tmp_path):
    for name in ("w1", "w2"):
        (tmp_path / f"{name}.xml").write_bytes(TINY_XML.read_bytes())
    text = GOOD.replace(f"variants:\n  - {{name: a, xml: {TINY_XML}}}", "xml_glob: w*.xml")
    plan = prepare(write(tmp_path, text), check_envs=False)
    assert [c.variant.name for c in plan.checks] == ["w1", "w2"]
    assert len(plan.runs) == 4


def test_glob_matching_nothing(tmp_path):
    text = GOOD.replace(f"variants:\n  - {{name: a, xml: {TINY_XML}}}", "xml_glob: none*.xml")
    assert "spec.yaml:4: xml_glob: no file matches" in error_of(tmp_path, text, full=True).replace(
        str(tmp_path) + "/", "")


@pytest.mark.parametrize("command", ["run", "validate"])
def test_cli_exits_2_with_one_line_and_writes_nothing(tmp_path, command):
    path = write(tmp_path, GOOD.replace("seeds: 2", "seeds: [1, 1]") + "runs_dir: out\n")
    proc = run_sweep(command, str(path))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0] == f"error: {path}:6: seeds: seeds repeat"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("extra, expected", [
    ("ppo: {learning_rate: -1}", "spec.yaml:8: ppo.learning_rate: must be > 0 or a schedule such as 'lin_3e-4'"),
    ("ppo: {learning_rate: lin_x}", "spec.yaml:8: ppo.learning_rate: 'lin_x' is neither a number nor a schedule"),
    ("ppo: {clip_range: 0}", "spec.yaml:8: ppo.clip_range: must be > 0 or a schedule such as 'lin_0.2'"),
    ("ppo: {gamma: 1.5}", "spec.yaml:8: ppo.gamma: must be in (0, 1]"),
    ("ppo: {gamma: 0}", "spec.yaml:8: ppo.gamma: must be in (0, 1]"),
    ("ppo: {gae_lambda: -0.1}", "spec.yaml:8: ppo.gae_lambda: must be in [0, 1]"),
    ("ppo: {n_steps: 1}", "spec.yaml:8: ppo.n_steps: n_steps * n_envs must be > 1"),
    ("ppo: {n_steps: 2.5}", "spec.yaml:8: ppo.n_steps: must be an integer >= 1"),
    ("ppo: {batch_size: 1}", "spec.yaml:8: ppo.batch_size: must be an integer >= 2"),
    ("total_timesteps: 2.5e0", "spec.yaml:7: total_timesteps: Input should be a valid integer"),
])
def test_ppo_values_are_checked_before_launch(tmp_path, extra, expected):
    old = "total_timesteps: 256" if extra.startswith("total_timesteps") else "ppo: {n_steps: 64, batch_size: 32}"
    assert expected in error_of(tmp_path, GOOD.replace(old, extra))


def test_grid_values_are_checked(tmp_path):
    text = GOOD + "grid:\n  ppo.gamma: [0.99, 2]\n"
    assert "spec.yaml:11: grid.ppo.gamma: must be in (0, 1]" in error_of(tmp_path, text)


def test_whole_numbers_in_exponent_notation_are_integers(tmp_path):
    text = GOOD.replace("total_timesteps: 256", "total_timesteps: 1e6").replace(
        "n_steps: 64", "n_steps: 6.4e1") + "grid:\n  total_timesteps: [2e3, 3000]\n"
    spec = loading.load(write(tmp_path, text))
    assert spec.total_timesteps == 1_000_000 and isinstance(spec.total_timesteps, int)
    assert spec.ppo["n_steps"] == 64 and isinstance(spec.ppo["n_steps"], int)
    assert spec.grid["total_timesteps"] == [2000, 3000]


def test_schedules_are_accepted(tmp_path):
    text = GOOD.replace("ppo: {n_steps: 64, batch_size: 32}",
                        "ppo: {n_steps: 64, batch_size: 32, learning_rate: lin_3e-4, clip_range: lin_0.2}")
    spec = loading.load(write(tmp_path, text))
    assert spec.ppo["learning_rate"] == "lin_3e-4"


def test_batch_size_that_does_not_divide_the_rollout_is_a_warning(tmp_path):
    spec = loading.load(write(tmp_path, GOOD.replace("ppo: {n_steps: 64, batch_size: 32}",
                                                     "ppo: {n_steps: 7, batch_size: 64}")))
    assert len(spec.warnings) == 1
    assert "spec.yaml:8: ppo.batch_size: batch_size 64 does not divide the rollout" in spec.warnings[0]
    assert not loading.load(write(tmp_path, GOOD)).warnings


PPO_LINE = "ppo: {n_steps: 64, batch_size: 32}\n"


@pytest.mark.parametrize("section, expected", [
    ("algo: trpo\ntrpo: {n_steps: 1}",
     "spec.yaml:9: trpo.n_steps: n_steps * n_envs must be > 1 to normalize advantages (got 1 * 1)"),
    ("algo: recurrent_ppo\ngrid:\n  recurrent_ppo.n_steps: [64, 1]",
     "spec.yaml:10: grid.recurrent_ppo.n_steps: n_steps * n_envs must be > 1 to normalize advantages (got 1 * 1)"),
    ("algo: a2c\na2c: {n_steps: 1, normalize_advantage: true}",
     "spec.yaml:9: a2c.n_steps: n_steps * n_envs must be > 1 to normalize advantages (got 1 * 1)"),
    ("algo: recurrent_ppo\nrecurrent_ppo: {n_steps: 5, batch_size: 2}",
     "spec.yaml:9: recurrent_ppo.batch_size: batch_size 2 leaves a last batch of one sample (n_steps 5 * n_envs "
     "1 = 5), whose normalized advantages RecurrentPPO makes NaN: use a batch_size that divides the rollout, or "
     "normalize_advantage: false"),
])
def test_every_on_policy_rollout_is_checked_before_launch(tmp_path, section, expected):
    pytest.importorskip("sb3_contrib")
    assert expected in error_of(tmp_path, GOOD.replace(PPO_LINE, section + "\n"))


def test_rollouts_the_classes_train_load_with_their_part_batch_warnings(tmp_path):
    pytest.importorskip("sb3_contrib")

    def warnings_of(section: str) -> list[str]:
        return loading.load(write(tmp_path, GOOD.replace(PPO_LINE, section + "\n"))).warnings

    # a rollout of one trains where advantages are not normalized, as A2C's default; SAC's n_steps is
    # its n-step return, not a rollout
    assert warnings_of("algo: trpo\ntrpo: {n_steps: 1, batch_size: 1, normalize_advantage: false}") == []
    assert warnings_of("algo: a2c\na2c: {n_steps: 1}") == []
    assert warnings_of("algo: sac\nsac: {n_steps: 1}") == []
    [part] = warnings_of("algo: recurrent_ppo\nrecurrent_ppo: {n_steps: 7, batch_size: 4}")
    assert part.endswith("spec.yaml:9: recurrent_ppo.batch_size: batch_size 4 does not divide the rollout "
                         "(n_steps 7 * n_envs 1 = 7): each epoch ends with a batch of 3")
    # TRPO normalizes over the whole rollout, and RecurrentPPO here not at all: a batch of one is a warning
    [trpo] = warnings_of("algo: trpo\ntrpo: {n_steps: 5, batch_size: 2}")
    assert "trpo.batch_size: batch_size 2 does not divide the rollout" in trpo and trpo.endswith("a batch of 1")
    [lstm] = warnings_of("algo: recurrent_ppo\nrecurrent_ppo: {n_steps: 5, batch_size: 2, normalize_advantage: false}")
    assert "recurrent_ppo.batch_size: batch_size 2 does not divide" in lstm
    assert warnings_of("algo: recurrent_ppo\nrecurrent_ppo: {n_steps: 5, batch_size: null}") == []
    [gridded] = warnings_of("algo: trpo\ntrpo: {n_steps: 64}\ngrid:\n  trpo.batch_size: [32, 48]")
    assert "spec.yaml:11: grid.trpo.batch_size: batch_size 48 does not divide the rollout" in gridded


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_contrib_rollout_sb3_contrib_refuses_is_exit_2_before_launch(tmp_path, dry_run):
    pytest.importorskip("sb3_contrib")
    path = write(tmp_path, GOOD.replace(PPO_LINE, "algo: trpo\ntrpo: {n_steps: 1}\n") + "runs_dir: out\n")
    proc = run_sweep("run", str(path), *(["--dry-run"] if dry_run else []))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip() == f"error: {path}:9: trpo.n_steps: n_steps * n_envs must be > 1 to normalize " \
                                  "advantages (got 1 * 1)"
    assert not (tmp_path / "out").exists()
