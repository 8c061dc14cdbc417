"""Fixtures and hooks only: cluster markers, a private cache per test, a fresh tiny spec. Helpers are in helpers/."""

from __future__ import annotations

import pytest
import yaml

from helpers.models import TINY_SPEC

CLUSTER_MARKERS = {"cluster": "ray", "slurm_cluster": "slurm"}
"""The fixture that starts a real cluster -> the marker of every test that uses it (`-m "not ray"`)."""


def pytest_collection_modifyitems(items):
    for item in items:
        for fixture, marker in CLUSTER_MARKERS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """A `sweep bench` recommendation in the user's cache must not change the workers tests run with."""
    monkeypatch.setenv("MJSWEEP_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def tiny_spec() -> dict:
    """A fresh deep copy of TINY_SPEC to modify."""
    return yaml.safe_load(yaml.safe_dump(TINY_SPEC))
