"""The one front door that runs a sweep, for `sweep run` and `mjsweep.run` alike (`launch`): the refusals
(trust, disk), the launcher of `RunOptions.backend`, the scheduler's options (workers from the machine profile,
the memory guard where the runs execute here), the live report.html, and `engine.sweep.execute` under the
sweep's lock. `run()` and `validate()` are its Python side: exit codes become exceptions (InputError for bad
input, nothing started; SweepFailed when a run failed; KeyboardInterrupt when the sweep was stopped)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..naming import counted
from .options import RunOptions
from .sweep_records import Sweep

if TYPE_CHECKING:
    from ..engine.livereport import LiveReport
    from ..engine.scheduler import Event, SweepOutcome
    from ..engine.sweep import SweepPlan
    from ..kinds.base import SweepKind
    from ..launchers.template_client import TemplateProcess
    from ..plan.planned import PlannedRun


class SweepFailed(Exception):
    """Some runs failed (`sweep run` exits 1). `outcome` lists the runs by how they ended; `sweep` is the folder
    read back; str() names each failed run and why it ended."""

    def __init__(self, sweep: Sweep, outcome: SweepOutcome):
        self.sweep, self.outcome = sweep, outcome
        causes = {r.run_id: r.cause for r in sweep.runs}
        said = "; ".join(f"{run_id}: {causes.get(run_id) or 'failed'}" for run_id in outcome.failed)
        super().__init__(f"sweep {sweep.name}: {len(outcome.failed)} of "
                         f"{len(outcome.failed) + len(outcome.succeeded) + len(outcome.pruned)} runs failed ({said})")


@dataclass(frozen=True)
class PlanSummary:
    """What `validate` found: the sweep's folder, its variants (all passed deep validation) and its runs."""

    name: str
    sweep_dir: Path
    variants: list[str]
    runs: int
    """Runs the spec plans (a search's or a population's: none until it runs)."""
    to_run: int
    """Of those, the runs a `run` would start or resume now; the others have succeeded (a search's: none)."""
    warnings: list[str]


SpecSource = str | Path | Mapping[str, Any]


def _ignore(_: Any) -> None:
    return None


@dataclass(frozen=True)
class Watch:
    """What the caller of `launch` sees happen. on_event: each scheduler event (a run started, ended, retried;
    warnings, the live report's among them); warn: a warning before anything started (the disk nearly full;
    default: a warning event); on_planned: the runs once the sweep's lock is held; before_start:
    after the refusals, before the lock (the command line draws --pictures there); after_runs: once the runs
    have ended, before the last report.html; template: a template process started early, for the local
    launcher to adopt."""

    on_event: Callable[[Event], None] = _ignore
    warn: Callable[[str], None] | None = None
    on_planned: Callable[[list[PlannedRun]], None] = _ignore
    before_start: Callable[[], None] = lambda: None
    after_runs: Callable[[], None] = lambda: None
    template: TemplateProcess | None = None


def launch(plan: SweepPlan, options: RunOptions, watch: Watch | None = None) -> SweepOutcome:
    """Run the prepared sweep: refused (InputError, nothing started) when it would unpickle an untrusted
    folder or needs more disk than is free; else the runs under the sweep's lock, report.html rewritten as
    they end (options.report_every_s), and how they ended."""
    from ..engine.profile import workers_for
    from ..engine.scheduler import SchedulerOptions
    from ..engine.sweep import execute
    from ..engine.trusted_sources import require_trusted_sources
    from ..kinds import kind_of
    from ..launchers import build_launcher
    from ..sweepdir.trust import granted

    watch = watch or Watch()
    backend = options.backend.value
    require_trusted_sources(plan, list(options.trust))
    kind = kind_of(plan.spec)
    _check_disk(plan, kind, options, watch.warn or _warning_event(watch.on_event))
    opener = kind.open_runs(plan, options.order, backend)
    watch.before_start()
    launcher = build_launcher(backend, plan.spec, gpus=options.gpus, address=options.address,
                              workers=options.workers, start=options.start.value, template=watch.template)
    with granted(list(options.trust)), launcher:  # the runs started check the trust again
        # Memory is only this machine's to guard when the runs execute here.
        scheduling = SchedulerOptions(max_workers=launcher.slots(options.workers, workers_for(backend).workers),
                                      retries=options.retries, timeout_s=options.timeout_s, grace_s=options.grace_s,
                                      memory_guard=backend == "local")
        report = _live_report(plan, options, watch.on_event)
        try:
            try:
                outcome = execute(plan, opener, launcher, scheduling, on_event=_each(watch.on_event, report.event),
                                  on_poll=report.tick, on_planned=watch.on_planned)
            finally:
                watch.after_runs()
            report.finish(stopped=outcome.stopped)
        finally:
            report.close()
    return outcome


def _check_disk(plan: SweepPlan, kind: SweepKind, options: RunOptions, warn: Callable[[str], None]) -> None:
    """Refused (InputError) when the runs to start need more disk than is free; warned when they need most of
    it. A kind that makes its runs as it goes (a search) is not weighed."""
    from ..engine.profile import at_once
    from ..plan.disk import Verdict
    from .planning import disk_shortage, disk_tight

    check = kind.disk_check(plan, at_once(options.workers, options.backend.value))
    if check is None:
        return
    if check.verdict is Verdict.SHORT:
        raise InputError(disk_shortage(plan, check))
    if check.verdict is Verdict.TIGHT:
        warn(disk_tight(plan, check))


def _warning_event(on_event: Callable[[Event], None]) -> Callable[[str], None]:
    from ..engine.scheduler import Event, EventKind

    return lambda message: on_event(Event(EventKind.WARNING, None, message))


def _live_report(plan: SweepPlan, options: RunOptions, on_event: Callable[[Event], None]) -> LiveReport:
    """report.html kept current while runs end: `sweep report --format html` itself, run by the same Python in
    a child process; the final build started ahead, importing while runs train."""
    from ..engine.livereport import ChildBuild, LiveReport

    command = [sys.executable, "-m", "mjsweep.ui.cli", "report", str(plan.sweep_dir.path.absolute()),
               "--format", "html"]
    final = [sys.executable, "-m", "mjsweep.ui.report_child", *command[3:]]
    return LiveReport(command, options.report_every_s, by_hand=f"sweep report {plan.sweep_dir.path} --format html",
                      warn=_warning_event(on_event),
                      start_final=lambda: ChildBuild(final, waiting=True, niceness=0))


def _each(*handlers: Callable[[Event], None]) -> Callable[[Event], None]:
    """One on_event that hands each event to every handler, in order."""
    def on_event(event: Event) -> None:
        for handler in handlers:
            handler(event)
    return on_event


def validate(spec: SpecSource, runs_dir: str | Path | None = None, max_runs: int | None = None) -> PlanSummary:
    """Check the spec, compile every variant, build its env and take random steps: InputError (SpecError)
    naming file, line and key when something is wrong, else the plan. Writes nothing."""
    from ..kinds import kind_of

    plan = _prepare(spec, runs_dir, max_runs)
    runs, to_run = kind_of(plan.spec).run_counts(plan)
    return PlanSummary(plan.spec.name, plan.sweep_dir.path, [c.variant.name for c in plan.checks],
                       runs, to_run, [str(w) for w in plan.spec.warnings])


def run(spec: SpecSource, *, runs_dir: str | Path | None = None, options: RunOptions | None = None,
        workers: int | None = None, retries: int | None = None, timeout_s: float | None = None,
        grace_s: float | None = None, order: str | None = None, start: str | None = None,
        on_event: Callable[[Event], None] | None = None, trust: Iterable[str | Path] = ()) -> Sweep:
    """Run the sweep of `spec` (a YAML file, or the spec as a mapping: its relative paths are read from the
    current folder, and nothing is written there) as `sweep run` does, and return its folder read back. Runs
    that succeeded before are skipped, interrupted ones resumed. options: how it runs (RunOptions: the
    backend, local, ray or slurm, workers, retries, ...; `sweep run`'s defaults); workers, retries, timeout_s,
    grace_s, order, start and trust given here override those of `options`. on_event: called with each
    scheduler event (a run started, ended, retried; warnings). trust: folders whose pickles the runs may load
    (resumed runs, a warm start's source) though another user owns or can write them; UntrustedFolderError
    (an InputError, nothing started) for one not trusted (docs/trust.md)."""
    given: dict[str, Any] = {"workers": workers, "retries": retries, "timeout_s": timeout_s, "grace_s": grace_s,
                             "order": order, "start": start}
    chosen = replace(options or RunOptions(), **{k: v for k, v in given.items() if v is not None})
    trust = tuple(trust)
    if trust:
        chosen = replace(chosen, trust=(*chosen.trust, *(Path(p) for p in trust)))
    plan = _prepare(spec, runs_dir, chosen.max_runs)
    outcome = launch(plan, chosen, Watch(on_event=on_event or _ignore))
    if outcome.stopped:
        raise KeyboardInterrupt(f"sweep {plan.spec.name} stopped: {counted(len(outcome.interrupted), 'run')} "
                                f"interrupted, {len(outcome.pending)} pending"
                                + (", runs still to make" if outcome.cut_short else ""))
    sweep = Sweep(plan.sweep_dir.path)
    if outcome.failed:
        raise SweepFailed(sweep, outcome)
    return sweep


def _prepare(spec: SpecSource, runs_dir: str | Path | None, max_runs: int | None) -> SweepPlan:
    from ..engine.sweep import prepare

    where = Path(runs_dir) if runs_dir is not None else None
    if not isinstance(spec, Mapping):
        return prepare(spec, where, max_runs=max_runs)
    import yaml

    # Read as a file's text would be, its relative paths against the current folder; no file is written.
    text = yaml.safe_dump(dict(spec), sort_keys=False)
    return prepare("<spec mapping>", where, max_runs=max_runs, text=text, base=Path.cwd())
