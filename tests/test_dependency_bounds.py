"""Every lower bound pyproject.toml declares for a core dependency (and for the extras CI checks at their
lowest) is pinned in .ci/lowest.txt, which .ci/run installs and tests: a bound nobody runs is a promise
nobody checked."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
CHECKED_EXTRAS = ("search", "contrib")
"""Extras whose lower bounds the lowest-versions step runs too (the others need a cluster, a GPU library or
an account: their tests run at the versions CI resolves)."""

REQUIREMENT = re.compile(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*(?:(==|>=)\s*([0-9][^,;\s]*))?")


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def _bounds(requirements: list[str]) -> dict[str, str]:
    """{package: its lower (or pinned) version} of each requirement that names one."""
    found = {}
    for line in requirements:
        match = REQUIREMENT.match(line.strip())
        if match and match.group(3):
            found[_name(match.group(1))] = match.group(3)
    return found


def _pins() -> dict[str, str]:
    lines = (ROOT / ".ci" / "lowest.txt").read_text().splitlines()
    return _bounds([line for line in lines if line.strip() and not line.startswith("#")])


def test_every_checked_lower_bound_is_pinned_in_the_lowest_versions_file():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = _bounds(project["dependencies"])
    for extra in CHECKED_EXTRAS:
        declared.update(_bounds(project["optional-dependencies"][extra]))
    declared.pop("torch")  # pinned exactly, and installed as such in every step
    pins = _pins()
    missing = sorted(set(declared) - set(pins))
    assert not missing, f"lower bounds with no pin in .ci/lowest.txt: {missing}"
    assert {name: Version(pins[name]) for name in declared} == {name: Version(v) for name, v in declared.items()}


def test_the_lowest_versions_step_installs_the_pins_and_runs_tests():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "-r .ci/lowest.txt" in ci
    assert re.search(r'PYTHONPATH="\$lowest" \.venv/bin/python -m pytest', ci)
