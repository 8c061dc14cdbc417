"""The real `sweep` command run as a user would, spec files written for it, and polling for what it writes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml


def sweep_exe() -> str:
    """The installed console script, next to this Python."""
    exe = Path(sys.executable).with_name("sweep")
    return str(exe) if exe.exists() else shutil.which("sweep") or "sweep"


def run_sweep(*args: str, cwd: Path | None = None, timeout: float = 600, env: dict | None = None
              ) -> subprocess.CompletedProcess:
    """`sweep ARGS` as a real subprocess, as a user's shell script would call it."""
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run([sweep_exe(), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=full_env, stdin=subprocess.DEVNULL)


def start_sweep(spec: Path, *args: str) -> subprocess.Popen:
    """`sweep run SPEC ARGS` in the background, in its own session, its output in launcher.out beside the spec."""
    out = open(spec.parent / "launcher.out", "ab")
    return subprocess.Popen([sweep_exe(), "run", str(spec), *args], stdout=out, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "NO_COLOR": "1"})


def launcher_output(spec: Path) -> str:
    return (spec.parent / "launcher.out").read_text()


def run_dirs(sweep_dir: Path) -> list[Path]:
    """The sweep's run folders written so far (those with a spec.json), in name order."""
    return sorted(p for p in sweep_dir.iterdir() if (p / "spec.json").exists()) if sweep_dir.exists() else []


def status_of(run_dir: Path) -> dict:
    """A run's status.json as a dict, empty before the launcher first writes it."""
    try:
        return json.loads((run_dir / "status.json").read_text())
    except FileNotFoundError:
        return {}


def wait_for(condition, what: str = "condition", timeout: float = 600.0, every: float = 0.2):
    """Poll `condition` until it returns something truthy, and return that. The timeout is generous: a
    bound on a hang, never on speed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


def write_spec(folder: Path, data: dict, name: str = "spec.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
