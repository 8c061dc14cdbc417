"""Everything the CLI prints: tables, progress lines and summaries (rich; NO_COLOR is respected)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console, ConsoleOptions
from rich.segment import Segment
from rich.table import Table

from ..api.planning import disk_needs
from ..naming import counted
from ..spec.algos import label_of

if TYPE_CHECKING:
    from ..api.planning import Reevaluation
    from ..crosseval.pairs import Cell
    from ..engine.diskspace import Room
    from ..engine.scheduler import SweepOutcome
    from ..engine.sweep import SweepPlan
    from ..plan.cost import Cost
    from ..plan.disk import DiskEstimate
    from ..plan.planned import PlannedRun
    from ..results.report import GroupRow
    from ..results.rows import ResultRow
    from ..spec.sweepspec import SweepSpec


def make_console(stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    # Off a terminal (CI logs, files), do not wrap tables at 80 columns. No markup: names, grid values and
    # causes come from users, and Rich would take "ant[long]"'s "[long]" for a style and drop it.
    return Console(stderr=stderr, width=None if stream.isatty() else 200, highlight=False, markup=False)


ERROR_WIDTH = 2000
"""An error line's most characters: the checks cut the values they show, and this bounds whatever else a
message carries (a file's text, a library's message) so that one bad input never prints megabytes."""


def error(message: str) -> None:
    """One line on stderr, never wrapped, so scripts and people can grep it."""
    if len(message) > ERROR_WIDTH:
        message = message[:ERROR_WIDTH - 20] + " ... (cut)" + message[-10:]
    print(f"error: {message}", file=sys.stderr, flush=True)


def zoo_hyperparameters(spec: SweepSpec) -> None:
    """For each `<algo>: {zoo: true}`: the hyperparameters its runs take, RL Zoo's with the spec's keys over
    them."""
    for algo, entry in spec.zoo_entries.items():
        print(f"hyperparameters: RL Zoo's {label_of(algo)} for {entry}, with the spec's keys over them:")
        normalize = spec.normalize_of(algo)
        resolved = {"n_envs": spec.n_envs_of(algo), "total_timesteps": spec.total_timesteps_of(algo),
                    "normalize": normalize if isinstance(normalize, bool) else normalize.model_dump(),
                    **spec.hyperparameters(algo)}
        for key, value in resolved.items():
            print(f"  {key}: {value}")


def warn_spec(spec: SweepSpec) -> None:
    """The spec's warnings (values that work but are likely unintended), one line each on stderr."""
    for warning in spec.warnings:
        print(f"warning: {warning}", file=sys.stderr, flush=True)


def warn_reach(plan: SweepPlan) -> None:
    """A fixed seed count or an adaptive max that cannot separate any pair of the plan's groups at the report's
    level: one line on stderr that names the seeds that could (results/reach.py)."""
    from ..kinds import kind_of
    from ..results import reach

    if (line := reach.warning(kind_of(plan.spec).reach(len({r.group for r in plan.runs})))) is not None:
        print(f"warning: {line}", file=sys.stderr, flush=True)


def warn_missing_tensorboard(spec: SweepSpec) -> None:
    """tensorboard: true is a wish, not a need: without the package the runs train and log as usual."""
    import importlib.util

    if spec.tensorboard and importlib.util.find_spec("tensorboard") is None:
        print("warning: the spec sets tensorboard: true, but the tensorboard package is not installed here "
              "(pip install tensorboard); runs train without TensorBoard logs", file=sys.stderr, flush=True)


def _grid_text(grid: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in grid.items()) or "-"


PLAIN_ROWS = 500
"""Above this many rows a table is printed as plain aligned text: rich lays out about 1,000 rows a second."""


def plain_table(columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """Columns padded to their widest cell, two spaces apart: fast for any number of rows."""
    widths = [max([len(col), *(len(row[i]) for row in rows)]) for i, col in enumerate(columns)]
    lines = ("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in [columns, *rows])
    return "\n".join(lines)


class PlainLines:
    """Text printed as it is, one segment per line: no markup, wrapping or styles to lay out, so 10,000
    rows print in milliseconds (as a rich Text they take about half a second). Lines wider than the
    console are cropped, as a no_wrap Text's are."""

    def __init__(self, text: str):
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions):
        for line in self.text.splitlines():
            yield Segment(line)
            yield Segment.line()


def plan_table(out: Console, plan: SweepPlan, planned: list[PlannedRun]) -> None:
    title = f"sweep {plan.spec.name}: {counted(len(planned), 'run')} -> {plan.sweep_dir.path}"
    columns = ("run id", "variant", "grid", "seed", "action")
    rows: list[tuple[str, ...]] = [
        (item.run.run_id, item.run.variant, _grid_text(item.run.grid), str(item.run.seed),
         item.action.value + (f" ({item.note})" if item.note else "")) for item in planned]
    if len(rows) > PLAIN_ROWS:
        out.print(PlainLines(f"{title}\n{plain_table(columns, rows)}"))
    else:
        table = Table(title=title)
        for col in columns:
            table.add_column(col, overflow="fold")
        for row in rows:
            table.add_row(*row)
        out.print(table)
    counts = {a: sum(1 for p in planned if p.action.value == a)
              for a in ("start", "resume", "extend", "skip", "evaluate")}
    extend = f"{counts['extend']} to extend, " if counts["extend"] else ""
    again = f"{counts['evaluate']} to evaluate again, " if counts["evaluate"] else ""
    out.print(f"dry run: {counts['start']} to start, {counts['resume']} to resume, {extend}{again}"
              f"{counts['skip']} to skip; nothing started")


def reevaluation_line(again: Reevaluation) -> str:
    """What evaluating finished runs again costs: 'evaluate again: 4 finished runs (their eval settings changed:
    episodes, deterministic or physics), 20 episodes from their final models, no training: about 3 s of
    evaluation'."""
    time = f"about {_duration(again.seconds)} of evaluation" if again.seconds is not None else \
        "time unknown (an earlier evaluation did not record it)"
    return (f"evaluate again: {counted(again.runs, 'finished run')} (their eval settings changed: episodes, "
            f"deterministic or physics), {counted(again.episodes, 'episode')} from their final models, no training: "
            f"{time}; their earlier evaluations stay in result.json")


def cost_lines(cost: Cost, *, skipped: int = 0, note: str = "", at_max: Cost | None = None, at_most: bool = False,
               where: str | None = "on this machine", here: str = "") -> list[str]:
    """What the runs will cost, in one or two lines: runs and env steps, the expected wall time and the speed
    it comes from, or why it is unknown. note: said after the run count; at_max: the same sweep at its
    largest (adaptive seeds: `cost` at min seeds, `at_max` at max); at_most: the figures are a ceiling (a
    search, whose note says why); where: None when the runs go to a cluster and no --workers says how many
    run at once; here: this machine's host name, to say when the measurements come from others."""
    pair = at_max is not None and at_max is not cost
    hi = at_max if pair and at_max is not None else cost
    ceiling = "at most " if at_most else ""
    runs = f"{cost.runs} to {hi.runs} runs (min to max seeds)" if pair else \
        f"{ceiling}{cost.runs} run{'' if cost.runs == 1 else 's'}"
    notes = [note] if note else []
    notes += [f"{skipped} succeeded already, not counted"] if skipped else []
    if notes:
        runs += f" ({'; '.join(notes)})"
    steps = f"{_steps(cost.env_steps)} to {_steps(hi.env_steps)}" if pair else _steps(cost.env_steps)
    head = f"cost: {runs}, {steps} env steps"
    if not cost.runs and not hi.runs:
        return [f"{head}; nothing left to run"]
    if where is None:
        return [f"{head}; wall time depends on the cluster's slots: give --workers N for an estimate at N runs "
                "at once"]
    if cost.wall_s is None or hi.wall_s is None:
        return [f"{head}; wall time unknown: {_no_speed(hi if hi.wall_s is None else cost)}"]
    wall = (f"about {_duration(cost.wall_s)} at min seeds, {_duration(hi.wall_s)} at max seeds" if pair
            else f"{ceiling}about {_duration(cost.wall_s)}")
    plural = "run" if cost.workers == 1 else "runs"
    return [f"{head}; {wall} {where} at {cost.workers} {plural} at once",
            f"  speed: {_speed_text(hi, here)}"]


def disk_line(estimate: DiskEstimate, room: Room) -> str:
    """The dry run's and `sweep validate`'s line about disk space."""
    from ..plan.disk import human_bytes

    if not estimate.runs:
        return f"disk: nothing left to run; {human_bytes(room.free)} free on {room.device}"
    return f"disk: {disk_needs(estimate)}; {human_bytes(room.free)} free on {room.device}"


def _speed_text(cost: Cost, here: str) -> str:
    from ..plan.cost import Source

    earlier, bench = cost.measurements.earlier, cost.measurements.bench
    parts = []
    for source, count in cost.sources.items():
        if source is Source.OWN:
            text = "earlier runs of these variants in this sweep folder"
        elif source is Source.OTHERS:
            text = "earlier runs of its other variants (same algorithm and n_envs)"
        else:
            assert bench is not None
            text = (f"`sweep bench` of {bench.env}/{label_of(bench.algo)} on {bench.measured_at[:10]} at "
                    f"{bench.at_once} runs at once (start-up and evaluation included)")
        if source is not Source.BENCH and earlier is not None:
            notes = [f"measured with up to {earlier.at_once} at once"] if earlier.at_once else []
            elsewhere = [h for h in earlier.hosts if h != here]
            if here and elsewhere:
                notes.append("on " + ", ".join(elsewhere[:3]) + (" and others" if len(elsewhere) > 3 else ""))
            text += f" ({', '.join(notes)})" if notes else ""
        parts.append(text + (f" for {count} run{'s' if count > 1 else ''}" if len(cost.sources) > 1 else ""))
    low, high = cost.fps_low or 0.0, cost.fps_high or 0.0
    fps = f"{low:,.0f}" if round(low) == round(high) else f"{low:,.0f} to {high:,.0f}"
    text = f"{fps} env steps/s per run"
    if cost.overhead_s >= 0.5:
        text += f" plus up to {_duration(cost.overhead_s, approx=False)} each for start-up, saving and evaluation"
    return f"{text}, from {'; '.join(parts)}; retries not counted"


def _no_speed(cost: Cost) -> str:
    """Why a cost has no wall time, and how to get one."""
    bench = cost.measurements.bench
    what = ", ".join(cost.unpriced[:3]) + (f" and {len(cost.unpriced) - 3} more" if len(cost.unpriced) > 3 else "")
    text = f"no run of {what if cost.sources else 'these variants'} finished here"
    benchable = [env for env, algo, n_envs in cost.unpriced_kinds if (algo, n_envs) == ("ppo", 1)]
    if bench is None:
        text += " and no `sweep bench` result"
    else:
        kinds = ", ".join(f"{env}/{label_of(algo)}" + (f" with {n} envs" if n > 1 else "")
                          for env, algo, n in cost.unpriced_kinds)
        text += f", and `sweep bench` measured {bench.env}/{label_of(bench.algo)}, not {kinds}"
    if benchable:
        env = benchable[0]
        # The bench trains on an env's own XML, and an env of mjsweep's or a module:Class has none.
        xml = " --xml XML` (a variant's model)" if ":" in env or env.startswith("mjsweep/") else "`"
        return text + f"; run `sweep bench --env {env}{xml} for an estimate"
    return text + "; `sweep bench` measures PPO with one env: the speed comes once a run of each has finished here"


def _steps(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:,.1f}M"
    if n >= 10_000:
        return f"{n / 1e3:,.0f}k"
    return f"{n:,}"


def _duration(seconds: float, approx: bool = True) -> str:
    """'45 s', '12 min', '2 h 10 min': rounded as an estimate should be."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    if approx and hours >= 10:
        return f"{hours} h"
    return f"{hours} h {rest} min" if rest else f"{hours} h"


def sbatch_preview(out: Console, plan: SweepPlan, planned: list[PlannedRun], workers: int | None) -> None:
    """The job array `sweep run --backend slurm` would submit: the sbatch call and the script."""
    import shlex

    from ..launchers.slurm import build_submission
    from ..plan.planned import Action

    runs = [p.run for p in planned if p.action is not Action.SKIP]
    if not runs:
        out.print("slurm: nothing to submit")
        return
    sub = build_submission(runs, plan.sweep_dir, plan.spec.slurm, workers)
    out.print(f"slurm: would submit {len(runs)} array tasks with: {shlex.join(sub.command)}",
              markup=False, highlight=False, soft_wrap=True)
    out.print(sub.script, markup=False, highlight=False, soft_wrap=True, end="")


def variant_table(out: Console, plan: SweepPlan) -> None:
    search = plan.spec.search
    size = f"a search of {search.trials} trials per study" if search else counted(len(plan.runs), "run")
    if (adaptive := plan.spec.adaptive_seeds) is not None:
        groups = len(plan.runs) // adaptive.max
        size = f"{groups * adaptive.min} to {groups * adaptive.max} runs (adaptive seeds)"
    table = Table(title=f"sweep {plan.spec.name}: env {plan.spec.env}, {size}")
    for col in ("variant", "xml", "bodies", "joints", "actuators", "mass", "obs", "act", "verdict"):
        table.add_column(col, overflow="fold")
    for check in plan.checks:
        v, s = check.variant, check.stats
        xml = f"{v.xml} (edited)" if v.xml_text is not None else str(v.xml)
        counts = [str(s.bodies), str(s.joints), str(s.actuators), f"{s.total_mass:.2f}"] if s else ["-"] * 4
        verdict = f"BROKEN: {check.problem}" if check.problem else _ok_verdict(check.probe)
        table.add_row(v.name, xml, *counts, _shape(check.probe.obs_shape), _shape(check.probe.act_shape), verdict)
    out.print(table)


def _ok_verdict(probe) -> str:
    """'ok', saying where episodes start when the env says (a keyframe or qpos0), its notes and any warnings."""
    notes = [f"start: {probe.start}"] if probe.start else []
    notes += list(probe.notes)
    notes += [f"warning: {w}" for w in probe.warnings]
    return f"ok ({'; '.join(notes)})" if notes else "ok"


def _shape(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) or "-"


REPORT_COLUMNS = ("variant", "grid", "runs ok", "failed", "mean", "std", "IQM", "95% CI", "IQM 95% CI",
                  "mean fps", "eval s", "mass", "bodies/joints/act")
DROPPED_FIRST = ("bodies/joints/act", "mass", "eval s", "mean fps", "IQM 95% CI", "std", "failed", "IQM")
"""The report table's columns a narrow terminal leaves out, first to last, each whole; variant, grid, runs ok,
mean and 95% CI always stay (docs/observability.md)."""


def report_table(out: Console, groups: list[GroupRow], rows: list[ResultRow], warnings: list[str],
                 failed: Sequence[tuple[str, str]] = ()) -> None:
    cells: dict[str, list[str]] = {col: [] for col in REPORT_COLUMNS}
    for g in groups:
        ci = f"[{fixed(g.ci_low)}, {fixed(g.ci_high)}]" if g.ci_low is not None else "-"
        iqm_ci = f"[{fixed(g.iqm_ci_low)}, {fixed(g.iqm_ci_high)}]" if g.iqm_ci_low is not None else "-"
        m = g.model
        shown = (g.variant, _grid_text(g.grid), f"{g.succeeded}/{g.runs}", str(g.failed), fixed(g.mean_return),
               fixed(g.std_return), fixed(g.iqm_return), ci, iqm_ci, fixed(g.mean_fps, 0), fixed(g.mean_eval_s, 1),
               fixed(m.total_mass if m else None), f"{m.bodies}/{m.joints}/{m.actuators}" if m else "-")
        for col, cell in zip(REPORT_COLUMNS, shown, strict=True):
            cells[col].append(cell)
    kept = fitted_columns(cells, out.width) if groups else list(REPORT_COLUMNS)
    if groups:  # none where every run is a population's segment
        table = Table(title="final eval return over seeds, best first")
        for col in kept:
            # A cell is never split: only the grid's wraps, between its key=value pairs.
            table.add_column(col, no_wrap=col != "grid", overflow="fold")
        for i in range(len(groups)):
            table.add_row(*(cells[col][i] for col in kept))
        out.print(table)
    if left_out := [col for col in REPORT_COLUMNS if col not in kept]:
        out.print(f"left out to fit {out.width} columns: {', '.join(left_out)} (report.csv and --format md have "
                  "every column)", soft_wrap=True, markup=False, highlight=False)
    for run_id, cause in failed:
        out.print(f"failed: {run_id}: {cause}", soft_wrap=True, markup=False, highlight=False)
    for row in rows:
        for problem in row.problems:
            out.print(f"warning: {problem}", soft_wrap=True)
    for warning in warnings:
        out.print(f"warning: {warning}", soft_wrap=True)


def fitted_columns(cells: dict[str, list[str]], width: int) -> list[str]:
    """The report's columns that fit `width` with every cell whole (the grid's wrapped between its pairs),
    leaving out DROPPED_FIRST's columns in order until they do."""
    def need(col: str) -> int:
        texts = [col, *cells[col]]
        widest = max(len(word) for t in texts for word in t.split()) if col == "grid" else max(map(len, texts))
        return widest + 3  # a space either side and a border

    kept = list(REPORT_COLUMNS)
    for col in DROPPED_FIRST:
        if sum(map(need, kept)) + 1 <= width:
            break
        kept.remove(col)
    return kept


def cross_table(out: Console, cells: list[Cell]) -> None:
    table = Table(title="cross evaluation: mean return over seeds")
    for col in ("trained on", "evaluated on", "seeds", "mean", "95% CI", "note"):
        table.add_column(col, overflow="fold")
    for c in cells:
        ci = f"[{fixed(c.ci_low)}, {fixed(c.ci_high)}]" if c.ci_low is not None else "-"
        table.add_row(c.train, c.test, str(c.seeds), fixed(c.mean), ci, c.skipped or "")
    out.print(table)


def fixed(value: float | None, digits: int = 2) -> str:
    """A table cell: the number with `digits` decimals, or "-" when there is none."""
    return "-" if value is None else f"{value:.{digits}f}"


def outcome_summary(out: Console, plan: SweepPlan, outcome: SweepOutcome) -> None:
    """The answer (a grid's leader and whether it is separated) where the sweep ran to its end, then the counts
    and each failed run."""
    from ..kinds import kind_of

    if not outcome.stopped and kind_of(plan.spec).plans_runs:
        from ..errors import InputError
        from ..results.answer import of_report
        from ..results.sweepreport import read

        try:
            line = of_report(read(plan.sweep_dir))
        except InputError:  # no run folder to read: nothing to answer
            line = None
        if line is not None:
            out.print(line, soft_wrap=True, markup=False, highlight=False)
    out.print(f"sweep {plan.spec.name}: {len(outcome.succeeded)} succeeded, {len(outcome.failed)} failed, "
              f"{len(outcome.interrupted)} interrupted"
              + (f", {len(outcome.pending)} pending" if outcome.pending else "")
              + (f", {len(outcome.pruned)} pruned" if outcome.pruned else "")
              + (", stopped before its last runs were made" if outcome.cut_short else "")
              + f" -> {plan.sweep_dir.path}")
    for run_id in outcome.failed:
        cause = _cause_of(plan.sweep_dir.run(run_id))
        out.print(f"  failed: {run_id}{f': {cause}' if cause else ''} (see {plan.sweep_dir.run(run_id).log})",
                  soft_wrap=True, markup=False, highlight=False)


def _cause_of(run_dir) -> str | None:
    """status.json's cause for the summary; None where it could not be read (or written: a full disk)."""
    from ..sweepdir.files import read_or_none

    status = read_or_none(run_dir.read_status)
    return status.cause if status else None
