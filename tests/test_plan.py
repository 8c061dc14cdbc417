"""Plan expansion: variants x grid x seeds, stable and content-addressed run ids."""

from __future__ import annotations

from pathlib import Path

from mjsweep.plan import runs as planlib
from mjsweep.robots.variants import Variant
from mjsweep.spec.loading import parse
from mjsweep.spec.locator import SpecLocator


def make_spec(**overrides):
    data = {"name": "s", "env": "Ant-v5", "variants": [{"name": "a", "xml": "a.xml"}],
            "seeds": 2, "total_timesteps": 1000, "ppo": {"n_steps": 64}}
    data.update(overrides)
    return parse(data, SpecLocator(Path("s.yaml"), None))


VARIANTS = [Variant("a", Path("/m/a.xml"), "aa" * 32), Variant("b", Path("/m/b.xml"), "bb" * 32, {"x": 1})]


def test_expansion_is_the_cartesian_product_in_a_stable_order():
    spec = make_spec(grid={"ppo.learning_rate": [0.001, 0.0003], "env_kwargs.ctrl_cost_weight": [0.5, 0.1]})
    runs = planlib.expand(spec, VARIANTS)
    assert len(runs) == 2 * 2 * 2 * 2
    first = runs[0]
    assert (first.variant, first.seed, first.grid) == ("a", 0, {"ppo.learning_rate": 0.001,
                                                                "env_kwargs.ctrl_cost_weight": 0.5})
    assert [r.seed for r in runs[:2]] == [0, 1]
    assert first.run_id.startswith("a_learning_rate=0.001_ctrl_cost_weight=0.5_s0_")
    assert first.hyperparams == {"n_steps": 64, "learning_rate": 0.001}
    assert first.policy == "MlpPolicy"
    assert len({r.run_id for r in runs}) == len(runs)


def test_grid_values_override_variant_and_sweep_env_kwargs():
    spec = make_spec(env_kwargs={"x": 0, "y": 5}, grid={"env_kwargs.x": [7]})
    run_b = planlib.expand(spec, VARIANTS)[2]
    assert run_b.variant == "b"
    assert run_b.env_kwargs == {"x": 7, "y": 5}


def test_nested_grid_keys_and_total_timesteps():
    spec = make_spec(grid={"ppo.policy_kwargs.net_arch": [[32, 32]], "total_timesteps": [500]})
    run = planlib.expand(spec, VARIANTS[:1])[0]
    assert run.hyperparams["policy_kwargs"] == {"net_arch": [32, 32]}
    assert run.total_timesteps == 500
    assert "net_arch=32x32" in run.run_id and "total_timesteps=500" in run.run_id


def test_ids_are_stable_and_change_with_content():
    spec = make_spec()
    ids = [r.run_id for r in planlib.expand(spec, VARIANTS)]
    assert ids == [r.run_id for r in planlib.expand(make_spec(), VARIANTS)]
    edited_xml = [Variant("a", Path("/m/a.xml"), "cc" * 32), VARIANTS[1]]
    assert planlib.expand(spec, edited_xml)[0].run_id != ids[0]
    assert planlib.expand(spec, edited_xml)[2].run_id == ids[2]  # variant b untouched
    assert planlib.expand(make_spec(total_timesteps=999), VARIANTS)[0].run_id != ids[0]
    assert planlib.expand(make_spec(ppo={"n_steps": 32}), VARIANTS)[0].run_id != ids[0]
    assert planlib.expand(make_spec(env_kwargs={"z": 1}), VARIANTS)[0].run_id != ids[0]
    # The readable part stays the same when only content changes: a new hash tells them apart.
    assert ids[0].rsplit("_", 1)[0] == planlib.expand(spec, edited_xml)[0].run_id.rsplit("_", 1)[0]


def test_eval_settings_do_not_change_ids():
    base = planlib.expand(make_spec(), VARIANTS)[0].run_id
    assert planlib.expand(make_spec(eval={"episodes": 3}), VARIANTS)[0].run_id == base


def test_checkpoint_settings_do_not_change_ids():
    """When a run saves does not change what it computes: existing sweeps keep their ids and resume."""
    before = ["a_s0_ba8822f0", "a_s1_e039ad7a", "b_s0_3d0cf056", "b_s1_fec0d13e"]  # ids before checkpoint_every_s
    for spec in (make_spec(), make_spec(checkpoint_every_s=30), make_spec(checkpoint_every_s=None),
                 make_spec(checkpoint_every=10)):
        assert [r.run_id for r in planlib.expand(spec, VARIANTS)] == before
    assert planlib.expand(make_spec(checkpoint_every_s=30), VARIANTS)[0].checkpoint_every_s == 30
    assert planlib.expand(make_spec(), VARIANTS)[0].checkpoint_every_s == 300


def test_explicit_seed_list_and_safe_long_ids():
    spec = make_spec(seeds=[7, 42], grid={"env_kwargs.some/odd key": ["v" * 300]})
    runs = planlib.expand(spec, VARIANTS[:1])
    assert [r.seed for r in runs] == [7, 42]
    for run in runs:
        assert len(run.run_id) <= planlib.MAX_ID_LENGTH
        assert "/" not in run.run_id and " " not in run.run_id


def test_groups_join_seeds_only():
    runs = planlib.expand(make_spec(grid={"ppo.gamma": [0.9, 0.99]}), VARIANTS)
    groups = {}
    for run in runs:
        groups.setdefault(run.group, []).append(run.seed)
    assert len(groups) == 4 and all(seeds == [0, 1] for seeds in groups.values())
