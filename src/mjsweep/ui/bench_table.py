"""The bench's report as Markdown: one table of batches, the scale figures, the targets, a recommendation.

Plain Markdown, so the same text reads in a terminal and pastes into BENCHMARKS.md.
"""

from __future__ import annotations

from ..bench.figures import Batch, BenchReport
from .console_tables import fixed

COLUMNS = ("batch", "N", "wall s", "env-steps/s", "efficiency", "cores busy", "CPU s/run", "run fps", "rollout s",
           "train s", "spread s", "start-up s", "peak RSS MiB", "peak USS MiB", "torch threads", "launcher CPU")
LABELS = {"parallel": "GNU parallel"}


def render(report: BenchReport) -> str:
    cfg = report.config
    head = (f"sweep bench: {cfg.env} on {cfg.xml.name if cfg.xml else 'its own XML'}, {cfg.steps} steps per run, "
            f"PPO {cfg.ppo or 'defaults'}; {report.host}, {cfg.cores} usable cores ({report.cpu_model}), "
            f"load {report.load_before:.2f} before")
    lines = [head, "", _row(COLUMNS), _row(["---"] * len(COLUMNS))]
    contenders = [report.parallel] if report.parallel else []
    lines += [_row(_cells(report, b)) for b in [*report.mjsweep, *contenders, report.naive]]
    lines += ["", *_summary(report), "", *_targets(report)]
    return "\n".join(lines) + "\n"


def _row(cells) -> str:
    return "| " + " | ".join(cells) + " |"


def _cells(report: BenchReport, b: Batch) -> list[str]:
    name = LABELS.get(b.kind, b.kind) + (" (solo)" if b.kind == "mjsweep" and b.n == 1 else "")
    name += f" ({b.failed} failed)" if b.failed else ""
    cpu_per_run = b.workers_cpu_s / b.n if b.workers_cpu_s is not None else None
    return [name, str(b.n), f"{b.wall_s:.1f}", f"{b.aggregate:.0f}", f"{report.efficiency(b):.2f}",
            fixed(b.busy(report.config.cores), 2), fixed(cpu_per_run, 1), f"{b.run_fps:.0f}",
            fixed(b.rollout_s, 1), fixed(b.train_s, 1), fixed(b.spread_s, 1), fixed(b.startup_s, 2),
            fixed(b.peak_rss_mb, 0), fixed(b.peak_uss_mb, 0), fixed(b.torch_threads, 0),
            "-" if b.launcher_cpu is None else f"{100 * b.launcher_cpu:.2f}%"]


def _summary(report: BenchReport) -> list[str]:
    at, rec = report.at_cores(), report.recommended()
    lines = [
        f"- solo (one run, 1 torch thread): {report.solo.aggregate:.0f} env-steps/s",
        f"- mjsweep at N={at.n}: {at.aggregate:.0f} env-steps/s, {report.speedup_over_naive:.1f}x the naive "
        f"pool's {report.naive.aggregate:.0f} (N={report.naive.n}, {report.naive.torch_threads} torch threads each)",
    ]
    if report.parallel:
        p = report.parallel
        lines.append(f"- mjsweep at N={at.n}: {report.ratio_to_parallel or 0:.2f}x GNU parallel's {p.aggregate:.0f} "
                     f"env-steps/s (N={p.n}, a plain script, {p.torch_threads} torch thread each)")
        lines.append(f"- memory per run (largest peak RSS): mjsweep {fixed(at.peak_rss_mb, 0)} MiB, GNU parallel "
                     f"{fixed(p.peak_rss_mb, 0)} MiB")
    if at.peak_uss_mb is not None:
        lines.append(f"- what one more run adds (largest peak USS, the memory admission's measure): mjsweep "
                     f"{fixed(at.peak_uss_mb, 0)} MiB at N={at.n}")
    elif report.parallel_skipped:
        lines.append(f"- {report.parallel_skipped}")
    for launch in (report.launch, report.launch_template):
        if launch:
            lines.append(f"- `sweep run --start {launch.start_with}` to first run started: "
                         f"{launch.to_first_run_s:.2f} s; to its first env step: "
                         f"{fixed(launch.to_first_env_step_s, 2)} s "
                         f"(the worker's own start-up {fixed(launch.worker_startup_s, 2)} s; the next run's "
                         f"{fixed(launch.later_startup_s, 2)} s)")
    if (ratio := report.template_launch_ratio) is not None:
        lines.append(f"- a run's launch to first env step through the template: {ratio:.2f}x the exec's")
    if report.scale:
        s = report.scale
        lines.append(f"- {s.runs} runs: `sweep run --dry-run` {s.dry_run_s:.2f} s ({s.dry_run_cpu_s:.2f} s CPU); "
                     f"`sweep status` {s.status_s:.2f} s ({s.status_cpu_s:.2f} s CPU)")
    if report.checks and (share := report.check_share) is not None:
        c = report.checks
        lines.append(f"- non-finite checks: {c.step_us:.1f} us an env step (VecCheckNan) + {c.update_us:.0f} us an "
                     f"update of {c.steps_per_update} steps (the policy's parameters) = {100 * share:.2f}% of the "
                     "solo run's training step")
    for o in report.overhead:
        lines.append(f"- {o.algo} through the worker adds {100 * o.added:.2f}% to plain SB3's training, timed in "
                     f"place: {o.env_stack_us:.1f} us an env step (env stack) x {o.steps} steps + "
                     f"{1000 * o.recorder_s:.1f} ms in the recorder's hooks beyond plain SB3's, against "
                     f"{o.plain_s:.2f} s; whole trainings {o.ratio:.3f}x plain SB3's CPU time ({o.worker_s:.2f} s "
                     f"against {o.plain_s:.2f} s; median of {o.rounds} alternated pairs, spread {o.spread:.3f})")
    lines.append(f"- recommended: `sweep run --workers {rec.n}` ({rec.aggregate:.0f} env-steps/s; the smallest N "
                 "within 3% of the best aggregate measured)")
    if report.failed:
        lines.append(f"- WARNING: {report.failed} run(s) failed: the figures above are incomplete")
    return lines


def _targets(report: BenchReport) -> list[str]:
    at, mj = report.at_cores(), report.mjsweep
    launcher = max(b.launcher_cpu or 0 for b in mj)
    # Start-up is judged where each worker has a core: with more runs than cores they share them.
    startup = max(b.startup_s or 0 for b in mj if b.n <= report.config.cores)
    rss = max(b.peak_rss_mb or 0 for b in mj)
    checks = [
        (f"scaling efficiency at N = {at.n} (usable cores) >= 0.95", f"{report.efficiency(at):.2f}",
         report.efficiency(at) >= 0.95),
        (f">= 5x the naive pool at N = {at.n}", f"{report.speedup_over_naive:.1f}x", report.speedup_over_naive >= 5),
        ("launcher CPU <= 1% of one core", f"{100 * launcher:.2f}%", launcher <= 0.01),
        (f"worker start-up to the first env step <= 2.5 s (N <= {report.config.cores})", f"{startup:.2f} s",
         startup <= 2.5),
        ("worker peak RSS <= 400 MiB", f"{rss:.0f} MiB", rss <= 400),
    ]
    if report.parallel and (ratio := report.ratio_to_parallel) is not None:
        checks.append((f">= 1.0x GNU parallel at N = {at.n}", f"{ratio:.2f}x", ratio >= 1.0))
    if (ratio := report.template_launch_ratio) is not None:
        checks.append(("a run's launch to first env step through the template <= 1/4 of an exec's",
                       f"{ratio:.2f}x", ratio <= 0.25))
    if (share := report.check_share) is not None:
        checks.append(("non-finite checks <= 1% of a training step", f"{100 * share:.2f}%", share <= 0.01))
    checks += [(f"{o.algo} through the worker adds <= 1% to plain SB3", f"{100 * o.added:.2f}%", o.added <= 0.01)
               for o in report.overhead]
    if report.scale:
        s = report.scale
        checks += [(f"`sweep run --dry-run` of {s.runs} runs < 2 s", f"{s.dry_run_s:.2f} s", s.dry_run_s < 2),
                   (f"`sweep status` over {s.runs} runs < 1 s", f"{s.status_s:.2f} s", s.status_s < 1)]
    return ["| target | measured | met |", "| --- | --- | --- |",
            *(f"| {what} | {value} | {'yes' if ok else 'NO'} |" for what, value, ok in checks)]
