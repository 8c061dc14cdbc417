"""cpus_per_run: the CPU slots each run takes from the --workers cap, given or derived."""

from __future__ import annotations

from pathlib import Path

import pytest

from mjsweep.errors import SpecError
from mjsweep.plan import runs as planlib
from mjsweep.robots.variants import Variant
from mjsweep.spec.loading import parse
from mjsweep.spec.locator import SpecLocator

VARIANTS = [Variant("a", Path("/m/a.xml"), "aa" * 32)]


def make_spec(**overrides):
    data = {"name": "s", "env": "Ant-v5", "variants": [{"name": "a", "xml": "a.xml"}],
            "seeds": 2, "total_timesteps": 1000}
    data.update(overrides)
    return parse(data, SpecLocator(Path("s.yaml"), None))


def test_derived_cpus_is_one_slot_per_run_even_with_several_envs():
    # n_envs environments step in turn inside the run's one single-threaded process.
    for spec in (make_spec(), make_spec(n_envs=4)):
        assert [r.cpus for r in planlib.expand(spec, VARIANTS)] == [1, 1]


def test_cpus_per_run_is_carried_by_every_run_and_leaves_ids_alone():
    plain = planlib.expand(make_spec(), VARIANTS)
    wide = planlib.expand(make_spec(cpus_per_run=3), VARIANTS)
    assert [r.cpus for r in wide] == [3, 3]
    assert [r.run_id for r in wide] == [r.run_id for r in plain]  # slots do not change what a run computes


@pytest.mark.parametrize("value", [0, -1, "two"])
def test_invalid_cpus_per_run_names_the_key(value):
    with pytest.raises(SpecError, match="cpus_per_run"):
        make_spec(cpus_per_run=value)
