"""Fixtures and hooks only: the real clusters and their markers, a private cache, a fresh tiny spec."""

from __future__ import annotations

import pytest
import yaml

from helpers.clusters import require_slurm_cluster, two_node_ray_cluster
from helpers.models import TINY_SPEC

CLUSTER_MARKERS = {"cluster": "ray", "slurm_cluster": "slurm"}
"""The fixture that starts a real cluster -> the marker of every test that uses it (`-m "not ray"`)."""


def pytest_collection_modifyitems(items):
    for item in items:
        for fixture, marker in CLUSTER_MARKERS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)


@pytest.fixture(scope="module")
def cluster():
    """A real two-node Ray cluster on loopback, one per test module."""
    with two_node_ray_cluster() as ray_cluster:
        yield ray_cluster


@pytest.fixture(scope="module")
def slurm_cluster():
    """The real two-node SLURM cluster of scripts/slurm_local.sh: skips without one, unless required."""
    require_slurm_cluster()


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """A `sweep bench` recommendation in the user's cache must not change the workers tests run with."""
    monkeypatch.setenv("MJSWEEP_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(autouse=True)
def _no_live_report(monkeypatch):
    """Every real `sweep run` would end with a report build of a second or two; tests/test_live_report.py
    asks for it with --report-every."""
    monkeypatch.setenv("MJSWEEP_REPORT_EVERY", "off")


@pytest.fixture
def tiny_spec() -> dict:
    """A fresh deep copy of TINY_SPEC to modify."""
    return yaml.safe_load(yaml.safe_dump(TINY_SPEC))
