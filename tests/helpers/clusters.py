"""The real clusters the slow launcher tests run on: two 1-CPU Ray nodes on loopback, and the two-node
SLURM of scripts/slurm_local.sh. conftest.py serves them as the `cluster` and `slurm_cluster` fixtures."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


@contextmanager
def two_node_ray_cluster() -> Iterator[Any]:
    """Two nodes, one CPU each, so two runs at once must land on different nodes."""
    from ray.cluster_utils import Cluster

    with pytest.MonkeyPatch.context() as mp:
        for key, value in RAY_ENV.items():
            mp.setenv(key, value)  # the `sweep` subprocesses inherit these too
        ray_cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
        try:
            ray_cluster.add_node(num_cpus=1)
            ray_cluster.wait_for_nodes()
            yield ray_cluster
        finally:
            ray_cluster.shutdown()


def slurm_cluster_problem() -> str | None:
    """Why no two-node SLURM is usable here, or None."""
    if not shutil.which("sbatch"):
        return "sbatch not on PATH (install SLURM and run scripts/slurm_local.sh start)"
    try:
        out = subprocess.run(["sinfo", "-N", "--noheader", "--responding", "--format=%N|%T"], capture_output=True,
                             text=True, timeout=60, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "sinfo did not answer within 60 s"
    if out.returncode != 0:
        return f"no SLURM controller answers: {' '.join(out.stderr.split())}"
    up = {n for n, _, state in (line.partition("|") for line in out.stdout.split())
          if state.rstrip("*") in ("idle", "mixed", "allocated", "completing")}
    return None if len(up) >= 2 else f"needs 2 SLURM nodes up, sinfo says: {' '.join(out.stdout.split())}"


def require_slurm_cluster() -> None:
    """Skips the test without a usable SLURM cluster; fails it instead where MJSWEEP_REQUIRE_CLUSTERS=1."""
    problem = slurm_cluster_problem()
    if problem and os.environ.get("MJSWEEP_REQUIRE_CLUSTERS") == "1":
        pytest.fail(f"MJSWEEP_REQUIRE_CLUSTERS=1 but {problem}")
    if problem:
        pytest.skip(problem)
