"""The `sweep` command line. Each command parses, calls one library function and renders its result.

Exit codes: 0 success, 1 some run failed, 2 invalid input (nothing started, nothing written),
130 interrupted.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Optional

import typer

from . import render

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Launch sweeps of single-threaded PPO trainings over MuJoCo robot variants.")

EXIT_INVALID = 2


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


def _invalid(message: str) -> typer.Exit:
    render.error(message)
    return typer.Exit(EXIT_INVALID)


@app.command()
def run(
    spec_file: Path = typer.Argument(..., help="The sweep spec (YAML)."),
    workers: Optional[int] = typer.Option(None, "--workers", "-w", min=1,
                                          help="Runs at once [default: usable CPU cores]."),
    runs_dir: Optional[Path] = typer.Option(None, "--runs-dir", help="Overrides the spec's runs_dir."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and start nothing."),
    retries: int = typer.Option(1, "--retries", min=0,
                                help="Extra attempts for a run killed by a signal or a timeout."),
    timeout: Optional[str] = typer.Option(None, "--timeout", help="Per-run time limit, e.g. 90m, 2h."),
    grace: float = typer.Option(10.0, "--grace", min=0.0,
                                help="Seconds between SIGINT and SIGKILL when stopping runs."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the end summary."),
) -> None:
    """Train every variant x grid point x seed, each as its own single-threaded process."""
    from .launchers.local import LocalLauncher
    from .scheduler import SchedulerOptions
    from .spec import SpecError
    from .sweep import SweepLockedError, decide, execute, prepare

    timeout_s = parse_duration(timeout) if timeout else None
    out = render.make_console()
    try:
        plan = prepare(spec_file, runs_dir)
    except SpecError as exc:
        raise _invalid(str(exc)) from None
    if dry_run:
        render.plan_table(out, plan, decide(plan))
        return
    options = SchedulerOptions(max_workers=workers or usable_cores(), retries=retries, timeout_s=timeout_s,
                               grace_s=grace)
    progress = render.PlainProgress(out, quiet=quiet)
    launcher = LocalLauncher()
    try:
        outcome = execute(plan, launcher, options, on_event=progress.event, on_planned=progress.planned)
    except SweepLockedError as exc:
        raise _invalid(str(exc)) from None
    finally:
        launcher.close()
    render.outcome_summary(out, plan, outcome)
    raise typer.Exit(outcome.exit_code)


@app.command()
def validate(
    spec_file: Path = typer.Argument(..., help="The sweep spec (YAML)."),
    runs_dir: Optional[Path] = typer.Option(None, "--runs-dir", help="Overrides the spec's runs_dir."),
) -> None:
    """Check the spec, compile every XML and build its env; print one row per variant."""
    from .spec import SpecError
    from .sweep import prepare

    try:
        plan = prepare(spec_file, runs_dir)
    except SpecError as exc:
        raise _invalid(str(exc)) from None
    render.variant_table(render.make_console(), plan)


@app.command()
def report(
    sweep_dir: Path = typer.Argument(..., help="A sweep folder: <runs_dir>/<sweep name>."),
) -> None:
    """Aggregate final evaluation returns over seeds; also writes report.csv into the sweep folder."""
    from .report import aggregate, to_csv
    from .results import collect
    from .rundir import SweepDir, write_text_atomic

    folder = SweepDir(sweep_dir)
    rows = collect(folder)
    if not rows:
        raise _invalid(f"{sweep_dir}: no run folders here (is it <runs_dir>/<sweep name>?)")
    groups = aggregate(rows)
    write_text_atomic(folder.report_csv, to_csv(groups))
    render.report_table(render.make_console(), groups, rows)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
