"""The `sweep` command line. Each command parses its options, calls the library and renders the result;
`sweep report` also writes report.csv and report.md.

Exit codes: 0 success, 1 some run failed (or a filesystem error once runs had started), 2 invalid input or a
sweep folder that cannot be written or locked (errors.InputError: nothing started), 130 interrupted. A command
raises InputError and _Commands prints it as the one `error:` line; an OSError that reaches it is one line too.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

from ..errors import InputError, os_words
from . import console_tables as tables

if TYPE_CHECKING:
    from ..sweepdir.models import RunSpec

EXIT_FAILED = 1
EXIT_INVALID = 2
EXIT_INTERRUPTED = 130
MAX_RUNS_HELP = "The most runs the spec may plan [default: the spec's max_runs, 10,000]."
PICTURES_HELP = "Render every variant in its start pose into DIR: a PNG each and contact_sheet.png."


class _Commands(TyperGroup):
    """Every command's InputError becomes one `error: ...` line on stderr and exit 2."""

    def invoke(self, ctx: Any) -> Any:  # typer's vendored click.Context
        try:
            return super().invoke(ctx)
        except InputError as exc:
            tables.error(str(exc))
            raise typer.Exit(EXIT_INVALID) from None
        except OSError as exc:  # a filesystem error no earlier check turned into its own line: one line still
            where = f"{exc.filename}: " if exc.filename is not None else ""
            tables.error(f"{where}{os_words(exc)}")
            raise typer.Exit(EXIT_FAILED) from None


app = typer.Typer(cls=_Commands, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Launch sweeps of single-threaded SB3 trainings (PPO, SAC, TD3, A2C) over MuJoCo robots.")


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        print(f"mjsweep {__version__}")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                          help="Print mjsweep's version and exit.")) -> None:
    """Launch sweeps of single-threaded SB3 trainings (PPO, SAC, TD3, A2C) over MuJoCo robot variants."""


def writable_sweep(folder: Any, what: str) -> None:
    """InputError unless `folder` (a SweepDir) is a sweep folder a launcher made: a command that writes into
    it leaves any other folder as it found it."""
    if not folder.is_sweep():
        raise InputError(f"{folder.path}: not a sweep folder (no sweep.yaml, no index.jsonl, no run folder whose "
                         f"spec.json names it); {what} only into a sweep folder")


def usable_cores() -> int:
    return len(os.sched_getaffinity(0))


def parse_duration(text: str) -> float:
    """'90m', '2h', '1h30m', '45s' or plain seconds -> seconds."""
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)([dhms])", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise typer.BadParameter(f"{text!r} is not a duration like 90m, 2h, 1h30m or 45s")
    scale = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    return sum(float(n) * scale[u] for n, u in parts)


@app.command()
def run(
    spec_file: Path = typer.Argument(..., help="The sweep spec (YAML)."),
    workers: int | None = typer.Option(None, "--workers", "-w", min=1,
                                          help="Runs at once [default: usable CPU cores]."),
    runs_dir: Path | None = typer.Option(None, "--runs-dir", help="Overrides the spec's runs_dir."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and start nothing."),
    retries: int = typer.Option(1, "--retries", min=0,
                                help="Extra attempts for a run killed by a signal or a timeout."),
    timeout: str | None = typer.Option(None, "--timeout", help="Per-run time limit, e.g. 90m, 2h."),
    grace: float = typer.Option(10.0, "--grace", min=0.0,
                                help="Seconds between SIGINT and SIGKILL when stopping runs."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the end summary."),
    backend: str = typer.Option("local", "--backend", help="Where runs execute: local, ray or slurm "
                                "(docs/cluster.md)."),
    address: str | None = typer.Option(None, "--address", help="Ray cluster address, e.g. 10.0.0.1:6379 "
                                          "[default: RAY_ADDRESS, else a local Ray]."),
    gpus: str | None = typer.Option(None, "--gpus",
                                       help="GPU ids for device: cuda, e.g. 0,1 [default: all found]."),
    pictures: Path | None = typer.Option(None, "--pictures", help=PICTURES_HELP),
    order: str = typer.Option("breadth", "--order", help="Start order: breadth (every variant and grid point "
                              "gets its first seed before any gets its second; the longest runs first within "
                              "that) or variant (the spec's order: variant, grid point, seed)."),
    start_with: str = typer.Option("auto", "--start", help="How local runs begin: template (forked from a process "
                              "that has imported torch once; CPU runs), exec (a fresh interpreter each) or auto "
                              "(template on Linux)."),
    report_every: str = typer.Option("60s", "--report-every", envvar="MJSWEEP_REPORT_EVERY",
                                     help="Rewrite SWEEP_DIR/report.html while the sweep runs, at most this often "
                                     "and only after a run ended (e.g. 30s, 5m); 0 or off: never."),
    max_runs: int | None = typer.Option(None, "--max-runs", min=1, help=MAX_RUNS_HELP),
) -> None:
    """Train every variant x grid point x seed, each as its own single-threaded process."""
    from ..launchers import early_template

    # Before anything else, so that its imports overlap all that follows. Should `sweep run` end
    # before the launcher adopts it, it ends too: it dies with this process.
    template = None if dry_run else early_template(backend, start_with)
    from ..engine.sweep import decide, execute, in_start_order, planned_runs, prepare
    from ..plan.order import Order

    try:
        start = Order(order)
    except ValueError:
        raise InputError(f"--order {order!r}: expected breadth or variant") from None
    timeout_s = parse_duration(timeout) if timeout else None
    report_every_s = None if report_every in ("0", "off") else parse_duration(report_every) or None
    out = tables.make_console()
    plan = prepare(spec_file, runs_dir, max_runs=max_runs)
    tables.warn_spec(plan.spec)
    tables.warn_missing_tensorboard(plan.spec)
    if plan.spec.search is None and not dry_run:
        _check_disk(plan, _runs_to_run(decide(plan)), workers, backend)  # before pictures, lock or folders
    if pictures:
        _render_pictures(plan, pictures)
    if plan.spec.search is not None:
        _run_search(plan, dry_run, backend, workers, out, retries=retries, timeout_s=timeout_s, grace=grace,
                    quiet=quiet, gpus=gpus, address=address, start_with=start_with, template=template,
                    report_every_s=report_every_s)
    policy = plan.spec.adaptive_seeds
    if dry_run:
        tables.variant_table(out, plan)  # what deep validation found, model by model
        if plan.spec.pbt is not None:
            from ..search.pbt import dry_run_line

            out.print(dry_run_line(plan))
            return
        if policy is not None:
            _adaptive_dry_run(out, plan, policy, start, workers, backend)
            return
        planned = in_start_order(plan, decide(plan), start)  # reads every run dir: once
        tables.plan_table(out, plan, planned)
        _print_cost(out, plan, planned, workers, backend)
        _check_disk(plan, _runs_to_run(planned), workers, backend, out=out, refuse=False)
        if backend == "slurm":
            tables.sbatch_preview(out, plan, planned, workers)
        return
    if (policy is not None or plan.spec.pbt is not None) and backend == "slurm":
        what = "pbt starts each generation" if plan.spec.pbt else "adaptive seeds add runs"
        raise InputError(f"{what} as results come in: use --backend local or ray, not slurm")
    opener = planned_runs(plan, start)
    if plan.spec.pbt is not None:
        from ..search.pbt import pbt_runs

        opener = pbt_runs(plan)
    if policy is not None:
        from ..engine.adaptive import adaptive_runs

        opener = adaptive_runs(plan, policy)
    with _launched(plan, out, backend=backend, workers=workers, quiet=quiet, gpus=gpus, address=address,
                   start_with=start_with, template=template, retries=retries, timeout_s=timeout_s,
                   grace=grace, report_every_s=report_every_s) as (launcher, options, progress, default, report):
        notes = [] if workers or quiet or not default.source else [f"workers: {default.workers} ({default.source})"]
        try:
            outcome = execute(plan, opener, launcher, options,
                              on_event=_each(progress.event, report.event), on_poll=report.tick,
                              on_planned=_announce_then([*notes, *_report_note(plan, report, quiet)],
                                                        progress.planned))
        finally:
            if pictures:
                _keep_contact_sheet(pictures, plan.sweep_dir)
        report.finish(stopped=outcome.exit_code == EXIT_INTERRUPTED)
    tables.outcome_summary(out, plan, outcome)
    raise typer.Exit(outcome.exit_code)


@contextmanager
def _launched(plan, out, *, backend: str, workers: int | None, quiet: bool, gpus: str | None,
              address: str | None, start_with: str, template, retries: int, timeout_s: float | None,
              grace: float, report_every_s: float | None) -> Iterator[tuple[Any, Any, Any, Any, Any]]:
    """The launcher (adopting the early template), the scheduler's options, the progress display and the live
    report.html that a grid and a search both run under. No report build outlives it."""
    from ..engine.livereport import LiveReport
    from ..engine.scheduler import Event, EventKind, SchedulerOptions
    from ..launchers import build_launcher
    from . import live

    launcher = build_launcher(backend, plan.spec, gpus=gpus, address=address, workers=workers, start=start_with,
                              template=template)
    with launcher:
        default = _default_workers(backend)
        # Memory is only this machine's to guard when the runs execute here.
        options = SchedulerOptions(max_workers=launcher.slots(workers, default.workers), retries=retries,
                                   timeout_s=timeout_s, grace_s=grace, memory_guard=backend == "local")
        progress = live.make_progress(out, plan.sweep_dir, quiet=quiet)
        # report.html is `sweep report --format html` itself, run by the same Python in a child process.
        command = [sys.executable, "-m", "mjsweep.ui.cli", "report", str(plan.sweep_dir.path.absolute()),
                   "--format", "html"]
        report = LiveReport(command, report_every_s, by_hand=f"sweep report {plan.sweep_dir.path} --format html",
                            warn=lambda message: progress.event(Event(EventKind.WARNING, None, message)))
        try:
            yield launcher, options, progress, default, report
        finally:
            report.close()
            progress.close()


def _adaptive_dry_run(out, plan, policy, start, workers: int | None, backend: str) -> None:
    """The seeds granted so far (every group's `min` in a new sweep), how many runs it may come to, and what
    they cost at the seeds granted and at max."""
    from ..engine.adaptive import AdaptiveSource, granted_plan
    from ..engine.sweep import decide, in_start_order

    source = AdaptiveSource(plan, policy)
    granted = in_start_order(plan, granted_plan(plan, source), start)
    tables.plan_table(out, plan, granted)
    tables.adaptive_seeds_plan(out, policy, len(source.by_group), sum(source.seeds.values()))
    at_max = in_start_order(plan, decide(plan), start)
    _print_cost(out, plan, granted, workers, backend, at_max=at_max)
    _check_disk(plan, _runs_to_run(at_max), workers, backend, out=out, refuse=False)


def _run_search(plan, dry_run: bool, backend: str, workers: int | None, out, *, retries: int,
                timeout_s: float | None, grace: float, quiet: bool, gpus: str | None, address: str | None,
                start_with: str, template, report_every_s: float | None) -> None:
    """`sweep run` on a spec with a search section (docs/search.md); exits when done."""
    from ..engine.sweep import execute
    from ..search import execute as searchlib
    from . import search_console as show

    searchlib.check_method(plan)
    if dry_run:
        tables.variant_table(out, plan)
        show.preview(out, plan.spec, searchlib.preview(plan))
        budget = searchlib.budget(plan)
        search = plan.spec.search
        studies = f"{budget.studies} {'study' if budget.studies == 1 else 'studies'} x {search.trials} trials"
        note = (f"{budget.trials_left} trials left of {studies}" if budget.trials_ended else studies) + \
            f" x {search.seeds_per_trial} seeds" + \
            (", each to the space's largest total_timesteps" if "total_timesteps" in search.space else "") + \
            ("; pruning may end trials sooner" if search.prune else "") + \
            (f"; then {budget.confirming} runs confirm the top {search.confirm.top} trials of each study on "
             f"{search.confirm.seeds} fresh seeds" if budget.confirming else "")
        print_cost(out, plan, budget.runs, workers, backend, measured=budget.ended_runs, note=note, at_most=True)
        raise typer.Exit(0)
    if backend == "slurm":
        raise InputError("a search makes its runs as slots free up: use --backend local or ray, not slurm")
    with _launched(plan, out, backend=backend, workers=workers, quiet=quiet, gpus=gpus, address=address,
                   start_with=start_with, template=template, retries=retries, timeout_s=timeout_s,
                   grace=grace, report_every_s=report_every_s) as (launcher, options, progress, _, report):
        outcome = execute(plan, searchlib.search_runs(plan), launcher, options,
                          on_event=_each(progress.event, report.event), on_poll=report.tick,
                          on_planned=_announce_then(_report_note(plan, report, quiet), progress.planned))
        report.finish(stopped=outcome.exit_code == EXIT_INTERRUPTED)
    tables.outcome_summary(out, plan, outcome)
    raise typer.Exit(outcome.exit_code)


def _print_cost(out, plan, planned, workers: int | None, backend: str, at_max=None) -> None:
    """A grid's dry run: the cost of the runs to start or resume, priced by those that succeeded. at_max:
    adaptive seeds' every possible run, `planned` being the seeds granted so far."""
    from ..plan.planned import Action
    from ..sweepdir.files import CorruptFileError

    todo = [p.run for p in planned if p.action is not Action.SKIP]
    done = [p.run for p in planned if p.action is Action.SKIP]
    most = [p.run for p in at_max if p.action is not Action.SKIP] if at_max is not None else None
    trained: dict[str, int] = {}
    for p in at_max or planned:
        if p.action is Action.RESUME:
            try:
                checkpoint = plan.sweep_dir.run(p.run.run_id).read_checkpoint()
            except CorruptFileError:
                checkpoint = None
            if checkpoint is not None:
                trained[p.run.run_id] = checkpoint.timesteps
    print_cost(out, plan, todo, workers, backend, measured=done, skipped=len(done), done_steps=trained, at_max=most)


def print_cost(out, plan, runs: Sequence[RunSpec], workers: int | None, backend: str, *,
               measured: Sequence[RunSpec] = (), skipped: int = 0, note: str = "",
               done_steps: dict[str, int] | None = None, at_max: Sequence[RunSpec] | None = None,
               at_most: bool = False) -> None:
    """The dry run's cost lines for `runs` (RunSpec, in start order): their env steps and expected wall time
    at `workers` (else the default here) from the speeds the `measured` runs of this sweep folder that
    succeeded had, else from `sweep bench`'s record for this machine. at_max: the runs at their largest
    (adaptive seeds: `runs` at min seeds, `at_max` at max seeds); at_most: a ceiling (a search)."""
    import socket

    from ..plan.cost import Measurements, estimate
    from ..plan.speeds import earlier_runs

    measurements = Measurements(earlier_runs(plan.sweep_dir, measured), _bench_speed())
    at_once = workers or (_default_workers(backend).workers if backend == "local" else None)
    where = None if at_once is None else "on this machine" if backend == "local" else \
        f"on the {backend} cluster at the speeds measured here"
    cost = estimate(runs, at_once or 1, measurements, done_steps)
    top = estimate(at_max, at_once or 1, measurements, done_steps) if at_max is not None else None
    for line in tables.cost_lines(cost, skipped=skipped, note=note, at_max=top, at_most=at_most, where=where,
                                  here=socket.gethostname()):
        out.print(line, markup=False, highlight=False, soft_wrap=True)


def _runs_to_run(planned) -> list[RunSpec]:
    from ..plan.planned import Action

    return [p.run for p in planned if p.action is not Action.SKIP]


def _check_disk(plan, runs: Sequence[RunSpec], workers: int | None, backend: str, *, out=None,
                refuse: bool = True) -> None:
    """The peak disk use of `runs` (plan/disk.py) against the free space where the sweep writes: refused (an
    InputError) when it needs more than that, or only said when not `refuse` (a dry run); a warning when it
    needs most of it. With `out`, the estimate's line too."""
    from ..engine.diskspace import room
    from ..plan.disk import WARN_SHARE, Verdict, estimate, human_bytes, judge

    at_once = workers or (_default_workers(backend).workers if backend == "local" else len(runs))
    needed = estimate(runs, {c.variant.name: c.probe for c in plan.checks}, plan.spec.checkpoints_kept, at_once)
    free = room(plan.sweep_dir.path)
    if out is not None:
        out.print(tables.disk_line(needed, free), markup=False, highlight=False, soft_wrap=True)
    verdict = judge(needed.bytes, free.free)
    if verdict is Verdict.SHORT:
        shortage = tables.disk_shortage(plan.sweep_dir.path, needed, free)
        if refuse:
            raise InputError(shortage)
        print(f"warning: sweep run would refuse: {shortage}", file=sys.stderr, flush=True)
    elif verdict is Verdict.TIGHT:
        print(f"warning: {plan.sweep_dir.path}: needs {tables.disk_needs(needed)}, over {100 * WARN_SHARE:.0f}% "
              f"of the {human_bytes(free.free)} free on {free.device}", file=sys.stderr, flush=True)


def _bench_speed():
    """What `sweep bench` kept for this machine as a per-run speed (it trains PPO on one env per run)."""
    from ..bench.recommend import load
    from ..plan.cost import BenchSpeed

    rec = load(usable_cores())
    if rec is None or rec.aggregate_fps <= 0:
        return None
    return BenchSpeed(rec.env, "ppo", 1, rec.aggregate_fps / rec.workers, rec.workers, rec.measured_at)


def _default_workers(backend: str):
    """Runs at once without --workers: here, what `sweep bench` measured best on this machine, else the
    usable cores, with where that came from."""
    from ..bench.recommend import DefaultWorkers, default_workers

    if backend != "local":
        return DefaultWorkers(usable_cores(), "")  # a cluster launcher sizes itself
    return default_workers(usable_cores())


def _announce_then(notes: list[str], planned):
    """on_planned that first says on stderr where the worker count came from and where report.html is: only
    once the sweep's lock is held, so a refused second launcher prints its one error line and nothing else."""
    def on_planned(items) -> None:
        for note in notes:
            print(note, file=sys.stderr, flush=True)
        planned(items)
    return on_planned


def _report_note(plan, report, quiet: bool) -> list[str]:
    """Where the live report.html is, said once at the start."""
    if quiet or report.every_s is None:
        return []
    return [f"report: {plan.sweep_dir.report_html} (rewritten while runs end, at most every {report.every_s:g}s)"]


def _each(*handlers):
    """One on_event that hands each event to every handler, in order."""
    def on_event(event) -> None:
        for handler in handlers:
            handler(event)
    return on_event


def _render_pictures(plan, folder: Path) -> None:
    """Pictures of every variant, or exit 2 with one line saying why not (nothing has started yet)."""
    from ..media.gl import RenderFailed, RenderUnavailable
    from ..media.variant_pictures import render_variant_pictures

    try:
        drawn = render_variant_pictures(plan, folder)
    except (RenderUnavailable, RenderFailed) as exc:
        raise InputError(f"--pictures {folder}: {exc}") from None
    print(f"pictures: {len(plan.checks)} variants and {drawn.contact_sheet.name} in {folder} "
          f"(drawn with {drawn.backend})", file=sys.stderr, flush=True)


def _keep_contact_sheet(folder: Path, sweep_dir) -> None:
    """A copy of the contact sheet in the sweep folder, where `sweep report --format html` finds it."""
    from ..sweepdir.files import CONTACT_SHEET_PNG, write_bytes_atomic

    source = folder / CONTACT_SHEET_PNG
    if source.is_file() and sweep_dir.path.is_dir():
        sweep_dir.pictures.mkdir(exist_ok=True)
        write_bytes_atomic(sweep_dir.contact_sheet, source.read_bytes())


@app.command()
def validate(
    spec_file: Path = typer.Argument(..., help="The sweep spec (YAML)."),
    runs_dir: Path | None = typer.Option(None, "--runs-dir", help="Overrides the spec's runs_dir."),
    pictures: Path | None = typer.Option(None, "--pictures", help=PICTURES_HELP),
    max_runs: int | None = typer.Option(None, "--max-runs", min=1, help=MAX_RUNS_HELP),
) -> None:
    """Check the spec; compile every variant, build its env and take random steps; one row per variant; the
    disk the runs will need at their peak against the free space."""
    from ..engine.sweep import BrokenVariantsError, decide, prepare

    try:
        plan = prepare(spec_file, runs_dir, max_runs=max_runs)
    except BrokenVariantsError as exc:
        tables.variant_table(tables.make_console(), exc.plan)
        raise
    tables.warn_spec(plan.spec)
    tables.warn_missing_tensorboard(plan.spec)
    tables.zoo_hyperparameters(plan.spec)
    out = tables.make_console()
    tables.variant_table(out, plan)
    if plan.spec.search is None:
        _check_disk(plan, _runs_to_run(decide(plan)), None, "local", out=out)
    if pictures:
        _render_pictures(plan, pictures)


REPORT_FORMATS = ("table", "csv", "md", "json", "html")


@app.command()
def report(
    sweep_dir: Path = typer.Argument(..., help="A sweep folder: <runs_dir>/<sweep name>."),
    fmt: str = typer.Option("table", "--format", "-f", help="table | csv | md | json, on stdout; html: "
                            "a self-contained SWEEP_DIR/report.html (figures, pictures, videos inside)."),
    rank: str = typer.Option("final", "--rank", help="final: by the final evaluation's return; best: by each "
                             "run's best periodic evaluation (eval.every)."),
    compare: bool = typer.Option(False, "--compare", help="Which group is better and how sure: P(A > B) over "
                                 "seeds with its 95% interval and a verdict, for every pair or the two named; "
                                 "figures of P(row > column) and performance profiles in the sweep folder."),
    names: list[str] | None = typer.Argument(None, help="With --compare: two groups, each a variant's name or "
                                             "the group as the report names it.", show_default=False),
    all_specs: bool = typer.Option(False, "--all-specs", help="Also the runs of earlier specs of this folder, "
                                   "each experiment a group of its own (by default: the last plan's runs)."),
) -> None:
    """Mean, std, IQM and 95% CI of the final eval return over seeds; writes report.csv and report.md too."""
    from ..results import report as reportlib
    from ..results import sweepreport
    from ..sweepdir.files import SweepDir, write_text_atomic
    from .status import read_sweep

    if fmt not in REPORT_FORMATS:
        raise InputError(f"--format {fmt!r}: choose one of {', '.join(REPORT_FORMATS)}")
    folder = SweepDir(sweep_dir)
    read = sweepreport.read(folder, all_specs, rank)
    rows, left_out, groups, rounds = read.rows, read.left_out, read.groups, read.rounds
    writable_sweep(folder, "sweep report writes report.csv and report.md")
    if names and not compare:
        raise InputError(f"sweep report: {' '.join(names)}: group names go with --compare")
    returns, sequential = read.returns, read.sequential
    comparisons = read.compare(names) if compare else None
    decisions = None
    # The figures cost a second or two (matplotlib, the bootstrap of every pair): drawn when asked for, and for
    # report.html, which draws figures anyway and is what a sweep's results are shared as.
    if compare or fmt == "html":
        from .decision_figures import decide

        decisions = decide(folder, returns, f"sweep {folder.path.name}", sequential)
    view = read_sweep(folder.path)
    warnings = [str(w) for w in view.warnings] + ([left_out] if left_out else [])
    csv_text = reportlib.to_csv(groups)
    failed = reportlib.failed_runs(rows)
    md_text = reportlib.to_markdown(groups, f"sweep {folder.path.name}", warnings, failed)
    trials = _search_trials(folder)
    pareto = _pareto_figure(folder, *trials) if trials is not None else None
    if trials is not None:
        from ..search.ranking import to_markdown as trials_markdown

        trial_rows, search = trials
        md_text += "\n" + trials_markdown(trial_rows, search, pareto.name if pareto else None)
    confirmed = _confirmations(folder, trials)
    if confirmed:
        from ..search.confirm import to_markdown as confirmed_markdown

        md_text += "\n" + confirmed_markdown(confirmed, trials[1].metric)
    if comparisons:
        from ..results.compare import to_markdown as comparisons_markdown

        md_text += "\n" + comparisons_markdown(comparisons)
    if decisions is not None:
        md_text += "\n" + decisions.markdown(folder)
    if rounds:
        from ..results.seeding import to_markdown as seeds_markdown

        md_text += "\n" + seeds_markdown(rounds)
    from ..search.pbtreport import report as pbt_report

    pbt_text = pbt_report(folder)  # a PBT sweep's lineage, best schedule and replay spec; "" for any other
    if pbt_text:
        md_text += "\n" + pbt_text
    write_text_atomic(folder.report_csv, csv_text)
    write_text_atomic(folder.report_md, md_text)
    if fmt == "table":
        tables.report_table(tables.make_console(), groups, rows, warnings, failed)
        for comparison in comparisons or []:
            print(comparison.verdict())
        if decisions is not None:
            print(f"figures: {folder.report_matrix_png}, {folder.report_profile_png}" if decisions.drawn
                  else f"no figures: {decisions.why_no_figures}")
        if rounds:
            from ..results.seeding import explain

            print(f"adaptive seeds, as decided: {explain(rounds[-1])}")
        if trials is not None:
            from .search_console import trials_table

            trials_table(tables.make_console(), trial_rows, search, pareto)
        if confirmed:
            from ..search.confirm import summary_lines

            for line in summary_lines(confirmed):
                print(f"confirmed on fresh seeds: {line}")
        if pbt_text:
            print(pbt_text)
    elif fmt == "html":
        from .html_report import build, sweep_state

        # While a launcher runs the sweep, the page says so (under its title: how far it got).
        write_text_atomic(folder.report_html, build(folder, groups, rows, warnings, decisions, sweep_state(view),
                                                    trials, pareto))
        print(folder.report_html)
    else:
        problems = [p for r in rows for p in r.problems]
        text = {"csv": csv_text, "md": md_text}.get(fmt) or reportlib.to_json(
            groups, warnings, problems, [c.to_json() for c in comparisons] if comparisons is not None else None,
            decisions.matrix.to_json() if decisions is not None else None,
            decisions.profiles.to_json() if decisions is not None else None,
            [r.to_file() for r in rounds] if rounds else None, failed)
        if fmt == "json" and trials is not None:
            import json

            from ..search.confirm import to_dicts as confirmed_dicts
            from ..search.ranking import to_dicts

            extra = {"trials": to_dicts(trials[0]), **({"confirmed": confirmed_dicts(confirmed)} if confirmed else {})}
            text = json.dumps({**json.loads(text), **extra}, indent=2) + "\n"
        sys.stdout.write(text)


def _search_trials(folder):
    """A search's trials ranked by its objectives, and its search section; None for a grid sweep."""
    from ..search import ranking as searchresults

    search = searchresults.searched(folder)
    return (searchresults.ranked(folder, search), search) if search is not None else None


def _confirmations(folder, trials):
    """A search's trials confirmed on fresh seeds (search.confirm), tuned against confirmed; None without."""
    if trials is None or trials[1].confirm is None:
        return None
    from ..search import confirm

    rows, search = trials
    return confirm.read(folder, search.metric, search.maximize, [r.record for r in rows]) or None


def _pareto_figure(folder, rows, search):
    """A multi-objective search's Pareto front drawn to report_pareto.png; None for one objective or before a
    trial is complete (a figure left from an earlier report goes, as it no longer holds)."""
    if not search.multi:
        return None
    from ..search.plots import plot_pareto

    folder.report_pareto_png.unlink(missing_ok=True)
    return folder.report_pareto_png if plot_pareto(rows, search, folder.report_pareto_png) else None


@app.command()
def video(
    sweep_dir: Path = typer.Argument(..., help="A sweep folder: <runs_dir>/<sweep name>."),
    variant: str | None = typer.Option(None, "--variant", help="Only this variant [default: every one]."),
    seed: int | None = typer.Option(None, "--seed", help="This seed [default: the seed with the median "
                                       "final return of each variant x grid point]."),
    best: bool = typer.Option(False, "--best", help="The best evaluation's model (best_model.zip) where a run "
                              "kept one."),
    seconds: float = typer.Option(10.0, "--seconds", min=0.1, help="Simulated seconds per video."),
    gif: bool = typer.Option(False, "--gif", help="A GIF beside each MP4."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Folder [default: SWEEP_DIR/videos]."),
) -> None:
    """A video of each variant's trained policy (MP4, drawn on the CPU where there is no GPU)."""
    from ..media.gl import RenderFailed, RenderUnavailable
    from ..media.videos import NoVideo, choose, render_videos
    from ..results.rows import collect
    from ..sweepdir.files import SweepDir

    folder = SweepDir(sweep_dir)
    if output is None:
        writable_sweep(folder, "sweep video writes its videos/")
    try:
        choices = choose(collect(folder), folder.path, variant, seed, best)
    except NoVideo as exc:
        raise InputError(f"{sweep_dir}: {exc}") from None
    try:
        written = render_videos(choices, folder.path, output or folder.videos, seconds, gif)
    except (RenderUnavailable, RenderFailed) as exc:
        raise InputError(f"sweep video: {exc}") from None
    for path in written:
        print(path)


@app.command()
def evaluate(
    sweep_dir: Path = typer.Argument(..., help="A sweep folder: <runs_dir>/<sweep name>."),
    cross: bool = typer.Option(False, "--cross", help="Every trained policy on every variant whose observation "
                               "and action spaces match: a matrix of mean returns over seeds."),
    episodes: int = typer.Option(5, "--episodes", min=1, help="Episodes per policy and variant."),
    workers: int | None = typer.Option(None, "--workers", "-w", min=1,
                                          help="Evaluations at once [default: usable CPU cores]."),
) -> None:
    """Evaluate trained policies again; with --cross, on the other variants too (results kept, resumable)."""
    from ..crosseval.run import evaluate_cross
    from ..sweepdir.files import SweepDir

    if not cross:
        raise InputError("sweep evaluate: say which evaluation: --cross (every policy on every variant)")
    writable_sweep(SweepDir(sweep_dir), "sweep evaluate writes its cross/")
    outcome = evaluate_cross(SweepDir(sweep_dir), episodes, workers or usable_cores(),
                             say=lambda line: print(line, file=sys.stderr, flush=True))
    tables.cross_table(tables.make_console(), outcome.cells)
    for failure in outcome.failed:
        print(f"warning: evaluation failed: {failure}", file=sys.stderr)
    print(f"wrote {outcome.csv}" + (f" and {outcome.heatmap}" if outcome.heatmap else ""), file=sys.stderr)
    raise typer.Exit(1 if outcome.failed else 0)


@app.command()
def status(
    sweep_dir: Path = typer.Argument(..., help="A sweep folder: <runs_dir>/<sweep name>."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object on stdout, for scripts."),
    watch: bool = typer.Option(False, "--watch", help="Refresh until Ctrl-C."),
    interval: float = typer.Option(2.0, "--interval", min=0.5, help="Seconds between refreshes with --watch."),
) -> None:
    """Counts by state and one row per run, while the sweep runs or after; flags stale runs and contention."""
    from ..sweepdir.files import SweepDir
    from . import runs_table
    from .status import read_sweep, to_json

    if not SweepDir(sweep_dir).has_runs():
        raise InputError(f"{sweep_dir}: no run folders here (is it <runs_dir>/<sweep name>?)")
    if as_json:
        sys.stdout.write(to_json(read_sweep(sweep_dir)))
        return
    out = tables.make_console()
    if not watch:
        out.print(runs_table.status_renderable(read_sweep(sweep_dir)))
        return
    try:
        runs_table.watch(out, lambda: runs_table.status_renderable(read_sweep(sweep_dir)), interval)
    except KeyboardInterrupt:
        pass


@app.command()
def verify(
    sweep_dir: Path = typer.Argument(..., help="A sweep folder: <runs_dir>/<sweep name>."),
    run_ids: list[str] | None = typer.Argument(None, help="The finished runs to train again (default: a sample)."),
    sample: int = typer.Option(1, "--sample", min=1, help="Without RUN: how many finished runs, drawn at random."),
    scratch: Path | None = typer.Option(None, "--scratch", help="Where to train them again (default: a new "
                                        "temporary folder, deleted at the end)."),
) -> None:
    """Train finished runs again from scratch and say, per run, whether they reproduce exactly: monitor.csv
    episode by episode, evaluations, final parameters. Exit 0 when all do, 1 otherwise."""
    import shutil

    from ..engine import verify as verifylib

    runs = verifylib.chosen_runs(sweep_dir, list(run_ids or []), sample)
    folder = verifylib.scratch_folder(scratch)
    if folder.resolve().is_relative_to(sweep_dir.resolve()):
        raise InputError(f"{folder}: the scratch folder must lie outside the sweep folder")
    taken = [run.path.name for run in runs if (folder / run.path.name).exists()]
    if taken:
        raise InputError(f"{folder}: already holds {', '.join(taken)}; give another --scratch")
    try:
        verdicts = verifylib.verify(runs, folder, lambda line: print(line, flush=True))
    finally:
        if scratch is None:
            shutil.rmtree(folder, ignore_errors=True)
    exact = sum(v.difference is None for v in verdicts)
    print(f"{exact} of {len(verdicts)} runs reproduced exactly")
    raise typer.Exit(0 if exact == len(verdicts) else 1)


@app.command()
def plot(
    sweep_dir: Path = typer.Argument(..., help="A sweep folder: <runs_dir>/<sweep name>."),
    output: Path = typer.Option(..., "--output", "-o", help="The learning-curve PNG; final returns go "
                                "next to it as <name>_final.png."),
    all_specs: bool = typer.Option(False, "--all-specs", help="Also the runs of earlier specs of this folder, "
                                   "each experiment a group of its own."),
) -> None:
    """Learning curves (mean over seeds, 95% CI band) and final returns per variant x grid point."""
    from ..results.experiments import plan_rows
    from ..results.rows import collect
    from ..sweepdir.files import SweepDir
    from .plot import plot_sweep

    rows, left_out = plan_rows(SweepDir(sweep_dir), collect(sweep_dir), all_specs)
    if left_out:
        print(f"note: {left_out}", file=sys.stderr)
    if not rows:
        raise InputError(f"{sweep_dir}: no run folders here (is it <runs_dir>/<sweep name>?)")
    if output.suffix.lower() != ".png":
        raise InputError(f"-o {output}: the output must be a .png file")
    written = plot_sweep(sweep_dir, rows, output)
    from ..search import ranking as searchresults

    folder = SweepDir(sweep_dir)
    if (search := searchresults.searched(folder)) is not None:
        from ..search.plots import plot_pareto, plot_search

        written += plot_search(folder, search, output)
        pareto = output.with_name(f"{output.stem}_pareto.png")
        if search.multi and plot_pareto(searchresults.ranked(folder, search), search, pareto):
            written.append(pareto)
    for path in written:
        print(f"wrote {path}")


@app.command()
def bench(
    env: str = typer.Option("Ant-v5", "--env", help="The Gymnasium env id (or module:Class) to train."),
    xml: Path | None = typer.Option(None, "--xml", help="The model to train on (default: the env's own)."),
    steps: int = typer.Option(32_768, "--steps", min=1, help="Environment steps per run."),
    max_workers: int | None = typer.Option(None, "--max-workers", min=1,
                                              help="Largest concurrent batch (default: 2 x usable cores)."),
    n_steps: int | None = typer.Option(None, "--n-steps", min=2, help="PPO n_steps (default: SB3's 2048)."),
    scale_runs: int = typer.Option(10_000, "--scale-runs", min=0,
                                   help="Runs in the generated plan and folder for the dry-run and status "
                                   "figures (0: skip them)."),
    overhead: str = typer.Option("ppo,sac", "--overhead", help="Algorithms trained through the worker against "
                                 "plain stable-baselines3, CPU time alternated (e.g. ppo,sac,td3; all; none)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object on stdout, for scripts."),
    markdown: Path | None = typer.Option(None, "--markdown", help="Also write the Markdown table to this "
                                            "file (as pasted into BENCHMARKS.md)."),
    save: bool = typer.Option(True, "--save/--no-save", help="Keep the recommended --workers for this machine "
                              "as `sweep run`'s default."),
    stats: bool = typer.Option(False, "--stats", help="Instead: the verdicts' error rates, power and seeds spent "
                               "on simulated sweeps, fixed against adaptive seeds (docs/statistics.md)."),
    sweeps: int = typer.Option(1000, "--sweeps", min=100, help="With --stats: simulated sweeps per design."),
    effect: float = typer.Option(2.0, "--effect", min=0.1, help="With --stats: the better group's shift, in "
                                 "units of the returns' spread."),
    resample: Path | None = typer.Option(None, "--from", help="With --stats: also simulate sweeps whose returns "
                                         "are resampled from this finished sweep folder's final returns."),
) -> None:
    """Measure throughput through mjsweep (N = 1, 2, 4, ...) against a naive Pool; recommend --workers."""
    import json

    if stats:
        _bench_stats(sweeps, effect, resample, as_json, markdown)
        return

    from ..bench import BenchConfig, run_bench
    from ..bench.table import render as render_bench

    if xml is not None and not xml.is_file():
        raise InputError(f"--xml {xml}: no such file")
    if markdown is not None and not markdown.parent.is_dir():
        raise InputError(f"--markdown {markdown}: no such folder {markdown.parent}")
    cores = usable_cores()
    config = BenchConfig(env=env, xml=xml.resolve() if xml else None, steps=steps,
                         max_workers=max_workers or 2 * cores, ppo={"n_steps": n_steps} if n_steps else {},
                         cores=cores, scale_runs=scale_runs, overhead=_overhead_algos(overhead))
    try:
        report = run_bench(config, on_step=lambda line: print(f"bench: {line}", file=sys.stderr, flush=True))
    except ValueError as exc:
        raise InputError(str(exc)) from None
    table = render_bench(report)
    sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n" if as_json else table)
    if markdown:
        markdown.write_text(table, encoding="utf-8")
    if save and not report.failed:
        _keep_recommendation(report, cores, env)


def _bench_stats(sweeps: int, effect: float, resample: Path | None, as_json: bool, markdown: Path | None) -> None:
    """`sweep bench --stats`: bench/decisions.py's simulations, as a table or JSON."""
    import json

    from ..bench import decisions
    from ..results.rows import collect

    pool = None
    if resample is not None:
        pool = tuple(r.final_return for r in collect(resample) if r.final_return is not None)
        if len(pool) < 2:
            raise InputError(f"--from {resample}: fewer than 2 runs with a final return to resample")
    config = decisions.StatsConfig(effect=effect, sweeps=sweeps, pool=pool)
    results = decisions.run_stats(config, lambda line: print(f"bench: {line}", file=sys.stderr, flush=True))
    table = decisions.render(results, config)
    sys.stdout.write(json.dumps([r.to_dict() for r in results], indent=2) + "\n" if as_json else table)
    if markdown:
        markdown.write_text(table, encoding="utf-8")


def _overhead_algos(text: str) -> tuple[str, ...]:
    """`--overhead ppo,sac` -> the algorithms; all: every one installed; none: no comparison."""
    import importlib.util

    from ..spec.algos import ALGO_NAMES, ALGOS

    if text == "none":
        return ()
    if text == "all":
        return tuple(a for a in ALGO_NAMES if importlib.util.find_spec(ALGOS[a].package) is not None)
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    for name in names:
        if name not in ALGO_NAMES:
            raise InputError(f"--overhead {name!r}: choose among {', '.join(ALGO_NAMES)}, all or none")
        if importlib.util.find_spec(ALGOS[name].package) is None:
            raise InputError(f"--overhead {name}: needs {ALGOS[name].package} (pip install \"mjsweep[contrib]\")")
    return names


def _keep_recommendation(report, cores: int, env: str) -> None:
    """The bench's best N becomes `sweep run`'s default here; said on stderr, like the bench's progress."""
    from ..bench import recommend

    best = report.recommended()
    try:
        path = recommend.save(best.n, cores, env, best.aggregate)
    except OSError as exc:  # the figures are printed already; only the default is not kept
        print(f"bench: warning: could not keep the recommendation for `sweep run`: {exc}", file=sys.stderr)
        return
    print(f"bench: `sweep run` on this machine now defaults to --workers {best.n} ({path})", file=sys.stderr)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
