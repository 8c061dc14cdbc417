"""The free space where a sweep will write: its folder, or the nearest folder above it that exists yet."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import psutil


@dataclass(frozen=True)
class Room:
    free: int
    """Bytes free to this user (shutil.disk_usage)."""
    device: str
    """The filesystem's device as the mount table names it (/dev/nvme0n1p2, tmpfs), else its mount point."""


def room(path: Path) -> Room:
    where = Path(os.path.abspath(path))
    while not where.exists() and where != where.parent:
        where = where.parent
    return Room(shutil.disk_usage(where).free, _device(where))


def _device(path: Path) -> str:
    """The device of the mount that holds `path`: the longest mount point above it."""
    real = os.path.realpath(path)
    best = None
    for part in psutil.disk_partitions(all=True):
        mount = part.mountpoint.rstrip("/") or "/"
        if (real == mount or real.startswith(mount.rstrip("/") + "/")) and (best is None or len(mount) > len(best[0])):
            best = (mount, part.device or mount)
    return best[1] if best else real
