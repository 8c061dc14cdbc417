"""A sweep from spec file to finished runs: validate everything, plan, decide what to (re)run, execute.

Nothing is written until every check has passed; then the sweep lock is taken, sweep.yaml and each
run's spec.json are written, and the scheduler runs what is left to do.
"""

from __future__ import annotations

import difflib
import os
import signal
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import psutil
import yaml

from ..childproc import signal_group
from ..errors import InputError, SpecError, SweepDirError, shown
from ..launchers.base import Launcher
from ..plan import extension
from ..plan import runs as planlib
from ..plan.order import Order, measured_fps, start_order
from ..plan.planned import Action, PlannedRun, Reason
from ..results.runview import index_entry
from ..robots import snapshot
from ..robots import variants as variantlib
from ..robots.envs import EnvBuildError, EnvProbe, accepted_kwargs, probe_env
from ..robots.modelfiles import error_location
from ..spec import loading
from ..spec import sweepspec as speclib
from ..spec.algos import ALGOS
from ..sweepdir import index as runindex
from ..sweepdir.files import (
    CorruptFileError,
    RunDir,
    SweepDir,
    read_model,
    read_or_none,
    write_model,
    write_text_atomic,
)
from ..sweepdir.lineage import continuable, start_from
from ..sweepdir.lock import sweep_lock
from ..sweepdir.models import (
    DisplayState,
    PlanRecord,
    RunSpec,
    RunState,
    SweepVariants,
    VariantRecord,
    evaluated_as,
    evaluation_words,
    physics_evaluated,
    succeeded,
)
from ..worker.tracking import check_tracking
from . import warmstart
from .modelcheck import ModelCheck
from .scheduler import Event, EventKind, RunSource, Scheduler, SchedulerOptions, SweepOutcome
from .status_recorder import StatusRecorder


class BrokenVariantsError(SpecError):
    """Some variants failed deep validation. str() is one line naming each; `plan` has every verdict."""

    def __init__(self, message: str, plan: SweepPlan):
        super().__init__(message)
        self.plan = plan


@dataclass(frozen=True)
class VariantCheck:
    variant: variantlib.Variant
    stats: variantlib.ModelStats | None
    """None when the XML does not compile."""
    probe: EnvProbe
    problem: str | None = None
    """Why the variant is broken; None when it passed every check."""


@dataclass(frozen=True)
class SweepPlan:
    spec: speclib.SweepSpec
    checks: list[VariantCheck]
    runs: list[RunSpec]
    sweep_dir: SweepDir


def prepare(spec_path: str | Path, runs_dir: Path | None = None, check_envs: bool = True,
            max_runs: int | None = None, *, text: str | None = None, base: Path | None = None) -> SweepPlan:
    """Load and check the spec, its XMLs and its env; expand the runs. Writes nothing. max_runs overrides the
    spec's limit on the runs it plans. text: the spec's YAML, given rather than read from `spec_path` (then
    only its name in errors), its relative paths against `base`.

    Raises SpecError for a bad spec, and BrokenVariantsError naming every variant that does not
    compile or whose env fails the random-action probe (see _check_variant).
    """
    spec = loading.load(spec_path, max_runs, text=text, base=base)
    check_tracking(spec)
    if check_envs:
        _check_env_kwargs(spec)
    variants = variantlib.resolve(spec)
    if runs_dir is not None and "\0" in str(runs_dir):
        raise InputError(f"--runs-dir {str(runs_dir)!r}: a path holds no NUL byte")
    root = runs_dir.resolve() if runs_dir else spec.runs_dir
    sweep_dir = SweepDir(root / spec.name)
    warm = warmstart.resolve(spec)
    runs = planlib.expand(spec, variants, warm)
    _check_folders(spec, sweep_dir, runs, f"--runs-dir {runs_dir}" if runs_dir else None)
    # Generated XMLs live in a temp folder while they are checked; the runs get theirs when written.
    with tempfile.TemporaryDirectory(prefix="mjsweep-check-") as tmp:
        local = [variantlib.materialize(v, Path(tmp)) for v in variants]
        # SB3 judges the hyperparameters in a child process while the envs are probed here.
        model_check = ModelCheck(runs, local[0].xml) if check_envs and local else None
        checks = [_check_variant(spec, v, lv, runs, check_envs) for v, lv in zip(variants, local, strict=True)]
        refused = model_check.problems() if model_check else []
    plan = SweepPlan(spec, checks, runs, sweep_dir)
    broken = [c for c in checks if c.problem]
    if broken:
        reasons = "; ".join(f"variant {c.variant.name!r}: {c.problem}" for c in broken)
        raise BrokenVariantsError(str(spec.locator.error(
            broken[0].variant.loc, f"{len(broken)} of {len(checks)} variants broken: {reasons}")), plan)
    if refused:
        run, problem = refused[0]
        raise _refused_hyperparameters(spec, run, problem, len(refused))
    if warm is not None:
        warmstart.check_runs(spec, warm, runs, {c.variant.name: c.probe for c in checks})
    return plan


def _check_folders(spec: speclib.SweepSpec, sweep_dir: SweepDir, runs: list[RunSpec], flag: str | None) -> None:
    """Where the sweep will write is a folder or nothing yet, and no run folder is a link: the launcher writes
    only inside the sweep folder, never through a link it did not make. Before anything is written (and for
    --dry-run and validate, which say so too)."""
    def refuse(message: str) -> InputError:
        return InputError(f"{flag}: {message}") if flag else spec.locator.error(("runs_dir",), message)

    for folder in (sweep_dir.path, *sweep_dir.path.parents):
        if os.path.lexists(folder):
            if not folder.is_dir():
                raise refuse(f"{folder} is not a folder: the runs dir and the sweep folder in it must be folders")
            break
    for run in runs:
        path = sweep_dir.run(run.run_id).path
        if path.is_symlink():
            raise InputError(f"{path}: this run folder is a symbolic link (to {os.readlink(path)}): the launcher "
                             "trains only into run folders it made; remove the link")
        if os.path.lexists(path) and not path.is_dir():
            raise InputError(f"{path}: this run's folder is a file; remove it or move it away")
        _refuse_links_in(path)
    _refuse_links_in(sweep_dir.path)


def _refuse_links_in(folder: Path) -> None:
    """mjsweep makes no symbolic link: one among the files it appends to or truncates (index.jsonl,
    trials.jsonl, a run's logs on resume) would carry its writes out of the sweep folder."""
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        if entry.is_symlink():
            raise InputError(f"{entry.path} is a symbolic link (to {os.readlink(entry.path)}): the launcher writes "
                             "into the files of a sweep folder, never through a link it did not make; remove it")


def _refused_hyperparameters(spec: speclib.SweepSpec, run: RunSpec, problem: str, count: int) -> SpecError:
    """The algorithm's package (stable-baselines3, or sb3-contrib for its classes) refused a set of
    hyperparameters: point at the grid key that made it, else at the algorithm's section."""
    grid_keys = [key for key in run.grid if key.startswith(f"{run.algo}.")]
    at: tuple[str, ...] = ("grid", grid_keys[0]) if grid_keys else (run.algo,)
    point = f" (grid point {', '.join(f'{k}={shown(run.grid[k])}' for k in grid_keys)})" if grid_keys else ""
    more = f"; {count - 1} more set(s) refused" if count > 1 else ""
    return spec.locator.error(at, f"{ALGOS[run.algo].distribution} cannot build the model{point}: {problem}{more}")


def _check_env_kwargs(spec: speclib.SweepSpec) -> None:
    """An env_kwargs key the env's constructor does not take is a spec error at that key, before any
    XML is compiled (an env whose constructor takes any **kwargs is left to the env probe)."""
    accepted = accepted_kwargs(spec.env)
    if accepted is None:
        return
    written: list[tuple[tuple[str | int, ...], str]] = [(("env_kwargs", key), key) for key in spec.env_kwargs]
    written += [(("variants", i, "env_kwargs", key), key)
                for i, v in enumerate(spec.variants) for key in v.env_kwargs]
    written += [(("grid", key), key.removeprefix("env_kwargs.").split(".")[0])
                for key in spec.grid if key.startswith("env_kwargs.")]
    searched = spec.search.space if spec.search else {}
    written += [(("search", "space", key), key.removeprefix("env_kwargs.").split(".")[0])
                for key in searched if key.startswith("env_kwargs.")]
    for loc, key in written:
        if key not in accepted:
            close = difflib.get_close_matches(key, sorted(accepted), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else f"; it takes: {', '.join(sorted(accepted))}"
            raise spec.locator.error(loc, f"{spec.env} takes no keyword argument {key!r}{hint}")


def _check_variant(spec: speclib.SweepSpec, variant: variantlib.Variant, local: variantlib.Variant,
                   runs: list[RunSpec], check_envs: bool) -> VariantCheck:
    """Compile `local` (the variant with its XML on disk), then probe its env once per distinct
    env_kwargs of the plan. The first problem found is the verdict."""
    try:
        stats = variantlib.model_stats(variantlib.compile_model(local.xml))
    except ValueError as exc:
        return VariantCheck(variant, None, EnvProbe((), ()),
                            f"MuJoCo cannot compile it: {exc} ({_where_in_xml(variant, str(exc))})")
    probe = EnvProbe((), ())
    kwargs_seen: list[dict] = []
    for run in runs:
        if not check_envs or run.variant != variant.name or run.env_kwargs in kwargs_seen:
            continue
        kwargs_seen.append(run.env_kwargs)
        try:
            probe = probe_env(spec.env, local.xml, run.env_kwargs, spec.max_episode_steps,
                              warn_only=frozenset(spec.warn_only), randomize=list(variant.randomize))
        except EnvBuildError as exc:
            return VariantCheck(variant, stats, probe, f"env {spec.env!r}{_kwargs_note(run.env_kwargs)}: {exc}")
    return VariantCheck(variant, stats, probe)


def _where_in_xml(variant: variantlib.Variant, message: str) -> str:
    """The file and line of a compile error; a generated variant's lines are those of its edited XML."""
    if variant.xml_text is None:
        return f"in {error_location(variant.xml, message)}"
    return f"in the XML that the edits made from {variant.xml}"


def _kwargs_note(env_kwargs: dict) -> str:
    return f" with env_kwargs {shown(env_kwargs, 200)}" if env_kwargs else ""


def decide(plan: SweepPlan, *, extend: bool = True) -> list[PlannedRun]:
    """What `sweep run` would do with each run, given what the sweep dir already holds. With `extend` (a grid),
    a run to start continues a finished run of the same content with fewer steps where it can
    (plan/extension.py); the kinds that hand out their runs as they go start each from 0 (or its parent)."""
    decided = [_decide_one(run, plan.sweep_dir.run(run.run_id)) for run in plan.runs]
    if not extend:
        return decided
    keys = {extension.shorter_key(p.run) for p in decided if _may_extend(p)} - {None}
    if not keys:
        return decided
    finished = extension.by_key(_finished_runs(plan.sweep_dir, {r.run_id for r in plan.runs}, keys))
    return [_extended(p, extension.extension_of(p.run, finished)) if _may_extend(p) else p for p in decided]


def _may_extend(planned: PlannedRun) -> bool:
    """A run to start from 0, but one a gone launcher left running: a worker of it may still write into its
    folder until execute ends it."""
    return planned.action is Action.START and planned.reason is not Reason.LEFT_RUNNING


def _finished_runs(sweep_dir: SweepDir, planned: set[str], keys: set[str | None]) -> list[extension.Finished]:
    """The runs of the folder that succeeded, this plan does not include and share a shorter_key of `keys`, each
    with its newest checkpoint's timesteps or why it cannot be continued."""
    found = []
    for run_dir in sweep_dir.run_dirs():
        if run_dir.run_id in planned:
            continue
        spec = read_or_none(partial(read_model, run_dir.spec_json, RunSpec))
        if spec is not None and extension.shorter_key(spec) in keys \
                and succeeded(read_or_none(run_dir.read_status), read_or_none(run_dir.read_result)):
            found.append(extension.Finished(spec, continuable(run_dir)))
    return found


def _extended(planned: PlannedRun, found: extension.Extension | str | None) -> PlannedRun:
    if isinstance(found, extension.Extension):
        return PlannedRun(planned.run, Action.EXTEND, f"{found.source} from step {found.timesteps:,}",
                          Reason.LONGER, found)
    if isinstance(found, str):
        return PlannedRun(planned.run, planned.action, "; ".join(filter(None, [planned.note, found])), planned.reason)
    return planned


def _decide_one(run: RunSpec, run_dir: RunDir) -> PlannedRun:
    try:
        status = run_dir.read_status()
        result = run_dir.read_result()
    except CorruptFileError as exc:
        return PlannedRun(run, _restart_action(run_dir), f"corrupt: {exc}", Reason.CORRUPT)
    if succeeded(status, result):
        assert result is not None
        if not evaluated_as(run, result):
            before = evaluation_words(result.eval_episodes, result.eval_deterministic)
            now = evaluation_words(run.eval_episodes, run.eval_deterministic)
            return PlannedRun(run, Action.EVALUATE, f"evaluated with {before}; again with {now}, no training",
                              Reason.EVALUATED_OTHERWISE)
        if not physics_evaluated(run, read_or_none(run_dir.read_physics_eval)):
            return PlannedRun(run, Action.EVALUATE, "on held-out physics (eval.physics), no training",
                              Reason.EVALUATED_OTHERWISE)
        return PlannedRun(run, Action.SKIP, "succeeded", Reason.SUCCEEDED)
    if not status:
        return PlannedRun(run, _restart_action(run_dir), "", Reason.NEW)
    if status.state is RunState.RUNNING:
        return PlannedRun(run, _restart_action(run_dir), "left running by a launcher that is gone",
                          Reason.LEFT_RUNNING)
    return PlannedRun(run, _restart_action(run_dir), status.state.value, Reason.ENDED)


def _restart_action(run_dir: RunDir) -> Action:
    return Action.RESUME if run_dir.checkpoint_json.exists() else Action.START


def in_start_order(plan: SweepPlan, planned: list[PlannedRun], order: Order = Order.BREADTH) -> list[PlannedRun]:
    """The runs to start or resume in the order they would start (order.py), then the runs to skip; the
    fps of runs that already succeeded prices the others."""
    todo = [p for p in planned if p.action is not Action.SKIP]
    done = [p for p in planned if p.action is Action.SKIP]
    fps = measured_fps(plan.sweep_dir, [p.run for p in done]) if order is Order.BREADTH and done else {}
    by_id = {p.run.run_id: p for p in todo}
    return [by_id[run.run_id] for run in start_order([p.run for p in todo], order, fps)] + done


@dataclass
class Runs:
    """What a sweep runs, said under its lock once what an earlier launcher left is settled: a grid's fixed
    list, or a search's source that makes runs as slots free up."""

    planned: list[PlannedRun]
    """What on_planned shows."""
    runs: list[RunSpec] = field(default_factory=list)
    """Started first, in this order: their folders are written and the launcher queues them before any starts."""
    source: RunSource | None = None
    skipped: list[str] = field(default_factory=list)
    """Runs that succeeded before this invocation: the outcome counts them succeeded."""
    orphans: list[str] = field(default_factory=list)
    """Runs marked running by a launcher that is gone: a worker of theirs still alive is ended first."""
    notes: list[Event] = field(default_factory=list)
    """Said once the plan is shown."""
    extends: dict[str, str] = field(default_factory=dict)
    """Run id -> the finished run whose last checkpoint its folder is seeded with before it starts."""
    plan_record: bool = True
    """Whether plan.json records the plan's runs and experiments; not for a search's trials or a population's
    segments, made as it runs."""


RunsOpener = Callable[[StatusRecorder, Callable[[Event], None]], Runs]
"""Called with the sweep's lock held, the sweep's one writer of status.json and on_event: what to run."""


def planned_runs(plan: SweepPlan, order: Order = Order.BREADTH) -> RunsOpener:
    """A grid: every run of the plan that has not succeeded yet, started in the given order (order.py)."""
    def open_runs(_recorder: StatusRecorder, _on_event: Callable[[Event], None]) -> Runs:
        planned = decide(plan)
        reindex(plan.sweep_dir, planned)
        return Runs(
            planned,
            runs=[p.run for p in in_start_order(plan, planned, order) if p.action is not Action.SKIP],
            skipped=[p.run.run_id for p in planned if p.action is Action.SKIP],
            orphans=[p.run.run_id for p in planned if p.reason is Reason.LEFT_RUNNING],
            notes=[*earlier_spec_notes(plan),
                   *(Event(EventKind.WARNING, p.run.run_id, f"{p.note}; running it again")
                     for p in planned if p.reason is Reason.CORRUPT),
                   *(Event(EventKind.EXTENDS, p.run.run_id, f"continues {p.note}") for p in planned if p.extends)],
            extends={p.run.run_id: p.extends.source for p in planned if p.extends is not None})
    return open_runs


def earlier_spec_notes(plan: SweepPlan) -> list[Event]:
    """A line when the folder holds runs this plan does not include (an earlier spec's: another budget,
    settings, model or env): a report shows this plan's runs and counts those apart, never as seeds of a group
    of this plan."""
    from ..results.experiments import differences
    from ..results.rows import read_row

    planned = {r.run_id for r in plan.runs}
    by_group = {r.group: r for r in plan.runs}
    others = [read_row(d) for d in plan.sweep_dir.run_dirs() if d.run_id not in planned]
    if not others:
        return []
    changes: dict[str, str] = {}
    for row in others:
        if row.spec is not None and row.spec.group not in changes:
            now = by_group.get(row.spec.group)
            changes[row.spec.group] = differences(row.spec, now) if now is not None else "not in this plan"
    said = "; ".join(f"{g}: {c}" for g, c in list(changes.items())[:3]) + ("; ..." if len(changes) > 3 else "")
    return [Event(EventKind.WARNING, None,
                  f"this folder holds {len(others)} run{'s' if len(others) != 1 else ''} of an earlier spec that "
                  f"this plan does not include ({said}); sweep report shows this plan's runs and counts those "
                  "apart (--all-specs shows them)")]


def execute(plan: SweepPlan, runs: RunsOpener, launcher: Launcher, options: SchedulerOptions,
            on_event: Callable[[Event], None] = lambda e: None,
            on_planned: Callable[[list[PlannedRun]], None] = lambda p: None,
            on_poll: Callable[[], None] = lambda: None) -> SweepOutcome:
    """Run what `runs` says under the sweep's lock, a grid's runs and a search's alike; on_poll is called once per
    polling round of the scheduler. Raises an InputError before any run starts: SweepLockedError if another
    launcher runs it, LauncherConfigError if the launcher cannot queue the runs, SweepDirError if the sweep
    folder cannot be written (read-only, permission denied, no space)."""
    try:
        plan.sweep_dir.path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SweepDirError.of(exc, "cannot write", plan.sweep_dir.path) from None
    with sweep_lock(plan.sweep_dir):
        scheduler = Scheduler(launcher, plan.sweep_dir, options, on_event=on_event, on_poll=on_poll)
        work = runs(scheduler.recorder, on_event)
        on_planned(work.planned)
        for note in work.notes:
            on_event(note)
        try:
            work.runs = _write_sweep_files(plan, work.runs, work.extends, work.plan_record)
            for run_id in work.orphans:
                kill_orphan(plan.sweep_dir.run(run_id))
            if work.runs:
                launcher.submit(work.runs, plan.sweep_dir)
        except OSError as exc:  # a disk gone read-only or full before any run started
            raise SweepDirError.of(exc, "cannot write", plan.sweep_dir.path) from None
        outcome = scheduler.run(work.runs, source=work.source)
        outcome.succeeded[:0] = work.skipped
        return outcome


def reindex(sweep_dir: SweepDir, planned: list[PlannedRun]) -> None:
    """Start the index afresh: every ended run this launcher leaves alone keeps its line (a skipped run
    without one gets it now); the runs it will start are read from their files until they end again."""
    old = runindex.ended_entries(sweep_dir.index_jsonl)
    for item in planned:
        run_id = item.run.run_id
        if item.action is not Action.SKIP:
            old.pop(run_id, None)
        elif (entry := old.get(run_id)) is None or entry.state != DisplayState.SUCCEEDED:
            old[run_id] = index_entry(sweep_dir.run(run_id))  # absent, not ended, or of an older version
    runindex.rewrite(sweep_dir.index_jsonl, [e for e in old.values() if e is not None])


def _write_sweep_files(plan: SweepPlan, runs: list[RunSpec], extends: dict[str, str], plan_record: bool
                       ) -> list[RunSpec]:
    """The snapshot of every variant's model (first: a model edited since it was planned is refused before
    anything else is written), sweep.yaml, variants.json, plan.json and the folder of each run about to run,
    seeded with the last checkpoint of the finished run it extends (a finished run's files are never touched
    again); the runs as written, each naming its model's XML in the snapshot."""
    variants = {c.variant.name: c.variant for c in plan.checks}
    for variant in variants.values():  # every model stored before any run starts, a search's and PBT's too
        snapshot.store(plan.sweep_dir.snapshots, variant)
    write_text_atomic(plan.sweep_dir.sweep_yaml, yaml.safe_dump(plan.spec.resolved(), sort_keys=False))
    write_model(plan.sweep_dir.variants_json, variants_record(plan))
    if plan_record:
        write_model(plan.sweep_dir.plan_json, PlanRecord(experiments={r.group: r.experiment for r in plan.runs},
                                                         runs=[r.run_id for r in plan.runs]))
    else:  # a search's groups are its trials, PBT's segments its generations, made as it runs: no plan
        plan.sweep_dir.plan_json.unlink(missing_ok=True)
    written = []
    for run in runs:
        run_dir = plan.sweep_dir.run(run.run_id)
        written.append(write_run_dir(run_dir, run, variants[run.variant]))
        if run.run_id in extends:
            start_from(plan.sweep_dir.run(extends[run.run_id]), run_dir, keep_best=True,
                       row_steps=ALGOS[run.algo].row_steps)
    return written


def write_run_dir(run_dir: RunDir, run: RunSpec, variant: variantlib.Variant | None) -> RunSpec:
    """What the worker reads: spec.json, naming the XML of the variant's model in the sweep's snapshot (stored
    now where it is not yet: robots/snapshot.py); without a variant, the run loads run.xml as it is. Returns the
    run as written. A run folder that is a link (planted since prepare() looked) is refused rather than written
    through."""
    if run_dir.path.is_symlink():
        raise InputError(f"{run_dir.path}: this run folder is a symbolic link: the launcher trains only into run "
                         "folders it made; remove the link")
    run_dir.path.mkdir(parents=True, exist_ok=True)
    if variant is not None:
        run = run.model_copy(update={"xml": str(snapshot.store(SweepDir(run_dir.path.parent).snapshots, variant))})
    write_model(run_dir.spec_json, run)
    return run


def variants_record(plan: SweepPlan) -> SweepVariants:
    """variants.json: what deep validation found of each variant (all compiled, or prepare() raised)."""
    records = []
    for check in plan.checks:
        v, stats = check.variant, check.stats
        assert stats is not None, "prepare() lets no variant that fails to compile through"
        records.append(VariantRecord(name=v.name, xml=str(v.xml), sha256=v.sha256, bodies=stats.bodies,
                                     joints=stats.joints, actuators=stats.actuators, total_mass=stats.total_mass,
                                     obs_shape=check.probe.obs_shape, act_shape=check.probe.act_shape))
    return SweepVariants(variants=records)


def kill_orphan(run_dir: RunDir) -> None:
    """A run marked running under a lock we now hold: if its worker still lives here, end its group."""
    status = read_or_none(run_dir.read_status)
    if not status or not status.pid:
        return
    try:
        proc = psutil.Process(status.pid)
        # An exec'd worker names its run dir on its command line; a forked one runs in it.
        if str(run_dir.path) in " ".join(proc.cmdline()) or proc.cwd() == str(run_dir.path):
            signal_group(status.pid, signal.SIGKILL)
    except psutil.Error:
        pass
