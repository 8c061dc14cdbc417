"""Whether the kernel's OOM killer ended a run's worker: from the memory cgroup the worker lives in (its OOM-kill
count, cgroup v1 and v2, with the limit and the cgroup's peak), else from the kernel's own OOM-kill count.

A SIGKILL looks the same whoever sends it (`kill -9`, the OOM killer), so the counts are read while the run
lives and again once it died: a count that rose as the run died of SIGKILL names the OOM killer. SLURM jobs,
containers and systemd services put their processes in a memory cgroup with a limit, which is where the
OOM killer acts first; the host's free memory says nothing of that limit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from .base import OomFacts

PROC = Path("/proc")
UNLIMITED = 2**60
"""A cgroup v1 limit at or above this (the kernel writes 2^63 rounded down to a page) means none."""
REFRESH_ALWAYS_S = 5.0
REFRESH_EVERY_S = 10.0
"""A run's cgroup is read at every poll in its first REFRESH_ALWAYS_S, then this often: a batch system or a
wrapper may move the worker into its cgroup right after it starts, rarely later."""


@dataclass(frozen=True)
class MemoryCgroup:
    """One memory cgroup, as a folder of the cgroup filesystem (`version` 1 or 2)."""

    path: Path
    version: int
    root: Path
    """Where its hierarchy is mounted: the limits of the cgroups from `path` up to here count."""

    def oom_kills(self) -> int | None:
        """How many processes the OOM killer has killed in it (and under it); None where not told."""
        if self.version == 2:
            return _field(self.path / "memory.events", "oom_kill")
        return _field(self.path / "memory.oom_control", "oom_kill")  # kernel 4.13 and later

    def limit_bytes(self) -> int | None:
        """The smallest limit from this cgroup up to its hierarchy's root; None without one."""
        limits = []
        folder = self.path
        while True:
            name = "memory.max" if self.version == 2 else "memory.limit_in_bytes"
            value = _number(folder / name)
            if value is not None and value < UNLIMITED:
                limits.append(value)
            if folder == self.root or folder.parent == folder:
                break
            folder = folder.parent
        return min(limits) if limits else None

    def peak_bytes(self) -> int | None:
        return _number(self.path / ("memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"))

    def usage_bytes(self) -> int | None:
        return _number(self.path / ("memory.current" if self.version == 2 else "memory.usage_in_bytes"))

    def __str__(self) -> str:
        return f"/{self.path.relative_to(self.root)}" if self.path != self.root else "/"


def memory_cgroup(pid: int | str = "self", proc: Path = PROC) -> MemoryCgroup | None:
    """The memory cgroup of a process: v1's memory hierarchy where mounted, else the unified (v2) one where its
    memory controller is on; None where neither tells (no cgroup filesystem, the process gone)."""
    try:
        lines = (proc / str(pid) / "cgroup").read_text().splitlines()
        mounts = (proc / "self" / "mountinfo").read_text().splitlines()
    except OSError:
        return None
    paths: dict[str, str] = {}
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "":
            paths.setdefault("v2", path)
        elif "memory" in controllers.split(","):
            paths["v1"] = path
    for version, key in ((1, "v1"), (2, "v2")):
        if key not in paths:
            continue
        for root_in_hierarchy, mount_point in _mounts(mounts, version):
            relative, root = paths[key], root_in_hierarchy.rstrip("/")
            if relative != root and not relative.startswith(f"{root}/"):
                continue  # a mount of another part of the hierarchy
            relative = relative[len(root):].lstrip("/")
            folder = Path(mount_point) / relative
            marker = "memory.events" if version == 2 else "memory.oom_control"
            if (folder / marker).exists():
                return MemoryCgroup(folder, version, Path(mount_point))
    return None


def cgroup_available_mb(cgroup: MemoryCgroup | None) -> float | None:
    """What a memory cgroup with a limit (a SLURM job's, a container's) has left: its limit less its use; None
    without a limit. The host's available memory does not see such a limit."""
    if cgroup is None:
        return None
    limit, usage = cgroup.limit_bytes(), cgroup.usage_bytes()
    if limit is None or usage is None:
        return None
    return max(limit - usage, 0) / 2**20


def kernel_oom_kills(proc: Path = PROC) -> int | None:
    """The machine's OOM kills since boot (/proc/vmstat, kernel 4.13 and later); None where not told."""
    return _field(proc / "vmstat", "oom_kill")


class OomWatch:
    """The counts of one run, read at its start and as it lives; `verdict()` once it died of SIGKILL."""

    def __init__(self, pid: int, proc: Path = PROC):
        self.pid, self.proc = pid, proc
        self.started = time.monotonic()
        self._read_at = float("-inf")
        self._seen: dict[MemoryCgroup, int] = {}
        """Each memory cgroup the run was seen in, with its OOM-kill count then: a dying process may already
        show another (the root), so every one it was in is asked."""
        self._kernel_kills = kernel_oom_kills(proc)
        self.refresh()

    def refresh(self) -> None:
        """Notes the run's cgroup while it lives (cheap: one small file, on a schedule)."""
        now = time.monotonic()
        if now - self.started > REFRESH_ALWAYS_S and now - self._read_at < REFRESH_EVERY_S:
            return
        self._read_at = now
        if _exited(self.pid, self.proc):
            return  # an exited process shows the root cgroup, not the one it died in
        cgroup = memory_cgroup(self.pid, self.proc)
        if cgroup is not None and cgroup not in self._seen and (kills := cgroup.oom_kills()) is not None:
            self._seen[cgroup] = kills

    def can_tell(self) -> bool:
        """Whether an OOM kill of this run would be counted somewhere this watch reads."""
        return bool(self._seen) or self._kernel_kills is not None

    def verdict(self) -> OomFacts | None:
        """The OOM killer's kill, if a count says so; call once the run has died of SIGKILL."""
        for cgroup, before in self._seen.items():
            now = cgroup.oom_kills()
            if now is not None and now > before:
                return OomFacts(f"the kernel's OOM killer (memory cgroup {cgroup}, v{cgroup.version}, counted the "
                                "kill)", _mb(cgroup.limit_bytes()), _mb(cgroup.peak_bytes()))
        if self._seen:
            return None  # its cgroups count kills and counted none: someone's kill -9
        kernel = kernel_oom_kills(self.proc)
        if self._kernel_kills is not None and kernel is not None and kernel > self._kernel_kills:
            return OomFacts("the kernel's OOM killer (the OOM-kill count in /proc/vmstat rose as it died)")
        return None


def _mounts(mountinfo: list[str], version: int) -> list[tuple[str, str]]:
    """(root within the hierarchy, mount point) of each cgroup mount of that version (v1: with memory)."""
    found = []
    for line in mountinfo:
        fields = line.split()
        if "-" not in fields:
            continue
        sep = fields.index("-")
        fstype, options = fields[sep + 1], fields[sep + 3] if len(fields) > sep + 3 else ""
        if (version == 2 and fstype == "cgroup2") or (version == 1 and fstype == "cgroup"
                                                       and "memory" in options.split(",")):
            found.append((fields[3], fields[4].replace("\\040", " ")))
    return found


def _exited(pid: int, proc: Path) -> bool:
    """The process is a zombie (or gone): its exit is done, whatever its parent has not reaped yet."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return not (proc / str(pid)).exists()
    return stat[stat.rfind(")") + 2:][:1] in ("Z", "X")


def _field(path: Path, key: str) -> int | None:
    """The number after `key` in a file of 'key value' lines."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
    except OSError:
        return None
    return None


def _number(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if text == "max":
        return UNLIMITED
    return int(text) if text.isdigit() else None


def _mb(size: int | None) -> float | None:
    return None if size is None or size <= 0 or size >= UNLIMITED else round(size / 2**20, 1)
