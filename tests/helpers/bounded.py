"""The real `sweep` command under resource limits the kernel enforces, and checksums of folders: hostile input
is judged by what the child may spend and what it leaves on disk, never by a wall clock."""

from __future__ import annotations

import hashlib
import os
import resource
import subprocess
from pathlib import Path

from helpers.commands import sweep_exe

MEMORY_LIMIT = 1 << 30
"""RLIMIT_AS of the child: address space, not resident memory. `sweep validate` and `sweep run --dry-run` of
the tiny spec run within 256 MiB of it on the machine of BENCHMARKS.md (numpy, MuJoCo and typer mapped, torch
not imported); 1 GiB leaves them room, and stops a spec that expands a YAML alias bomb (3 GB) or builds a
billion seeds long before it hurts the machine: the child dies of MemoryError instead of exit 2."""
CPU_LIMIT = 60
"""RLIMIT_CPU of the child, in CPU seconds: the kernel's SIGXCPU, so a loaded machine's waits do not count."""


def bounded_sweep(*args: str, cwd: Path | None = None, env: dict | None = None,
                  cpu_s: int = CPU_LIMIT) -> subprocess.CompletedProcess:
    """`sweep ARGS` within MEMORY_LIMIT and `cpu_s` CPU seconds (children it starts inherit them)."""
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))

    # One BLAS thread: OpenBLAS maps a buffer per core at import, which would tie the limit to the machine.
    full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", "OPENBLAS_NUM_THREADS": "1", **(env or {})}
    return subprocess.run([sweep_exe(), *args], cwd=cwd, capture_output=True, text=True, env=full_env,
                          stdin=subprocess.DEVNULL, preexec_fn=limits, timeout=900)


def tree_digest(folder: Path) -> dict[str, str]:
    """Every entry under `folder` -> the sha256 of a file's bytes, a link's target or 'dir'; links not followed."""
    digest: dict[str, str] = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root, name)
            rel = str(path.relative_to(folder))
            if path.is_symlink():
                digest[rel] = "link:" + os.readlink(path)
            elif path.is_dir():
                digest[rel] = "dir"
            else:
                digest[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """The `error:` line of a refused command, checked to be its only output on stderr: no traceback."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, (result.returncode, result.stderr[-3000:])
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, result.stderr[-3000:]
    return errors[0]
