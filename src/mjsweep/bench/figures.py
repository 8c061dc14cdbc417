"""What the bench measures: its settings and the figures of each batch, as frozen dataclasses."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class BenchConfig:
    env: str = "Ant-v5"
    """A Gymnasium id that takes xml_file, or 'package.module:Class' (as in a sweep spec)."""
    xml: Path | None = None
    """The model every run trains on; None: the env's own XML."""
    steps: int = 32_768
    """Environment steps per run."""
    max_workers: int = 4
    """Largest concurrent batch: 1, 2, 4, ... up to this."""
    ppo: dict[str, Any] = field(default_factory=dict)
    """PPO keyword arguments; empty: stable-baselines3's defaults (n_steps 2048, batch_size 64)."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    max_episode_steps: int | None = None
    cores: int = 1
    """Usable cores of this machine: the naive batch's size and the scaling reference point."""
    scale_runs: int = 10_000
    """Size of the generated plan and sweep folder for the dry-run and status figures."""
    overhead: tuple[str, ...] = ()
    """Algorithms to train through the worker against plain SB3 (bench/overhead.py)."""


@dataclass(frozen=True)
class Batch:
    """N trainings started together; aggregate = all their timesteps / the whole batch's wall time."""

    kind: str
    """'mjsweep' (its launcher and worker), 'parallel' (GNU parallel over a plain script, one thread each) or
    'naive' (multiprocessing.Pool, default torch threads)."""
    n: int
    wall_s: float
    timesteps: int
    run_fps: float
    """Mean training throughput of one run: its own timesteps / its seconds of rollout + update."""
    rollout_s: float | None
    """Mean seconds per run collecting rollouts (env steps + policy forward)."""
    train_s: float | None
    """Mean seconds per run in PPO updates (forward, backward, optimizer)."""
    startup_s: float | None
    """Slowest run's time from process start to its first env step."""
    peak_rss_mb: float | None
    """Largest peak RSS of one worker process (the pages it shares with other processes included)."""
    torch_threads: int | None
    """Intra-op threads torch used in the runs (the largest seen)."""
    spread_s: float | None = None
    """Slowest run's time from set-up to result.json minus the fastest's (imports left out): with
    N <= cores, the cores the early finishers free sit idle about this long at the batch's end."""
    workers_cpu_s: float | None = None
    """CPU seconds all the batch's worker processes used, start-up and evaluation included."""
    launcher_cpu: float | None = None
    """CPU the launcher used while it ran the batch, as a fraction of one core."""
    failed: int = 0
    peak_uss_mb: float | None = None
    """Largest peak USS of one run's processes, as the launcher measured it for its memory admission: the
    pages no other process shares, what one more run adds. mjsweep batches only (None for the contenders)."""

    @property
    def aggregate(self) -> float:
        return self.timesteps / self.wall_s if self.wall_s > 0 else 0.0

    def busy(self, cores: int) -> float | None:
        """How much of the cores the batch could use it kept busy: workers' CPU / (wall x min(N, cores)).
        Under 1: cores sat idle (start-up waits, the batch's tail) or other processes took them."""
        if self.workers_cpu_s is None or self.wall_s <= 0:
            return None
        return self.workers_cpu_s / (self.wall_s * min(self.n, cores))


@dataclass(frozen=True)
class ScaleFigures:
    runs: int
    dry_run_s: float
    """Wall seconds of `sweep run --dry-run` of a plan of `runs` runs, as a fresh process."""
    dry_run_cpu_s: float
    """Its CPU seconds: near dry_run_s on a quiet machine; far below it when other work took the cores."""
    status_s: float
    """Wall seconds of `sweep status` over a sweep folder of `runs` finished runs, as a fresh process."""
    status_cpu_s: float


@dataclass(frozen=True)
class LaunchFigures:
    to_first_run_s: float
    """From starting `sweep run` to the first run's status.json saying running (its worker process exists)."""
    worker_startup_s: float | None
    """That worker's time from process start to its first env step (result.json's startup_s)."""
    start_with: str = "exec"
    """`sweep run --start`: exec (a fresh interpreter per run) or template (forked from the template)."""
    later_startup_s: float | None = None
    """The next run's time from process start (its fork, for the template) to its first env step: a run's
    launch once the sweep is under way."""

    @property
    def to_first_env_step_s(self) -> float | None:
        """`sweep run` to the first env step of its first run."""
        return None if self.worker_startup_s is None else self.to_first_run_s + self.worker_startup_s


@dataclass(frozen=True)
class CheckCost:
    """The worker's non-finite checks (bench/checks.py)."""

    step_us: float
    """Microseconds VecCheckNan, as the worker wraps its env, adds to one env step."""
    update_us: float
    """Microseconds of one check of the policy's parameters, done after every update."""
    steps_per_update: int
    """Env steps between two updates (PPO's n_steps x n_envs)."""

    def share(self, run_fps: float) -> float:
        """Their share of a training step (rollout + update) of a run training at run_fps."""
        return (self.step_us + self.update_us / self.steps_per_update) * run_fps / 1e6


@dataclass(frozen=True)
class AlgoOverhead:
    """One algorithm trained through the worker against plain stable-baselines3 (bench/overhead.py)."""

    algo: str
    steps: int
    plain_s: float
    """Median CPU seconds of plain SB3's training."""
    worker_s: float
    """Median CPU seconds of the same training through the worker's env stack and recorder."""
    ratio: float
    """Median over the alternated pairs of worker / plain: 1.01 is 1% slower."""
    spread: float
    """Largest minus smallest ratio of the pairs: how far the machine's noise reaches."""
    rounds: int
    env_stack_us: float
    """CPU microseconds per env step the worker's env stack adds to plain SB3's (bench/overhead.py)."""
    recorder_s: float
    """Seconds in the recorder's hooks during the worker's training (median of the rounds)."""
    added: float
    """What the worker adds, timed in place, as a share of plain SB3's training: (env_stack_us x steps +
    recorder_s) / plain_s."""


@dataclass(frozen=True)
class BenchReport:
    config: BenchConfig
    mjsweep: list[Batch]
    naive: Batch
    scale: ScaleFigures | None
    host: str
    cpu_model: str
    load_before: float
    """1-minute load average just before the bench started: other work on the machine."""
    parallel: Batch | None = None
    """GNU parallel -j N at N = usable cores over a plain script with one thread each; None when skipped."""
    parallel_skipped: str | None = None
    """Why the GNU parallel contender was not measured (one line), when it was not."""
    launch: LaunchFigures | None = None
    """`sweep run --start exec` to its first run started and to that run's first env step."""
    launch_template: LaunchFigures | None = None
    """The same through `--start template`, measured in the same bench; None on a system without it."""
    checks: CheckCost | None = None
    """What the worker's non-finite checks cost, per env step and per update."""
    overhead: tuple[AlgoOverhead, ...] = ()
    """Each algorithm asked for (`sweep bench --overhead`) through the worker against plain SB3."""

    @property
    def check_share(self) -> float | None:
        """The non-finite checks' share of a training step of the solo run; None when not measured."""
        return self.checks.share(self.solo.run_fps) if self.checks and self.solo.run_fps else None

    @property
    def template_launch_ratio(self) -> float | None:
        """A later run's launch to first env step through the template over the same by exec."""
        exec_s = self.launch.later_startup_s if self.launch else None
        template_s = self.launch_template.later_startup_s if self.launch_template else None
        return None if not exec_s or template_s is None else template_s / exec_s

    @property
    def solo(self) -> Batch:
        """The per-core reference: one run alone, through mjsweep (1 torch thread)."""
        return next(b for b in self.mjsweep if b.n == 1)

    def efficiency(self, batch: Batch) -> float:
        """Aggregate over min(N, cores) x the solo run's: 1.0 is every core as fast as one run alone.
        More runs than cores cannot add cores, so N = 4 on 2 cores is judged against 2 x solo."""
        cores = min(batch.n, self.config.cores)
        return batch.aggregate / (cores * self.solo.aggregate) if self.solo.aggregate else 0.0

    def at_cores(self) -> Batch:
        """The mjsweep batch with N = usable cores (or the largest measured below it)."""
        fits = [b for b in self.mjsweep if b.n <= self.config.cores]
        return max(fits, key=lambda b: b.n)

    @property
    def speedup_over_naive(self) -> float:
        return self.at_cores().aggregate / self.naive.aggregate if self.naive.aggregate else 0.0

    @property
    def ratio_to_parallel(self) -> float | None:
        """mjsweep's aggregate at N = usable cores over GNU parallel's at the same N; None when not measured."""
        if self.parallel is None or not self.parallel.aggregate:
            return None
        return self.at_cores().aggregate / self.parallel.aggregate

    @property
    def failed(self) -> int:
        """Runs that did not finish, over every batch: their figures are not to be trusted."""
        return sum(b.failed for b in [*self.mjsweep, self.naive, *([self.parallel] if self.parallel else [])])

    def recommended(self, tolerance: float = 0.03) -> Batch:
        """The smallest N within `tolerance` of the best aggregate: fewer runs in flight finish sooner
        each and hold less memory for the same throughput."""
        best = max(b.aggregate for b in self.mjsweep)
        return min((b for b in self.mjsweep if b.aggregate >= (1 - tolerance) * best), key=lambda b: b.n)

    def recommended_workers(self, tolerance: float = 0.03) -> int:
        return self.recommended(tolerance).n

    def to_dict(self) -> dict[str, Any]:
        def batch(b: Batch) -> dict[str, Any]:
            busy = b.busy(self.config.cores)
            return {**asdict(b), "aggregate_fps": round(b.aggregate, 1), "efficiency": round(self.efficiency(b), 3),
                    "cores_busy": round(busy, 3) if busy is not None else None}

        return {
            "config": {**asdict(self.config), "xml": str(self.config.xml) if self.config.xml else None},
            "host": self.host, "cpu_model": self.cpu_model, "load_before": self.load_before,
            "solo_fps": round(self.solo.aggregate, 1),
            "mjsweep": [batch(b) for b in self.mjsweep],
            "naive": batch(self.naive),
            "speedup_over_naive": round(self.speedup_over_naive, 2),
            "parallel": batch(self.parallel) if self.parallel else None,
            "parallel_skipped": self.parallel_skipped,
            "ratio_to_parallel": round(ratio, 3) if (ratio := self.ratio_to_parallel) is not None else None,
            "recommended_workers": self.recommended_workers(),
            "scale": asdict(self.scale) if self.scale else None,
            "launch": _launch(self.launch),
            "launch_template": _launch(self.launch_template),
            "template_launch_ratio": round(ratio, 3) if (ratio := self.template_launch_ratio) is not None else None,
            "checks": asdict(self.checks) if self.checks else None,
            "check_share": round(share, 5) if (share := self.check_share) is not None else None,
            "overhead": [asdict(o) for o in self.overhead],
        }


def _launch(figures: LaunchFigures | None) -> dict[str, Any] | None:
    return {**asdict(figures), "to_first_env_step_s": figures.to_first_env_step_s} if figures else None
