"""Every requirement in pyproject.toml has a lower bound, and every lower bound (of a core dependency or of
an extra) is pinned in .ci/lowest.txt, which .ci/run installs and tests: a bound nobody runs is a promise
nobody checked, and a requirement with no bound promises every release ever made."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENT = re.compile(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*(?:(==|>=)\s*([0-9][^,;\s]*))?")
SELF = "mjsweep"
"""An extra that names another (`mjsweep[render]`) adds that one's requirements, checked where they stand."""


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


def _requirements() -> list[str]:
    """Every requirement pyproject.toml declares, core and extras, less the extras' references to each other."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = [*project["dependencies"], *(line for extra in project["optional-dependencies"].values()
                                         for line in extra)]
    return [line for line in lines if _name(REQUIREMENT.match(line).group(1)) != SELF]


def test_every_requirement_has_a_lower_bound():
    unbounded = [line for line in _requirements() if not REQUIREMENT.match(line).group(3)]
    assert not unbounded, f"requirements with no lower bound in pyproject.toml: {unbounded}"


def test_every_lower_bound_is_pinned_in_the_lowest_versions_file():
    # torch, ruff and mypy are pinned exactly, and installed as such in every step
    declared = _bounds([line for line in _requirements() if REQUIREMENT.match(line).group(2) != "=="])
    pins = _pins()
    missing = sorted(set(declared) - set(pins))
    assert not missing, f"lower bounds with no pin in .ci/lowest.txt: {missing}"
    assert {name: Version(pins[name]) for name in declared} == {name: Version(v) for name, v in declared.items()}


def test_the_lowest_versions_step_installs_the_pins_and_runs_tests():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "-r .ci/lowest.txt" in ci
    assert re.search(r'PYTHONPATH="\$lowest" \.venv/bin/python -m pytest', ci)
