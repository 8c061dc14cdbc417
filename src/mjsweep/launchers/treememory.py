"""A local run's memory: the peaks of its process tree's resident set (RSS) and unique set (USS).

RSS counts every page a process maps, the pages it shares too: a run forked from the template counts the
template's torch, SB3 and MuJoCo (hundreds of MiB) that no run adds. USS counts the pages only the run
holds: what one more run like it adds to the machine, and what ending it frees. The memory admission
(engine/memory.py) therefore goes by USS, for exec'd and forked runs alike, so that their figures compare.
"""

from __future__ import annotations

import time

import psutil

TREE_EVERY_S = 10.0
"""How often a worker's process tree is listed again. Listing children makes psutil read the stat file of
every process on the machine (milliseconds, per run, per poll: most of the launcher's CPU); reading the
RSS of the processes already known takes microseconds and is done at every poll."""

USS_FIRST_S = 0.5
USS_EVERY_S = 10.0
"""USS makes the kernel walk every page of a process (/proc/PID/smaps_rollup: 3-4 ms of CPU for a
400 MiB worker, against 0.01 ms for RSS), so it is read at a run's first poll, then after 0.5, 1, 2, 4 and
8 s more (start-up, where it changes most), then every 10 s: 0.04% of a core per run."""


def uss_readable() -> str | None:
    """None when this system tells a process's USS (Linux: /proc/PID/smaps_rollup, or smaps before 4.14);
    else why not, in a few words."""
    try:
        psutil.Process().memory_full_info()
    except (psutil.Error, OSError, NotImplementedError) as exc:
        return str(exc) or type(exc).__name__
    return None


class TreeMemory:
    """The peaks of one run's process tree, sampled at each poll.

    RSS is read at every sample, USS on USS_EVERY_S's schedule. Between two USS readings an RSS peak (a
    replay buffer pickled, an evaluation) still counts: as that RSS less the larger of the two readings'
    shared pages (RSS - USS). Between two readings a run's shared pages mostly move one way (up while it
    maps libraries or touches the template's pages, down as it writes to pages it shares), so this counts
    no more than its USS was. After the last reading the last one's shared pages count: a run that ends
    within its first seconds is counted above its USS, at most at its RSS."""

    def __init__(self, pid: int, read_uss: bool = True):
        self.pid = pid
        self._read_uss = read_uss
        self._tree: list[psutil.Process] = []
        self._tree_at = float("-inf")
        self._peak_rss = self._peak_uss = 0
        self._rss_since_uss = 0
        """The largest RSS since the last USS reading (that reading's included)."""
        self._shared: int | None = None
        """RSS - USS at the last USS reading; None before any."""
        self._uss_at, self._uss_after = float("-inf"), 0.0

    def sample(self) -> None:
        now = time.monotonic()
        if now - self._tree_at >= TREE_EVERY_S:
            try:
                root = psutil.Process(self.pid)
                self._tree, self._tree_at = [root, *root.children(recursive=True)], now
            except psutil.Error:
                return
        if self._read_uss and now - self._uss_at >= self._uss_after:
            self._sample_uss(now)
            return
        rss = 0
        for proc in self._tree:
            try:
                rss += proc.memory_info().rss
            except psutil.Error:  # a child that has ended since the tree was listed
                pass
        self._note_rss(rss)

    def peak_rss_mb(self) -> float | None:
        return _mb(self._peak_rss)

    def peak_uss_mb(self) -> float | None:
        """None before the first USS reading (or where USS cannot be read)."""
        if self._shared is None:
            return None
        return _mb(max(self._peak_uss, self._rss_since_uss - self._shared))

    def _note_rss(self, rss: int) -> None:
        self._peak_rss = max(self._peak_rss, rss)
        self._rss_since_uss = max(self._rss_since_uss, rss)

    def _sample_uss(self, now: float) -> None:
        rss = uss = 0
        for proc in self._tree:
            try:
                full = proc.memory_full_info()
            except psutil.Error:
                continue
            rss, uss = rss + full.rss, uss + full.uss
        if not rss:  # the whole tree has ended
            return
        self._note_rss(rss)
        shared = rss - uss
        if self._shared is not None:
            self._peak_uss = max(self._peak_uss, self._rss_since_uss - max(shared, self._shared))
        self._peak_uss = max(self._peak_uss, uss)
        self._shared, self._rss_since_uss = shared, rss
        self._uss_at, self._uss_after = now, min(max(2 * self._uss_after, USS_FIRST_S), USS_EVERY_S)


def _mb(size: int) -> float | None:
    return round(size / 2**20, 1) if size > 0 else None
