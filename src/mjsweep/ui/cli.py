"""The `sweep` command line. Each command parses its options, calls the library and renders the result;
`sweep report` also writes report.csv and report.md.

Exit codes: 0 success, 1 some run failed (or a filesystem error once runs had started), 2 invalid input or a
sweep folder that cannot be written or locked (errors.InputError: nothing started), 130 interrupted. A command
raises InputError and usage.Commands prints it as the one `error:` line; an OSError that reaches it is one line too.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

import typer

from ..engine.machine import usable_cores
from ..errors import InputError
from ..naming import parse_duration, parse_interval
from . import console_tables as tables
from .usage import Commands


def literal(text: str) -> str:
    """Help text shown as written: typer reads help as Rich markup, where "[default: x]" is a style tag that
    vanishes (leaving "Runs at once .")."""
    return text.replace("[", "\\[")


MAX_RUNS_HELP = literal("The most runs the spec may plan [default: the spec's max_runs, 10,000].")
TRUST_HELP = ("Unpickle this folder's files though another user owns it or can write it (they can run code: "
              "only a folder whose writers you trust); repeatable. For good: MJSWEEP_TRUST or ~/.config/mjsweep/trust "
              "(docs/trust.md).")
PICTURES_HELP = "Render every variant in its start pose into DIR: a PNG each and contact_sheet.png."
# The options of fixed choices, which typer checks (a bad one is usage.py's one line).
Backend = Literal["local", "ray", "slurm"]
StartOrder = Literal["breadth", "variant"]
StartWith = Literal["auto", "template", "exec"]
ReportFormat = Literal["table", "csv", "md", "json", "html"]
Rank = Literal["final", "best"]


app = typer.Typer(cls=Commands, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Launch sweeps of single-threaded Stable-Baselines3 trainings over MuJoCo robots.")


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        print(f"mjsweep {__version__}")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                          help="Print mjsweep's version and exit.")) -> None:
    """Launch sweeps of single-threaded Stable-Baselines3 trainings over MuJoCo robot variants."""


@app.command()
def run(
    spec_file: Path = typer.Argument(..., help="The sweep spec (YAML)."),
    workers: int | None = typer.Option(None, "--workers", "-w", min=1,
                                          help=literal("Runs at once [default: what sweep bench measured best "
                                                       "here, else the usable CPU cores].")),
    runs_dir: Path | None = typer.Option(None, "--runs-dir", help="Overrides the spec's runs_dir."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and start nothing."),
    retries: int = typer.Option(1, "--retries", min=0,
                                help="Extra attempts for a run killed by a signal, lost or timed out."),
    timeout: float | None = typer.Option(None, "--timeout", parser=parse_duration, metavar="DURATION",
                                         help="Per-run time limit, e.g. 90m, 2h."),
    grace: float = typer.Option(10.0, "--grace", min=0.0,
                                help="Seconds between SIGINT and SIGKILL when stopping runs."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the end summary."),
    backend: Backend = typer.Option("local", "--backend", help="Where runs execute: local, ray or slurm "
                                "(docs/cluster.md)."),
    address: str | None = typer.Option(None, "--address", help=literal("Ray cluster address, e.g. "
                                          "10.0.0.1:6379 [default: RAY_ADDRESS, else a local Ray].")),
    gpus: str | None = typer.Option(None, "--gpus",
                                       help=literal("GPU ids for device: cuda, e.g. 0,1 [default: all found].")),
    pictures: Path | None = typer.Option(None, "--pictures", help=PICTURES_HELP),
    order: StartOrder = typer.Option("breadth", "--order", help="Start order: breadth (every variant and grid point "
                              "gets its first seed before any gets its second; the longest runs first within "
                              "that) or variant (the spec's order: variant, grid point, seed)."),
    start_with: StartWith = typer.Option("auto", "--start", help="How local runs begin: template (forked from a "
                                         "process that has imported torch once; CPU runs), exec (a fresh interpreter "
                                         "each) or auto (template on Linux)."),
    report_every: float | None = typer.Option("60s", "--report-every", envvar="MJSWEEP_REPORT_EVERY",
                                              parser=parse_interval, metavar="DURATION",
                                     help="Rewrite SWEEP_DIR/report.html while the sweep runs, at most this often "
                                     "and only after a run ended (e.g. 30s, 5m); 0 or off: never."),
    max_runs: int | None = typer.Option(None, "--max-runs", min=1, help=MAX_RUNS_HELP),
    trust: list[Path] | None = typer.Option(None, "--trust", metavar="PATH", help=TRUST_HELP),
) -> None:
    """Train every variant x grid point x seed, each as its own single-threaded process."""
    from ..launchers import early_template

    # Before anything else, so that its imports overlap all that follows. Should `sweep run` end
    # before the launcher adopts it, it ends too: it dies with this process.
    template = None if dry_run else early_template(backend, start_with)
    from ..api.options import Backend as Backends
    from ..api.options import Order, RunOptions, StartWith
    from ..engine.sweep import prepare
    from . import run_session, run_view

    options = RunOptions(backend=Backends(backend), address=address, gpus=gpus, workers=workers, retries=retries,
                         timeout_s=timeout, grace_s=grace, order=Order(order), start=StartWith(start_with),
                         report_every_s=report_every, max_runs=max_runs, trust=tuple(trust or ()))
    out = tables.make_console()
    plan = prepare(spec_file, runs_dir, max_runs=max_runs)
    tables.warn_spec(plan.spec)
    if dry_run:
        tables.warn_reach(plan)
    tables.warn_missing_tensorboard(plan.spec)
    if dry_run:  # it unpickles nothing and refuses nothing: it says what a run would refuse
        if pictures:
            run_view.render_pictures(plan, pictures)
        run_view.dry_run(out, plan, options.order, workers, backend)
        return
    outcome = run_session.execute(out, plan, options, quiet=quiet, pictures=pictures, template=template)
    tables.outcome_summary(out, plan, outcome)
    raise typer.Exit(outcome.exit_code)


@app.command()
def validate(
    spec_file: Path = typer.Argument(..., help="The sweep spec (YAML)."),
    runs_dir: Path | None = typer.Option(None, "--runs-dir", help="Overrides the spec's runs_dir."),
    pictures: Path | None = typer.Option(None, "--pictures", help=PICTURES_HELP),
    max_runs: int | None = typer.Option(None, "--max-runs", min=1, help=MAX_RUNS_HELP),
) -> None:
    """Check the spec, every variant (compiled, its env built and stepped) and the disk the runs need.

    One row per variant: it compiles, its env builds and takes random steps. Then the disk the runs will need at their
    peak against the free space."""
    from ..engine.profile import at_once
    from ..engine.sweep import BrokenVariantsError, prepare
    from ..kinds import kind_of
    from . import run_view

    try:
        plan = prepare(spec_file, runs_dir, max_runs=max_runs)
    except BrokenVariantsError as exc:
        tables.variant_table(tables.make_console(), exc.plan)
        raise
    tables.warn_spec(plan.spec)
    tables.warn_reach(plan)
    tables.warn_missing_tensorboard(plan.spec)
    tables.zoo_hyperparameters(plan.spec)
    out = tables.make_console()
    tables.variant_table(out, plan)
    if (check := kind_of(plan.spec).disk_check(plan, at_once(None, "local"))) is not None:
        run_view.show_disk(plan, check, out=out)
    if pictures:
        run_view.render_pictures(plan, pictures)


@app.command()
def report(
    sweep_dir: Path = typer.Argument(..., help="A sweep folder: <runs_dir>/<sweep name>."),
    fmt: ReportFormat = typer.Option("table", "--format", "-f", help="table | csv | md | json, on stdout; html: "
                            "a self-contained SWEEP_DIR/report.html (figures, pictures, videos inside)."),
    rank: Rank = typer.Option("final", "--rank", help="final: by the final evaluation's return; best: by each "
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
    from ..api import report_object as reportapi
    from ..sweepdir.files import SweepDir
    from . import report_view
    from .decision_figures import decide
    from .status import read_sweep

    folder = SweepDir(sweep_dir)
    folder.check_is_folder()
    view = read_sweep(folder.path)
    # The figures cost time (every pair's interval, every profile): drawn when asked for, and for
    # report.html, which draws figures anyway and is what a sweep's results are shared as.
    report = reportapi.build(folder, status_warnings=[str(w) for w in view.warnings], all_specs=all_specs,
                             rank=rank, compare=compare, names=names,
                             figures=decide if compare or fmt == "html" else None)
    report.write_files()
    report_view.show(report, fmt, view)


@app.command()
def video(
    sweep_dir: Path = typer.Argument(..., help="A sweep folder: <runs_dir>/<sweep name>."),
    variant: str | None = typer.Option(None, "--variant", help=literal("Only this variant [default: every one].")),
    seed: int | None = typer.Option(None, "--seed", help=literal("This seed [default: the seed with the "
                                       "median final return of each variant x grid point].")),
    best: bool = typer.Option(False, "--best", help="The best evaluation's model (best_model.zip) where a run "
                              "kept one."),
    seconds: float = typer.Option(10.0, "--seconds", min=0.1, help="Simulated seconds per video."),
    gif: bool = typer.Option(False, "--gif", help="A GIF beside each MP4."),
    output: Path | None = typer.Option(None, "--output", "-o", help=literal("Folder [default: SWEEP_DIR/videos].")),
    trust: list[Path] | None = typer.Option(None, "--trust", metavar="PATH", help=TRUST_HELP),
) -> None:
    """A video of each variant's trained policy (MP4, drawn on the CPU where there is no GPU)."""
    from ..api.report_object import writable_sweep
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
        written = render_videos(choices, folder.path, output or folder.videos, seconds, gif, trust=trust or [])
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
                                          help=literal("Evaluations at once [default: usable CPU cores].")),
    trust: list[Path] | None = typer.Option(None, "--trust", metavar="PATH", help=TRUST_HELP),
) -> None:
    """Evaluate trained policies again; with --cross, on the other variants too (results kept, resumable)."""
    from ..api.report_object import writable_sweep
    from ..crosseval.run import evaluate_cross
    from ..sweepdir.files import SweepDir

    if not cross:
        raise InputError("sweep evaluate: say which evaluation: --cross (every policy on every variant)")
    writable_sweep(SweepDir(sweep_dir), "sweep evaluate writes its cross/")
    outcome = evaluate_cross(SweepDir(sweep_dir), episodes, workers or usable_cores(),
                             say=lambda line: print(line, file=sys.stderr, flush=True), trust=trust or [])
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

    SweepDir(sweep_dir).check_is_folder()
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
    trust: list[Path] | None = typer.Option(None, "--trust", metavar="PATH", help=TRUST_HELP),
) -> None:
    """Train finished runs again from scratch and say, per run, whether they reproduce exactly.

    Compared: monitor.csv episode by episode, evaluations, final parameters. Exit 0 when all do, 1 otherwise."""
    from ..engine.verify import verify_sweep
    from ..sweepdir.files import SweepDir

    SweepDir(sweep_dir).check_is_folder()
    verdicts = verify_sweep(sweep_dir, list(run_ids or []), sample, scratch, lambda line: print(line, flush=True),
                            trust=trust or [])
    exact = sum(v.difference is None for v in verdicts)
    print(f"{exact} of {len(verdicts)} runs reproduced exactly")
    raise typer.Exit(0 if exact == len(verdicts) else 1)


@app.command()
def plot(
    sweep_dir: Path = typer.Argument(..., help="A sweep folder: <runs_dir>/<sweep name>."),
    output: Path = typer.Option(..., "--output", "-o", help="The learning-curve SVG; final returns go "
                                "next to it as <name>_final.svg."),
    all_specs: bool = typer.Option(False, "--all-specs", help="Also the runs of earlier specs of this folder, "
                                   "each experiment a group of its own."),
) -> None:
    """Learning curves (mean over seeds, 95% CI band) and final returns per variant x grid point."""
    from ..results.experiments import plan_rows
    from ..results.rows import collect
    from ..search.plots import plot_searched
    from ..sweepdir.files import SweepDir
    from .plot import plot_sweep

    rows, left_out = plan_rows(SweepDir(sweep_dir), collect(sweep_dir), all_specs)
    if left_out:
        print(f"note: {left_out}", file=sys.stderr)
    if not rows:
        raise InputError(f"{sweep_dir}: no run folders here (is it <runs_dir>/<sweep name>?)")
    if output.suffix.lower() != ".svg":
        raise InputError(f"-o {output}: the output must be a .svg file")
    for path in plot_sweep(sweep_dir, rows, output) + plot_searched(SweepDir(sweep_dir), output):
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
    from . import bench_view

    if stats:
        bench_view.stats(sweeps, effect, resample, as_json, markdown)
        return
    from ..bench import BenchConfig

    if xml is not None and not xml.is_file():
        raise InputError(f"--xml {xml}: no such file")
    if markdown is not None and not markdown.parent.is_dir():
        raise InputError(f"--markdown {markdown}: no such folder {markdown.parent}")
    cores = usable_cores()
    config = BenchConfig(env=env, xml=xml.resolve() if xml else None, steps=steps,
                         max_workers=max_workers or 2 * cores, ppo={"n_steps": n_steps} if n_steps else {},
                         cores=cores, scale_runs=scale_runs, overhead=bench_view.overhead_algos(overhead))
    bench_view.throughput(config, as_json, markdown, save)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
