"""How every launcher that runs the worker itself (local, a Ray actor) and `sweep verify` start it: the
worker's argument list, started as childproc starts every child (own process group, one-thread pools, dying
with its parent), its output on the run's log."""

from __future__ import annotations

import sys
from pathlib import Path

from ..childproc import Child


def worker_command(run_dir: Path) -> list[str]:
    return [sys.executable, "-m", "mjsweep.worker", str(run_dir)]


def spawn_worker(command: list[str], cwd: Path, log: Path, env: dict[str, str]) -> Child:
    """Start `command` in `cwd`, its output appended to `log`."""
    return Child.start(command, env=env, cwd=cwd, log=log)
