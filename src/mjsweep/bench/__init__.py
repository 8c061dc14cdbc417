"""`sweep bench`: how fast this machine trains through mjsweep, against one run alone, GNU parallel and a
naive Pool.

One invocation measures, with the same PPO settings: mjsweep batches of N = 1, 2, 4, ... concurrent
runs (N = 1 is the solo per-core reference), GNU parallel -j N over a plain script with every thread pool
at one thread (what a careful user writes; skipped, with one line, when parallel is not installed) and a
naive multiprocessing.Pool, both at N = usable cores, the launcher's own costs at scale, and what the
worker's non-finite checks add to a training step. The bench process never imports torch.
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..engine.profile import cpu_model
from .figures import AlgoOverhead, Batch, BenchConfig, BenchReport, CheckCost, LaunchFigures, ScaleFigures

if TYPE_CHECKING:
    from .batches import DrawLive

__all__ = ["AlgoOverhead", "Batch", "BenchConfig", "BenchReport", "CheckCost", "LaunchFigures", "ScaleFigures",
           "batch_sizes", "run_bench"]


def batch_sizes(max_workers: int, cores: int) -> list[int]:
    """1, 2, 4, ... up to max_workers, plus the core count and max_workers themselves."""
    sizes, n = {cores, max_workers}, 1
    while n <= max_workers:
        sizes.add(n)
        n *= 2
    return sorted(s for s in sizes if 1 <= s <= max_workers)


def run_bench(config: BenchConfig, draw: DrawLive, on_step: Callable[[str], None] = lambda line: None) -> BenchReport:
    """Every batch, in turn, in a temporary folder that is removed afterwards; `draw` makes the live table that
    the mjsweep batches draw as `sweep run` does (ui/live.make_progress)."""
    from ..launchers import resolve_start
    from .batches import mjsweep_batch, naive_batch
    from .checks import measure_check_cost
    from .contender import MISSING, gnu_parallel, parallel_batch
    from .launch import measure_launch
    from .overhead import measure_overhead
    from .scale import measure_scale

    xml = config.xml or env_default_xml(config.env)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="mjsweep-bench-") as tmp:
        root = Path(tmp)
        batches = []
        for n in batch_sizes(config.max_workers, config.cores):
            on_step(f"mjsweep: {n} concurrent run(s) of {config.steps} steps")
            batches.append(mjsweep_batch(config, xml, n, root / f"mjsweep-{n}", draw))
        on_step("checks: what the non-finite checks add to an env step and to an update")
        checks = measure_check_cost(config, xml)
        overhead = tuple(measure_overhead(config, xml, list(config.overhead), on_step))
        parallel, skipped = None, None
        if (program := gnu_parallel()) is None:
            skipped = MISSING
            on_step(MISSING)
        else:
            on_step(f"GNU parallel -j {config.cores}: a plain script, every thread pool at 1 thread")
            parallel = parallel_batch(config, xml, config.cores, root / "parallel", program)
        on_step(f"naive: multiprocessing.Pool({config.cores}), default torch threads")
        naive = naive_batch(config, xml, config.cores)
        on_step("launch: `sweep run --start exec` of two runs, to the first run started and each first env step")
        launch = measure_launch(config, xml, root / "launch-exec")
        launch_template = None
        if resolve_start("local", "auto") == "template":
            on_step("launch: the same through `--start template`")
            launch_template = measure_launch(config, xml, root / "launch-template", "template")
        scale = None
        if config.scale_runs:
            on_step(f"scale: dry run and status over {config.scale_runs} generated runs")
            scale = measure_scale(config, xml, root / "scale")
    return BenchReport(config, batches, naive, scale, socket.gethostname(), cpu_model(), round(load_before, 2),
                       parallel=parallel, parallel_skipped=skipped, launch=launch,
                       launch_template=launch_template, checks=checks,
                       overhead=overhead)


def env_default_xml(env: str) -> Path:
    """The XML a Gymnasium MuJoCo env loads when given none."""
    import gymnasium as gym

    if ":" in env or env.startswith("mjsweep/"):
        raise ValueError(f"{env} has no default XML: give one with --xml")
    try:
        instance = gym.make(env)
    except gym.error.Error as exc:
        raise ValueError(f"cannot build {env}: {exc}") from None
    try:
        path = getattr(instance.unwrapped, "fullpath", None)
    finally:
        instance.close()
    if not path:
        raise ValueError(f"{env} is not a MuJoCo env with an XML: give one with --xml")
    return Path(path)

