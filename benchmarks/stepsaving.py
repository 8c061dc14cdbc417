"""The step-saving benchmark (BENCHMARKS.md, "Step savings"): PBT against a random search and a grid of the
same runs x env steps, and warm against cold design trials, every sweep through the Python API into one
folder, the table computed from those folders alone.

    python -m benchmarks.stepsaving --out DIR --budget {full,tiny} --markdown FILE   (from a checkout's root)

A rerun into the same folder skips the runs that succeeded (mjsweep.run's rule) and finishes the others.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from mjsweep.errors import InputError
from mjsweep.sweepdir.files import SweepDir, write_text_atomic

from . import savingspecs as specs
from .savingfigures import design_values, read_figures
from .savingtable import render

XML_MODELS = Path(__file__).resolve().parents[1] / "xml_models"
"""The tiny budget's robot: xml_models/ beside this folder in the checkout."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m benchmarks.stepsaving", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the folder every sweep of the benchmark goes in")
    parser.add_argument("--budget", choices=sorted(specs.BUDGETS), required=True,
                        help="tiny: the smoke walker in about a minute; full: Hopper-v5, well under an hour on 2 cores")
    parser.add_argument("--markdown", type=Path, required=True, help="where the table is written")
    return parser


def robot_xml(budget: specs.Budget) -> Path:
    if not budget.robot:
        from mjsweep.bench import env_default_xml

        return env_default_xml(budget.env)
    xml = XML_MODELS / budget.robot
    if not xml.is_file():
        raise InputError(f"{xml}: no such file (the {budget.name} budget reads the checkout's xml_models/)")
    return xml


def estimate_line(budget: specs.Budget, fps: float, workers: int) -> str:
    """The benchmark's wall time, at most: every env step (evaluations' at their longest) at the probe's
    training speed, which an evaluation's forward passes alone beat."""
    seconds = (budget.training_steps + budget.evaluation_steps) / (fps * workers)
    return (f"estimate: at most {seconds / 60:.1f} min for {budget.training_steps} training env steps on {workers} "
            f"workers (a run trains at {fps:.0f} env steps/s here)")


def run_bench(out: Path, budget: specs.Budget, say: Callable[[str], None] = print) -> str:
    """Every sweep of the benchmark into out, then the Markdown table from those folders."""
    import mjsweep

    xml = robot_xml(budget)
    workers = len(os.sched_getaffinity(0))

    def sweep(spec: dict[str, Any]) -> None:
        say(f"{spec['name']}: running into {out / spec['name']}")
        try:
            mjsweep.run(spec, workers=workers)
        except mjsweep.SweepFailed as failed:
            say(f"{spec['name']}: {failed}; the figures leave out its failed runs")

    sweep(specs.probe_spec(budget, xml, out))
    probe = mjsweep.load(out / specs.PROBE).runs
    fps = next((run.fps for run in probe if run.fps), None)
    if fps is None:
        raise InputError(f"{out / specs.PROBE}: the speed probe did not finish; see its run's log.txt")
    say(estimate_line(budget, fps, workers))
    for build in (specs.pbt_spec, specs.random_spec, specs.grid_spec, specs.design_warm_spec):
        sweep(build(budget, xml, out))
    designs = design_values(SweepDir(out / specs.DESIGN_WARM))
    sweep(specs.design_cold_spec(budget, xml, out, designs))
    return render(read_figures(out), budget)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.out.exists() and not args.out.is_dir():
        print(f"error: --out {args.out}: not a folder", file=sys.stderr)
        return 2
    if args.markdown.is_dir():
        print(f"error: --markdown {args.markdown}: a folder, not a file", file=sys.stderr)
        return 2
    try:
        table = run_bench(args.out.resolve(), specs.BUDGETS[args.budget])
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    write_text_atomic(args.markdown, table)
    print(table, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
