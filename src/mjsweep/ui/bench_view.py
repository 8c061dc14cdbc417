"""How `sweep bench` runs and prints: the throughput measurements (a table or JSON, the Markdown file, the
recommended --workers kept as `sweep run`'s default) and `--stats`' simulations. Progress goes to stderr."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:
    from ..bench import BenchConfig, BenchReport


def throughput(config: BenchConfig, as_json: bool, markdown: Path | None, save: bool) -> None:
    """The bench of `config`, printed; with `save`, its best N becomes `sweep run`'s default here."""
    from ..bench import run_bench
    from .bench_table import render
    from .live import make_progress

    try:
        report = run_bench(config, make_progress, on_step=_say)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    table = render(report)
    sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n" if as_json else table)
    if markdown:
        markdown.write_text(table, encoding="utf-8")
    if save and not report.failed:
        _keep_recommendation(report, config.cores, config.env)


def stats(sweeps: int, effect: float, resample: Path | None, as_json: bool, markdown: Path | None) -> None:
    """`sweep bench --stats`: bench/decisions.py's simulations, as a table or JSON."""
    from ..bench import decisions
    from ..engine.machine import usable_cores
    from ..results.rows import collect

    pool = None
    if resample is not None:
        pool = tuple(r.final_return for r in collect(resample) if r.final_return is not None)
        if len(pool) < 2:
            raise InputError(f"--from {resample}: fewer than 2 runs with a final return to resample")
    config = decisions.StatsConfig(effect=effect, sweeps=sweeps, pool=pool, jobs=usable_cores())
    results = decisions.run_stats(config, _say)
    spreads = decisions.run_spreads(config, _say)
    table = decisions.render(results, config) + "\n" + decisions.render_spreads(spreads, config)
    as_dicts = {"shifts": [r.to_dict() for r in results], "spreads": [r.to_dict() for r in spreads]}
    sys.stdout.write(json.dumps(as_dicts, indent=2) + "\n" if as_json else table)
    if markdown:
        markdown.write_text(table, encoding="utf-8")


def overhead_algos(text: str) -> tuple[str, ...]:
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


def _keep_recommendation(report: BenchReport, cores: int, env: str) -> None:
    """The bench's best N becomes `sweep run`'s default here; said on stderr, like the bench's progress."""
    from ..bench import recommend

    best = report.recommended()
    try:
        path = recommend.save(best.n, cores, env, best.aggregate)
    except OSError as exc:  # the figures are printed already; only the default is not kept
        print(f"bench: warning: could not keep the recommendation for `sweep run`: {exc}", file=sys.stderr)
        return
    print(f"bench: `sweep run` on this machine now defaults to --workers {best.n} ({path})", file=sys.stderr)


def _say(line: str) -> None:
    print(f"bench: {line}", file=sys.stderr, flush=True)
