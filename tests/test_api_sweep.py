"""The Python API on a real sweep it trains: two variants of the tiny walker, two seeds each, run with
mjsweep.run, read back, compared, and the best policy stepped; and docs/api.md's examples run against it."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import mjsweep
from helpers.commands import write_spec
from helpers.models import REPO, TINY_LONG_XML, TINY_SPEC, TINY_XML

API_DOC = REPO / "docs" / "api.md"


def tiny_sweep() -> dict:
    return {**TINY_SPEC, "variants": [{"name": "walker", "xml": str(TINY_XML)},
                                      {"name": "long", "xml": str(TINY_LONG_XML)}],
            "seeds": 2, "total_timesteps": 256, "ppo": {"n_steps": 64, "batch_size": 64, "n_epochs": 1}}


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, mjsweep.Sweep]:
    """The folder of tiny.yaml (runs_dir: runs) and the sweep mjsweep.run trained there."""
    folder = tmp_path_factory.mktemp("api")
    spec = write_spec(folder, tiny_sweep(), "tiny.yaml")
    events = []
    sweep = mjsweep.run(spec, workers=2, on_event=events.append)
    assert any(e.kind.value == "succeeded" for e in events)
    return folder, sweep


def test_a_sweep_run_from_python_is_read_back_compared_and_its_best_policy_acts(trained):
    folder, sweep = trained
    assert sweep.path == folder / "runs" / "tiny"
    assert sorted((r.variant, r.seed, r.state) for r in sweep.runs) == [
        ("long", 0, "succeeded"), ("long", 1, "succeeded"), ("walker", 0, "succeeded"), ("walker", 1, "succeeded")]
    assert all(r.timesteps == 256 and r.fps and math.isfinite(r.final_return) for r in sweep.runs)
    (comparison,) = sweep.compare("walker", "long")
    assert {comparison.a, comparison.b} == {"walker", "long"} and comparison.seeds_a == comparison.seeds_b == 2

    best = sweep.best("walker")
    assert best.final_return == max(r.final_return for r in sweep.runs if r.variant == "walker")
    policy = best.policy()
    env = policy.make_env()
    obs, _ = env.reset(seed=0)
    state, start = None, True
    for _ in range(20):
        action, state = policy.predict(obs, state=state, episode_start=np.array([start]))
        assert env.action_space.contains(action.astype(env.action_space.dtype))
        obs, reward, terminated, truncated, _ = env.step(action)
        assert math.isfinite(float(reward))
        start = terminated or truncated
        if start:
            obs, _ = env.reset()
    assert len(policy.rollout(20, seed=0)) == 20


@pytest.mark.slow
def test_a_normalized_off_policy_and_a_recurrent_policy_act_through_the_api(tmp_path):
    pytest.importorskip("sb3_contrib")
    spec = {**tiny_sweep(), "variants": [{"name": "walker", "xml": str(TINY_XML)}], "seeds": 1, "normalize": True,
            "grid": {"algo": ["sac", "recurrent_ppo"]}, "ppo": {},
            "sac": {"learning_starts": 64, "batch_size": 32, "buffer_size": 1000, "train_freq": 8,
                    "policy_kwargs": {"net_arch": [16]}},
            "recurrent_ppo": {"n_steps": 64, "batch_size": 32, "n_epochs": 1,
                              "policy_kwargs": {"lstm_hidden_size": 16, "net_arch": [16]}}}
    sweep = mjsweep.run(write_spec(tmp_path, spec), workers=2)
    for algo in ("sac", "recurrent_ppo"):
        policy = sweep.best(f"walker algo={algo}").policy()
        assert type(policy.model).__name__ == {"sac": "SAC", "recurrent_ppo": "RecurrentPPO"}[algo]
        assert policy.normalization is not None and not policy.normalization.training
        # predict normalizes a raw observation as the vec env with the run's statistics does
        venv = policy.make_vec_env()
        venv.seed(3)
        normalized = venv.reset()[0]
        raw, _ = policy.make_env().reset(seed=3)
        assert np.allclose(policy.normalize(raw), normalized) and not np.allclose(raw, normalized)
        venv.close()
        action, state = policy.predict(raw, episode_start=np.array([True]))
        assert (state is not None) == (algo == "recurrent_ppo")
        assert np.array_equal(action, policy.model.predict(normalized, state=None, episode_start=np.array([True]),
                                                           deterministic=True)[0])
        assert len(policy.rollout(20, seed=0)) == 20


def test_the_examples_in_docs_api_md_run(trained, monkeypatch, capsys):
    folder, _ = trained
    blocks = re.findall(r"```python\n(.*?)```", API_DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 5
    monkeypatch.chdir(folder)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(API_DOC), "exec"), namespace)
    assert namespace["plan"].to_run == 0 and namespace["plan"].runs == 4  # the trained runs are skipped
    assert "over 20 steps" in capsys.readouterr().out


def test_a_sweep_is_a_sequence_of_its_runs_and_its_best_is_by_any_metric(trained):
    _, sweep = trained
    assert len(sweep) == 4 and list(sweep) == sweep.runs and sweep[0] is sweep.runs[0] and sweep[-2:] == sweep.runs[2:]
    assert sweep.runs[1] in sweep and isinstance(sweep[0], mjsweep.Run)
    highest = sweep.best(metric="final_return")
    assert highest.final_return == max(r.final_return for r in sweep)
    assert sweep.best(metric="final_return", mode="min").final_return == min(r.final_return for r in sweep)
    assert all(r.cpu_s and r.cpu_s > 0 for r in sweep)
    assert sweep.best(metric="cpu_s", mode="min").cpu_s == min(r.cpu_s for r in sweep)
    # A search objective's metric reads one seed's value: eval_iqm is its final evaluation's mean return.
    assert sweep.best(metric="eval_iqm") is highest
    walker = sweep.best("walker", metric="fps")
    assert walker.variant == "walker" and walker.fps == max(r.fps for r in sweep if r.variant == "walker")
    with pytest.raises(mjsweep.InputError, match="no succeeded run has a best_return value"):
        sweep.best(metric="best_return")  # no periodic evaluation (eval.every) in this sweep
    with pytest.raises(mjsweep.InputError, match=r"metric 'speed': expected one of final_return, best_return, cpu_s"):
        sweep.best(metric="speed")
    with pytest.raises(mjsweep.InputError, match="mode 'up': expected max or min"):
        sweep.best(metric="fps", mode="up")
    with pytest.raises(mjsweep.InputError, match="not a search, so no objective"):
        sweep.best(metric="objective")


def test_report_and_compare_return_the_types_mjsweep_exports(trained):
    _, sweep = trained
    assert all(isinstance(g, mjsweep.GroupRow) for g in sweep.report())
    assert all(isinstance(c, mjsweep.Comparison) for c in sweep.compare())


def test_a_grid_has_no_trials_no_lineage_and_no_cross_matrix_before_one_is_evaluated(trained):
    _, sweep = trained
    with pytest.raises(mjsweep.InputError, match="not a search"):
        sweep.trials()
    with pytest.raises(mjsweep.InputError, match="not a population-based training sweep"):
        sweep.lineage()
    with pytest.raises(mjsweep.InputError, match="no cross-evaluation yet"):
        sweep.cross_matrix()


@pytest.mark.slow
def test_the_cross_matrix_is_sweep_evaluate_crosss(trained, tmp_path):
    import shutil

    from helpers.commands import run_sweep

    _, sweep = trained
    copy = tmp_path / "tiny"  # evaluated in a copy: the module's other tests read the sweep as trained
    shutil.copytree(sweep.path, copy)
    done = run_sweep("evaluate", str(copy), "--cross", "--episodes", "1", "--workers", "2")
    assert done.returncode == 0, done.stderr
    cells = mjsweep.load(copy).cross_matrix()
    assert all(isinstance(c, mjsweep.CrossCell) for c in cells)
    assert sorted((c.train, c.test, c.seeds) for c in cells) == [
        ("long", "long", 2), ("long", "walker", 2), ("walker", "long", 2), ("walker", "walker", 2)]
    assert all(c.mean is not None and c.ci_low <= c.mean <= c.ci_high for c in cells)
