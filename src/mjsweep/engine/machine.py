"""What else runs on this machine now: the 1-minute load, and the CPU other processes take from the runs.

The load average alone lags: right after heavy work ends, the 5-minute average stays above the cores for
minutes and the 1-minute one for about a minute, while nothing competes any more. So competition is
judged from the present: the 1-minute average says the load has lasted a while, and the CPU time taken
over the last seconds by processes outside the sweep (the usable cores' busy time in /proc/stat, minus
what the launcher, its workers and their children used) says it still does. The same readings name the
processes that take the most.

Reading every process costs a few milliseconds (~8 ms for 100 processes here), so it is done only while
the 1-minute load is above what the sweep itself explains, and at most once per window.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

WINDOW_S = 5.0
"""The live view's "now": what other processes took over about the last this many seconds."""
ONE_SHOT_WINDOW_S = 0.5
"""`sweep status` has no earlier reading to compare with: it takes two, this far apart."""
NAMED = 3  # competing processes named in a warning
NAMED_MIN_CORES = 0.1  # smaller takers are not worth naming
COMMAND_CHARS = 60  # of a named process's command line


@dataclass(frozen=True)
class CpuReading:
    """Cumulative CPU counters at one instant."""

    at: float
    """time.monotonic() of the reading."""
    busy_s: float
    """Busy seconds of the usable cores since boot (/proc/stat: everything but idle and iowait)."""
    own_s: float
    """CPU seconds of the sweep's processes (its launcher and runs, their children, reaped ones included)."""
    others: dict[int, tuple[str, float]]
    """pid -> (name, CPU seconds) of the other processes last seen on a usable core."""


@dataclass(frozen=True)
class Competitor:
    name: str
    pid: int
    cores: float
    """Cores it took between the two readings (1.0: one core all the time)."""


@dataclass(frozen=True)
class Competition:
    """What processes outside the sweep took of the usable cores between two readings."""

    cores: float
    named: tuple[Competitor, ...] = ()
    """The largest takers, largest first (those taking at least NAMED_MIN_CORES)."""


@dataclass(frozen=True)
class MachineLoad:
    load1: float
    cores: int
    """Usable cores (this process's CPU affinity)."""
    competition: Competition | None
    """What others take now; None when not measured (the load is low enough) or not measurable here."""


def competition(before: CpuReading, after: CpuReading) -> Competition | None:
    """Cores taken by processes outside the sweep between two readings; None if no time passed."""
    seconds = after.at - before.at
    if seconds <= 0:
        return None
    own = max(after.own_s - before.own_s, 0.0)  # a counter never runs backwards; a vanished process might
    taken = max(after.busy_s - before.busy_s - own, 0.0) / seconds
    rates = [Competitor(name, pid, (cpu - before.others.get(pid, (name, 0.0))[1]) / seconds)
             for pid, (name, cpu) in after.others.items()]
    named = sorted((c for c in rates if c.cores >= NAMED_MIN_CORES), key=lambda c: -c.cores)[:NAMED]
    return Competition(taken, tuple(named))


def load_1min() -> float:
    return os.getloadavg()[0]


def usable_cores() -> int:
    return len(os.sched_getaffinity(0))


def cpu_reading(roots: Iterable[int]) -> CpuReading | None:
    """The counters now, the sweep being the process trees under `roots` (and this process); None where
    /proc/stat or the process table cannot be read."""
    import psutil

    usable = os.sched_getaffinity(0)
    try:
        busy = _busy_seconds(usable)
    except (OSError, ValueError, IndexError):
        return None
    table = {}
    for proc in psutil.process_iter(["ppid", "name", "cpu_times", "cpu_num"]):
        if proc.info["cpu_times"] is not None:  # None: gone, or not ours to read
            table[proc.pid] = proc.info
    own = _descendants(table, {*roots, os.getpid()})
    own_s = sum(_cpu_s(table[pid]["cpu_times"], with_children=True) for pid in own)
    others = {pid: (info["name"] or "?", _cpu_s(info["cpu_times"], with_children=False))
              for pid, info in table.items() if pid not in own and info["cpu_num"] in usable}
    return CpuReading(time.monotonic(), busy, own_s, others)


def with_commands(found: Competition) -> Competition:
    """The named processes with their command lines (`python3 -m mjsweep.worker ...`, not `python3`),
    read for those few alone; a process that is gone or not ours to read keeps its name."""
    import psutil

    def command(c: Competitor) -> str:
        try:
            args = psutil.Process(c.pid).cmdline()
        except psutil.Error:
            return c.name
        text = " ".join([os.path.basename(args[0]), *args[1:]]) if args else c.name
        return text if len(text) <= COMMAND_CHARS else text[:COMMAND_CHARS - 1] + "…"

    return replace(found, named=tuple(replace(c, name=command(c)) for c in found.named))


def _busy_seconds(cores: set[int]) -> float:
    ticks = 0
    with open("/proc/stat", encoding="ascii") as fh:
        for line in fh:
            name, *fields = line.split()
            if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cores:
                continue
            user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
            ticks += user + nice + system + irq + softirq + steal  # steal: time other VMs took
    return ticks / os.sysconf("SC_CLK_TCK")


def _descendants(table: dict[int, dict], roots: set[int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, info in table.items():
        children.setdefault(info["ppid"], []).append(pid)
    found, todo = set(), [pid for pid in roots if pid in table]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    return found


def _cpu_s(times, with_children: bool) -> float:
    """user + system; with the reaped children's, for the sweep's own processes (a worker that ended
    between two readings moves its CPU into its parent's children counters)."""
    own = times.user + times.system
    return own + (times.children_user + times.children_system if with_children else 0.0)


class PresentLoad:
    """The machine's load as the live view refreshes: the 1-minute average at each call and, while it is
    above what the sweep itself explains, what other processes took over the last window."""

    def __init__(self, roots: Iterable[int] = (), cores: int | None = None,
                 read_load: Callable[[], float] = load_1min,
                 read_cpu: Callable[[], CpuReading | None] | None = None,
                 clock: Callable[[], float] = time.monotonic, window_s: float = WINDOW_S):
        """read_cpu (with clock) stands for this machine's counters in tests; then named processes keep
        the names the readings give them."""
        self.cores = usable_cores() if cores is None else cores
        roots = tuple(roots)
        self.read_load, self.clock, self.window_s = read_load, clock, window_s
        self.read_cpu = read_cpu or (lambda: cpu_reading(roots))
        self.describe: Callable[[Competition], Competition] = (lambda c: c) if read_cpu else with_commands
        self._before: CpuReading | None = None
        self._competition: Competition | None = None
        self._measurable = True

    def sample(self, running: int) -> MachineLoad | None:
        """The load now; None while there is no judgement yet (a high load, one CPU reading so far)."""
        load1 = self.read_load()
        if load1 <= max(self.cores, running):
            self._before = self._competition = None  # the next high load is measured afresh
            return MachineLoad(load1, self.cores, None)
        if self._measurable and (self._before is None or self.clock() - self._before.at >= self.window_s):
            self._read()
        if not self._measurable:
            return MachineLoad(load1, self.cores, None)  # the load alone, as on systems without /proc
        return MachineLoad(load1, self.cores, self._competition) if self._competition else None

    def _read(self) -> None:
        reading = self.read_cpu()
        if reading is None:
            self._measurable = False
            return
        found = competition(self._before, reading) if self._before is not None else None
        if found is not None:
            self._competition = self.describe(found)
        self._before = reading



def measure_once(roots: Iterable[int], running: int, cores: int | None = None,
                 window_s: float = ONE_SHOT_WINDOW_S) -> MachineLoad:
    """The load now for a one-shot reader (`sweep status`): two CPU readings `window_s` apart, taken only
    when the 1-minute load is above what the sweep explains."""
    present = PresentLoad(roots, cores)
    first = present.sample(running)
    if first is not None:
        return first
    time.sleep(window_s)
    present.window_s = 0.0
    return present.sample(running) or MachineLoad(present.read_load(), present.cores, None)
