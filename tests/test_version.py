"""The version is written once, in pyproject.toml; everything else reads the installed metadata."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

import mjsweep
from helpers.commands import run_sweep

ROOT = Path(__file__).resolve().parents[1]


def test_package_metadata_carries_the_pyproject_version():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert version("mjsweep") == declared
    assert mjsweep.__version__ == declared


def test_sweep_version_prints_it():
    proc = run_sweep("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"mjsweep {version('mjsweep')}"
