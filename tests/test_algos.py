"""`algo: ppo | sac | td3 | a2c` and sb3-contrib's tqc | crossq | trpo | recurrent_ppo: each algorithm's
keyword arguments as the spec checks them, the runs the plan makes of them, and the SB3 arguments the
worker builds."""

from __future__ import annotations

import hashlib
import inspect
import json
import textwrap
import typing
from pathlib import Path

import pytest

from helpers.commands import run_sweep
from helpers.models import TINY_XML
from mjsweep.errors import SpecError
from mjsweep.plan import runs as plan
from mjsweep.robots.variants import Variant
from mjsweep.spec import algos, loading
from mjsweep.spec import sweepspec as speclib

HEAD = f"""\
name: demo
env: HalfCheetah-v5
max_episode_steps: 50
variants:
  - {{name: a, xml: {TINY_XML}}}
seeds: 1
total_timesteps: 256
"""
VARIANT = Variant(name="a", xml=Path("a.xml"), sha256="0" * 64)


def load(tmp_path: Path, text: str) -> speclib.SweepSpec:
    path = tmp_path / "spec.yaml"
    path.write_text(HEAD + textwrap.dedent(text))
    return loading.load(path)


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(SpecError) as info:
        load(tmp_path, text)
    message = str(info.value).replace(str(tmp_path) + "/", "")
    assert "\n" not in message
    return message


CLASSES = {"ppo": "PPO", "sac": "SAC", "td3": "TD3", "a2c": "A2C", "tqc": "TQC", "crossq": "CrossQ", "trpo": "TRPO",
           "recurrent_ppo": "RecurrentPPO"}


def test_the_algorithm_list_is_written_once_and_the_table_the_spec_and_its_sections_follow_it():
    assert sorted(algos.ALGOS) == sorted(algos.ALGO_NAMES)
    assert typing.get_args(speclib.SweepSpec.model_fields["algo"].annotation) == algos.ALGO_NAMES
    assert set(algos.ALGO_NAMES) <= set(speclib.SweepSpec.model_fields)


@pytest.mark.parametrize("name", algos.ALGO_NAMES)
def test_each_algorithms_keywords_match_the_installed_class(name):
    package = pytest.importorskip(algos.ALGOS[name].package)
    cls = getattr(package, CLASSES[name])
    params = inspect.signature(cls.__init__).parameters
    assert set(params) - {"self", "env"} == algos.ALGOS[name].kwargs
    takes_none = {key for key in algos.INTEGER_KWARGS if key in params and "None" in str(params[key].annotation)}
    assert takes_none == algos.ALGOS[name].nullable
    # the defaults the rollout check reads, for every algorithm that collects a rollout before its update
    read = {"n_steps", "batch_size", "normalize_advantage"} & set(params) if algos.ALGOS[name].has_rollout else set()
    assert {key: params[key].default for key in read} == algos.ALGOS[name].defaults
    assert algos.algorithm_class(name) is cls and algos.ALGOS[name].label == CLASSES[name]
    assert cls.__module__.split(".")[0] == algos.ALGOS[name].package  # the package a refusal names
    assert algos.ALGOS[name].policy in cls.policy_aliases
    assert algos.ALGOS[name].off_policy == (name in ("sac", "td3", "tqc", "crossq"))


@pytest.mark.parametrize(("text", "expected"), [
    ("algo: sac\nsac: {n_epochs: 3}\n",
     "spec.yaml:9: sac.n_epochs: unknown SAC keyword argument 'n_epochs' (known: batch_size, buffer_size,"),
    ("algo: td3\ntd3:\n  tau: 0.005\n  ent_coef: auto\n",
     "spec.yaml:11: td3.ent_coef: unknown TD3 keyword argument 'ent_coef'"),
    ("algo: a2c\na2c: {buffer_size: 1000}\n", "spec.yaml:9: a2c.buffer_size: unknown A2C keyword argument"),
    ("algo: sac\nsac: {action_noise: x}\n",
     "spec.yaml:9: sac.action_noise: 'action_noise' is set by mjsweep: use noise_type and noise_std"),
    ("algo: sac\nsac: {tau: 0}\n", "spec.yaml:9: sac.tau: must be in (0, 1] (got 0)"),
    ("algo: sac\nsac: {buffer_size: 0}\n", "spec.yaml:9: sac.buffer_size: must be an integer >= 1 (got 0)"),
    ("algo: sac\nsac: {learning_rate: lin_x}\n", "spec.yaml:9: sac.learning_rate: 'lin_x' is neither a number"),
    ("algo: sac\nsac: {ent_coef: autox}\n", "spec.yaml:9: sac.ent_coef: must be a number > 0, 'auto'"),
    ("algo: td3\ntd3: {train_freq: [1, hour]}\n",
     "spec.yaml:9: td3.train_freq: must be an integer >= 1 or [n, 'step' | 'episode']"),
    ("algo: td3\ntd3: {noise_std: 0.1}\n", "spec.yaml:9: td3.noise_std: needs noise_type"),
    ("algo: td3\ntd3: {noise_type: pink, noise_std: 0.1}\n",
     "spec.yaml:9: td3.noise_type: must be one of normal, ornstein-uhlenbeck (got 'pink')"),
    ("sac: {tau: 0.01}\n", "spec.yaml:8: sac: SAC hyperparameters, but no run trains SAC (algo: ppo)"),
    ("algo: sac\ngrid:\n  sac.n_epochs: [1, 2]\n", "spec.yaml:10: grid.sac.n_epochs: unknown SAC keyword argument"),
    ("algo: sac\ngrid:\n  sac.gamma: [0.99, 1.5]\n", "spec.yaml:10: grid.sac.gamma: must be in (0, 1] (got 1.5)"),
    ("grid:\n  td3.tau: [0.01]\n", "spec.yaml:9: grid.td3.tau: a grid of TD3 hyperparameters, but no run trains TD3"),
    ("grid:\n  algo: [ppo, dqn]\n", "spec.yaml:9: grid.algo: unknown algorithm 'dqn' (known: ppo, sac, td3, a2c, tqc, "
                                   "crossq, trpo, recurrent_ppo)"),
    ("algo: sac\ngrid:\n  algo: [ppo, sac]\n", "spec.yaml:8: algo: algo and grid.algo both given: keep one"),
    ("grid:\n  algo: [{sac: 1}]\n", "spec.yaml:9: grid.algo: unknown algorithm {'sac': 1}"),
    ("algo: dqn\n", "spec.yaml:8: algo: Input should be 'ppo', 'sac', 'td3', 'a2c', 'tqc', 'crossq', 'trpo' or "
                    "'recurrent_ppo'"),
    ("algo: tqc\ntqc: {n_epochs: 3}\n", "spec.yaml:9: tqc.n_epochs: unknown TQC keyword argument 'n_epochs'"),
    ("algo: tqc\ntqc: {top_quantiles_to_drop_per_net: -1}\n",
     "spec.yaml:9: tqc.top_quantiles_to_drop_per_net: must be an integer >= 0 (got -1)"),
    ("algo: tqc\ntqc: {ent_coef: autox}\n", "spec.yaml:9: tqc.ent_coef: must be a number > 0, 'auto'"),
    ("algo: crossq\ncrossq: {tau: 0.005}\n", "spec.yaml:9: crossq.tau: unknown CrossQ keyword argument 'tau'"),
    ("algo: crossq\ncrossq: {policy_delay: 0}\n", "spec.yaml:9: crossq.policy_delay: must be an integer >= 1"),
    ("algo: trpo\ntrpo: {clip_range: 0.2}\n", "spec.yaml:9: trpo.clip_range: unknown TRPO keyword argument"),
    ("algo: trpo\ntrpo: {target_kl: null}\n", "spec.yaml:9: trpo.target_kl: must be a number > 0: TRPO's step"),
    ("algo: trpo\ntrpo: {line_search_shrinking_factor: 1}\n",
     "spec.yaml:9: trpo.line_search_shrinking_factor: must be in (0, 1) (got 1)"),
    ("algo: recurrent_ppo\nrecurrent_ppo: {batch_size: 1}\n",
     "spec.yaml:9: recurrent_ppo.batch_size: must be an integer >= 2 (got 1)"),
    ("ppo: {n_steps: null}\n", "spec.yaml:8: ppo.n_steps: must be an integer >= 1 (got None)"),
    ("algo: trpo\ngrid:\n  trpo.batch_size: [64, null]\n",
     "spec.yaml:10: grid.trpo.batch_size: must be an integer >= 1 (got None)"),
    ("algo: recurrent_ppo\nrecurrent_ppo: {rollout_buffer_kwargs: {}}\n",
     "spec.yaml:9: recurrent_ppo.rollout_buffer_kwargs: unknown RecurrentPPO keyword argument"),
    ("tqc: {tau: 0.01}\n", "spec.yaml:8: tqc: TQC hyperparameters, but no run trains TQC (algo: ppo)"),
    ("algo: tqc\ngrid:\n  crossq.tau: [0.01]\n", "spec.yaml:10: grid.crossq.tau: a grid of CrossQ hyperparameters"),
])
def test_bad_hyperparameters_name_file_line_and_key(tmp_path, text, expected):
    assert expected in error_of(tmp_path, text)


def test_recurrent_ppo_takes_a_null_batch_size_as_its_class_does(tmp_path):
    spec = load(tmp_path, "algo: recurrent_ppo\nrecurrent_ppo: {n_steps: 64, batch_size: null}\n")
    [run] = plan.expand(spec, [VARIANT])
    assert run.hyperparams == {"n_steps": 64, "batch_size": None}


def test_contrib_runs_take_their_own_policy_checkpoints_and_model_check(tmp_path):
    from mjsweep.engine.modelcheck import needs_build

    spec = load(tmp_path, "grid:\n  algo: [ppo, tqc, crossq, trpo, recurrent_ppo]\n")
    runs = {r.algo: r for r in plan.expand(spec, [VARIANT])}
    assert runs["recurrent_ppo"].policy == "MlpLstmPolicy" and runs["tqc"].policy == "MlpPolicy"
    assert {algo: r.checkpoint_every for algo, r in runs.items()} == {
        "ppo": 50_000, "tqc": algos.OFF_POLICY_CHECKPOINT_EVERY, "crossq": algos.OFF_POLICY_CHECKPOINT_EVERY,
        "trpo": 50_000, "recurrent_ppo": 50_000}
    # each algorithm's own default policy and checked keys ask for no model build; another policy does
    assert not any(needs_build(r) for r in runs.values())
    [lstm] = plan.expand(load(tmp_path, "algo: recurrent_ppo\nrecurrent_ppo: {policy: MlpPolicy}\n"), [VARIANT])
    assert needs_build(lstm)


def test_a_wrong_policy_for_recurrent_ppo_is_sb3s_own_words_at_its_section(tmp_path):
    pytest.importorskip("sb3_contrib")
    path = tmp_path / "spec.yaml"
    path.write_text(HEAD + "algo: recurrent_ppo\nrecurrent_ppo: {policy: MlpPolicy, n_steps: 64, batch_size: 32}\n")
    done = run_sweep("validate", str(path))
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {path}:9: recurrent_ppo: ") and "MlpPolicy" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_bad_keyword_is_exit_2_from_the_command_line(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(HEAD + "algo: sac\nsac: {clip_range: 0.2}\n")
    done = run_sweep("validate", str(path))
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {path}:9: sac.clip_range: unknown SAC keyword argument 'clip_range' " \
        f"(known: {', '.join(sorted(algos.accepted(algos.ALGOS['sac']) - set(algos.OWNED)))})"


def test_rl_zoo_spellings_validate(tmp_path):
    spec = load(tmp_path, """\
        algo: td3
        td3:
          learning_rate: lin_1e-3
          buffer_size: 1e6
          learning_starts: 1e4
          train_freq: [1, episode]
          gradient_steps: -1
          noise_type: ornstein-uhlenbeck
          noise_std: 0.1
          policy_kwargs: "dict(net_arch=[400, 300])"
        grid:
          td3.tau: [0.005, 0.01]
        """)
    assert spec.td3["buffer_size"] == 1_000_000 and spec.td3["learning_starts"] == 10_000
    assert spec.td3["policy_kwargs"] == {"net_arch": [400, 300]}
    runs = plan.expand(spec, [VARIANT])
    assert [(r.algo, r.hyperparams["tau"]) for r in runs] == [("td3", 0.005), ("td3", 0.01)]


def test_a_ppo_run_keeps_its_id_and_another_algorithm_gets_its_own(tmp_path):
    implicit = plan.expand(load(tmp_path, "ppo: {n_steps: 64}\n"), [VARIANT])[0]
    explicit = plan.expand(load(tmp_path, "algo: ppo\nppo: {n_steps: 64}\n"), [VARIANT])[0]
    assert implicit.run_id == explicit.run_id and implicit.algo == "ppo"
    # the content hash as it was computed before `algo` existed: a PPO run's id does not change
    before = {"env": "HalfCheetah-v5", "xml_sha256": "0" * 64, "env_kwargs": {}, "max_episode_steps": 50,
              "policy": "MlpPolicy", "ppo": {"n_steps": 64}, "seed": 0, "total_timesteps": 256, "n_envs": 1,
              "vec_env": "dummy", "device": "cpu"}
    assert implicit.content_hash == hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()
    a2c = plan.expand(load(tmp_path, "algo: a2c\na2c: {n_steps: 64}\n"), [VARIANT])[0]
    assert a2c.algo == "a2c" and a2c.hyperparams == {"n_steps": 64} and a2c.content_hash != implicit.content_hash


def test_an_algo_grid_gives_each_algorithm_only_its_own_grid_keys(tmp_path):
    spec = load(tmp_path, """\
        ppo: {n_steps: 64}
        sac: {learning_starts: 10}
        grid:
          algo: [ppo, sac]
          sac.tau: [0.005, 0.01]
        """)
    runs = plan.expand(spec, [VARIANT])
    assert [r.grid for r in runs] == [{"algo": "ppo"}, {"algo": "sac", "sac.tau": 0.005},
                                      {"algo": "sac", "sac.tau": 0.01}]
    assert runs[0].hyperparams == {"n_steps": 64}
    assert runs[2].hyperparams == {"learning_starts": 10, "tau": 0.01}
    assert runs[0].group == "a algo=ppo" and runs[1].group == "a algo=sac sac.tau=0.005"
    assert len({r.run_id for r in runs}) == 3


def test_off_policy_runs_checkpoint_less_often_unless_the_spec_says(tmp_path):
    [sac] = plan.expand(load(tmp_path, "algo: sac\n"), [VARIANT])
    assert (sac.checkpoint_every, sac.checkpoint_every_s) == (algos.OFF_POLICY_CHECKPOINT_EVERY,
                                                              algos.OFF_POLICY_CHECKPOINT_EVERY_S)
    [ppo] = plan.expand(load(tmp_path, "algo: ppo\n"), [VARIANT])
    assert (ppo.checkpoint_every, ppo.checkpoint_every_s) == (50_000, 300.0)
    [given] = plan.expand(load(tmp_path, "algo: td3\ncheckpoint_every: 5000\ncheckpoint_every_s: null\n"),
                          [VARIANT])
    assert (given.checkpoint_every, given.checkpoint_every_s) == (5000, None)


def test_spec_json_written_before_algo_reads_as_ppo(tmp_path):
    [run] = plan.expand(load(tmp_path, "ppo: {n_steps: 64}\n"), [VARIANT])
    old = run.model_dump(mode="json")
    old["ppo"] = old.pop("hyperparams")
    del old["algo"]
    again = plan.RunSpec.model_validate(old)
    assert again.algo == "ppo" and again.hyperparams == {"n_steps": 64}


def test_the_example_config_compares_ppo_and_sac_on_the_ant_variants():
    config = Path(__file__).resolve().parents[1] / "configs" / "ant_algos.yaml"
    spec = loading.load(config)
    runs = plan.expand(spec, [Variant(name=v.name, xml=v.xml, sha256="0" * 64) for v in spec.variants])
    assert spec.algos == ["ppo", "sac"] and len(runs) == 3 * 2 * 3
    assert {(r.algo, r.checkpoint_every) for r in runs} == {("ppo", 50_000), ("sac", 100_000)}


def test_the_contrib_config_trains_tqc_and_recurrent_ppo_on_ant_and_validates(tmp_path):
    pytest.importorskip("sb3_contrib")
    config = Path(__file__).resolve().parents[1] / "configs" / "ant_contrib.yaml"
    spec = loading.load(config)
    runs = plan.expand(spec, [Variant(name=v.name, xml=v.xml, sha256="0" * 64) for v in spec.variants])
    assert spec.env == "Ant-v5" and spec.algos == ["tqc", "recurrent_ppo"]
    assert {(r.algo, r.policy, r.checkpoint_every) for r in runs} == {
        ("tqc", "MlpPolicy", 100_000), ("recurrent_ppo", "MlpLstmPolicy", 50_000)}
    done = run_sweep("validate", str(config))
    assert done.returncode == 0, done.stdout + done.stderr
