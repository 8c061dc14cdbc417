"""Real filesystems that tests mount, each in a mount namespace of its own (the mounts end with it): a tmpfs,
or an ext4 image on a loop device, remounted read-only where a test says. A test skips, saying why, where the
kernel refuses (no mount namespace, no loop device, no mkfs.ext4)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def unshare_mount() -> list[str]:
    """The command that runs another in a mount namespace of its own (skips where there is none)."""
    base = ["unshare", "--mount"] + ([] if os.geteuid() == 0 else ["--map-root-user"])
    if subprocess.run([*base, "true"], capture_output=True).returncode != 0:
        pytest.skip("no mount namespace here (unshare --mount)")
    return base


def mount_command(kind: str, folder: Path, size: int = 16 * 2**20) -> str:
    """A shell command that mounts a fresh, empty filesystem of `kind` ("tmpfs" or "ext4") on `folder`."""
    if kind == "tmpfs":
        return f"mount -t tmpfs -o size={size} tmpfs {folder}"
    if not shutil.which("mkfs.ext4") or not shutil.which("losetup"):
        pytest.skip("no mkfs.ext4 or losetup here for an ext4 image")
    image = folder.parent / f"{folder.name}.img"
    with open(image, "wb") as fh:
        fh.truncate(size)
    made = subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"mkfs.ext4 refused an image: {made.stderr.strip()}")
    probe = subprocess.run([*unshare_mount(), "sh", "-c", f"mount -o loop {image} {folder}"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"the kernel refuses a loop mount here: {probe.stderr.strip()}")
    return f"mount -o loop {image} {folder}"


def in_mounted(kind: str, folder: Path, script: str) -> subprocess.CompletedProcess:
    """`script` run by sh with a fresh `kind` filesystem on `folder`, in a mount namespace of its own."""
    folder.mkdir(parents=True, exist_ok=True)
    mount = mount_command(kind, folder)
    base = unshare_mount()
    done = subprocess.run([*base, "sh", "-c", f"{mount} && {script}"], capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1"}, timeout=600)
    assert "mount:" not in done.stderr, done.stderr
    return done
