"""Sweep kinds as types (src/mjsweep/kinds): the one place that asks which kind a spec is, and what each kind
answers for the engine, the API and the command line, which never ask."""

from __future__ import annotations

import pytest

from helpers.commands import write_spec
from helpers.models import TINY_XML
from mjsweep.engine.sweep import prepare
from mjsweep.errors import InputError
from mjsweep.kinds import kind_of
from mjsweep.kinds.adaptive import AdaptiveSeedsKind
from mjsweep.kinds.grid import Grid
from mjsweep.kinds.pbt import Population
from mjsweep.kinds.search import SearchKind
from mjsweep.plan.order import Order
from mjsweep.spec.loading import load

SEARCH = {"method": "random", "trials": 2, "seeds_per_trial": 1, "seed": 3,
          "space": {"ppo.learning_rate": {"log_uniform": [1.0e-5, 1.0e-3]}}}
PBT = {"population": 2, "interval": 128, "seed": 3,
       "space": {"ppo.learning_rate": {"log_uniform": [1.0e-4, 1.0e-2]}}}


def _spec(tmp_path, tiny_spec, **changes):
    tiny_spec.update(changes)
    tiny_spec["variants"].append({"name": "twin", "xml": str(TINY_XML), "env_kwargs": {"ctrl_cost_weight": 2.0}})
    return write_spec(tmp_path, tiny_spec)


@pytest.fixture
def grid(tmp_path, tiny_spec):
    return _spec(tmp_path, tiny_spec, seeds=3)


def test_the_spec_chooses_its_kind(tmp_path, tiny_spec, grid):
    assert type(kind_of(load(grid))) is Grid
    adaptive = write_spec(tmp_path, {**tiny_spec, "seeds": {"min": 2, "max": 4, "until": "separated"}}, "a.yaml")
    assert type(kind_of(load(adaptive))) is AdaptiveSeedsKind
    searched = {k: v for k, v in tiny_spec.items() if k != "seeds"}
    assert type(kind_of(load(write_spec(tmp_path, {**searched, "search": SEARCH}, "s.yaml")))) is SearchKind
    population = {**searched, "total_timesteps": 256, "ppo": {"n_steps": 64, "batch_size": 32}, "pbt": PBT}
    assert type(kind_of(load(write_spec(tmp_path, population, "p.yaml")))) is Population


def test_a_grid_plans_its_runs_and_weighs_their_disk(grid):
    plan = prepare(grid)
    kind = kind_of(plan.spec)
    assert kind.plans_runs and kind.run_counts(plan) == (6, 6)
    check = kind.disk_check(plan, 2)
    assert check is not None and check.needed.runs == 6
    shown = kind.dry_run(plan, Order.BREADTH, 2, "local", None)
    assert [p.run.run_id for p in shown.planned] != [] and shown.pricing.cost.runs == 6 and shown.job_array
    reach = kind.reach(2)
    assert reach is not None and kind.reach(1) is None


def test_a_search_makes_its_runs_as_it_goes_and_refuses_slurm(tmp_path, tiny_spec):
    tiny_spec.pop("seeds")
    plan = prepare(_spec(tmp_path, tiny_spec, search=SEARCH))
    kind = kind_of(plan.spec)
    assert not kind.plans_runs and kind.run_counts(plan) == (0, 0)
    assert kind.disk_check(plan, 2) is None and kind.reach(2) is None
    shown = kind.dry_run(plan, Order.BREADTH, 2, "local", None)
    assert shown.at_most and shown.disk is None and not shown.planned
    assert [b.name for b in shown.blocks if hasattr(b, "name")] == [
        "study walker: the first trials the sampler proposes", "study twin: the first trials the sampler proposes"]
    with pytest.raises(InputError, match="a search makes its runs as slots free up: use --backend local or ray"):
        kind.open_runs(plan, Order.BREADTH, "slurm")


def test_adaptive_seeds_price_the_granted_seeds_and_at_most_max(tmp_path, tiny_spec):
    plan = prepare(_spec(tmp_path, tiny_spec, seeds={"min": 2, "max": 4, "until": "separated"}))
    kind = kind_of(plan.spec)
    shown = kind.dry_run(plan, Order.BREADTH, 2, "local", None)
    assert len(shown.planned) == 4 and shown.pricing.at_max is not None and shown.pricing.at_max.runs == 8
    assert shown.disk is not None and shown.disk.needed.runs == 8 and not shown.job_array
    assert shown.blocks[0].text.startswith("adaptive seeds: 2 groups x 2 to 4 seeds: at least 4 runs, at most 8")
    with pytest.raises(InputError, match="adaptive seeds add runs as results come in"):
        kind.open_runs(plan, Order.BREADTH, "slurm")


def test_only_a_kind_that_plans_its_runs_has_them_recorded_in_plan_json(tmp_path, tiny_spec, grid):
    from mjsweep.engine.status_recorder import StatusRecorder

    del tiny_spec["seeds"]  # the grid fixture's spec, its twin variant too
    searched = tmp_path / "searched"
    searched.mkdir()
    for spec in (grid, write_spec(searched, {**tiny_spec, "search": SEARCH})):
        plan = prepare(spec)
        plan.sweep_dir.path.mkdir(parents=True)
        kind = kind_of(plan.spec)
        opened = kind.open_runs(plan, Order.BREADTH, "local")(StatusRecorder(plan.sweep_dir, print), print)
        assert opened.plan_record is kind.plans_runs
        assert (opened.source is None) is kind.plans_runs  # a search hands out its runs as slots free up
