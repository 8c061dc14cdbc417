"""A real memory cgroup with a limit, for tests of the OOM killer: cgroup v1's memory hierarchy where mounted,
else a child of this process's cgroup v2 with the memory controller on. A test skips, saying why, where the
kernel refuses one (no cgroup filesystem, not root, a read-only one, a controller that is off)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mjsweep.launchers.oomkill import memory_cgroup


@contextmanager
def limited_cgroup(limit_bytes: int) -> Iterator[Path]:
    """A new memory cgroup limited to `limit_bytes` (swap included), removed after the block; its folder. A
    process joins it by writing its pid to `cgroup.procs`."""
    folder = _make(limit_bytes)
    try:
        yield folder
    finally:
        for _ in range(100):  # its last process may take a moment to leave
            try:
                folder.rmdir()
                break
            except OSError:
                time.sleep(0.05)


def _make(limit_bytes: int) -> Path:
    own = memory_cgroup()
    if own is None:
        pytest.skip("no memory cgroup here (neither a v1 memory hierarchy nor cgroup v2 with memory on)")
    name = f"mjsweep-test-{uuid.uuid4().hex[:8]}"
    # v1: anywhere in the hierarchy; v2: a child of a cgroup whose subtree has the memory controller.
    parent = own.root if own.version == 1 else own.path
    folder = parent / name
    try:
        folder.mkdir()
    except OSError as exc:
        pytest.skip(f"the kernel refuses a new memory cgroup under {parent}: {exc.strerror}")
    try:
        if own.version == 1:
            (folder / "memory.limit_in_bytes").write_text(str(limit_bytes))
            memsw = folder / "memory.memsw.limit_in_bytes"
            if memsw.exists():  # no swapping out of the limit: the OOM killer acts
                memsw.write_text(str(limit_bytes))
        else:
            if not (folder / "memory.max").exists():
                raise OSError(0, "the memory controller is off in its parent's subtree")
            (folder / "memory.max").write_text(str(limit_bytes))
            if (folder / "memory.swap.max").exists():
                (folder / "memory.swap.max").write_text("0")
    except OSError as exc:
        os.rmdir(folder)
        pytest.skip(f"the kernel refuses a memory limit on {folder}: {exc.strerror}")
    return folder
