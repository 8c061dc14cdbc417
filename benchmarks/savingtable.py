"""The step-saving benchmark's figures as Markdown: the three methods, the warm designs, and a row per goal
that says met or not met, and why."""

from __future__ import annotations

import statistics

from .savingfigures import REACH_SHARE, StepSavingFigures
from .savingspecs import GRID, PBT, RANDOM, Budget

GOAL_SHARE = 0.5
"""PBT's CPU seconds, and the warm trials' env steps, as a share of the baseline's: at most half."""
GOAL_TAU = 0.5
"""Kendall's tau the warm trials' ranking of the designs must reach against the cold one: 3 pairs in 4 agree."""
LABELS = {PBT: "PBT", RANDOM: "random search", GRID: "grid"}


def render(figures: StepSavingFigures, budget: Budget) -> str:
    robot = budget.robot or "its own XML"
    lines = [f"## Step savings ({budget.name} budget: {budget.env} on {robot}, PPO)", "",
             f"Part (a): {budget.members} runs x {budget.steps} env steps each way; PBT in segments of "
             f"{budget.interval} steps. CPU seconds from each run's result.json `cpu_s`.", "",
             *_methods(figures), "",
             f"Part (b): a design search of {budget.designs} trials with `warm_start: nearest` "
             f"({figures.cold_trials} kept cold), its warm designs trained again from scratch. Target: "
             f"{REACH_SHARE:.0%} of the cold run's final return; steps are each run's own.", "",
             *_designs(figures), "", *_goals(figures)]
    return "\n".join(lines) + "\n"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _number(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _methods(figures: StepSavingFigures) -> list[str]:
    target = figures.target
    head = ["method", "runs", "env steps", "CPU s", "best final return",
            f"CPU s to reach {_number(target)} (random search's best)"]
    rows = [_row(head), _row(["---"] * len(head))]
    for method in figures.methods:
        reach = method.cpu_to_reach(target) if target is not None else None
        rows.append(_row([LABELS[method.name], str(len(method.runs)), str(method.env_steps), _number(method.cpu_s),
                          _number(method.best_final), "never" if reach is None else _number(reach)]))
    return rows


def _designs(figures: StepSavingFigures) -> list[str]:
    head = ["trial", "edit value", "warm from", "cold final", "warm final", "target", "cold steps", "warm steps"]
    rows = [_row(head), _row(["---"] * len(head))]
    for d in figures.designs:
        warm = "never" if d.warm_steps is None else str(d.warm_steps)
        rows.append(_row([str(d.trial), f"{d.value:.3f}", "-" if d.warm_from is None else str(d.warm_from),
                          _number(d.cold.final), _number(d.warm.final), _number(d.target), str(d.cold_steps), warm]))
    return rows


def goals(figures: StepSavingFigures) -> list[tuple[str, str, str]]:
    """Each goal: what it asks, "met" or "not met", and why."""
    return [_pbt_goal(figures), _steps_goal(figures), _rank_goal(figures)]


def _goals(figures: StepSavingFigures) -> list[str]:
    rows = [_row(["goal", "verdict", "why"]), _row(["---"] * 3)]
    return rows + [_row(list(goal)) for goal in goals(figures)]


def _pbt_goal(figures: StepSavingFigures) -> tuple[str, str, str]:
    goal = "PBT reaches the random search's best return with at most half its CPU seconds"
    target = figures.target
    if target is None:
        return goal, "not met", "the random search has no finished run"
    pbt = figures.method(PBT).cpu_to_reach(target)
    # A search knows its best only once its budget is spent: the baseline is the random search's CPU seconds in
    # all. When its best run happened to come (the order of its trials is luck) is said beside it.
    random = figures.method(RANDOM)
    baseline, lucky = random.cpu_s, random.cpu_to_reach(target)
    if pbt is None:
        return goal, "not met", (f"no PBT evaluation reached {target:.1f} (its best final return: "
                                 f"{_number(figures.method(PBT).best_final)})")
    ratio = pbt / baseline
    verdict = "met" if ratio <= GOAL_SHARE else "not met"
    return goal, verdict, (f"PBT {pbt:.1f} CPU s, the random search's budget {baseline:.1f}: {ratio:.2f} of it "
                           f"(goal <= {GOAL_SHARE}; its best run had ended after {_number(lucky)} CPU s)")


def _steps_goal(figures: StepSavingFigures) -> tuple[str, str, str]:
    goal = f"warm trials reach {REACH_SHARE:.0%} of the cold final return in at most half the env steps"
    if not figures.designs:
        return goal, "not met", "no warm trial finished beside its cold run"
    never = sum(d.warm_steps is None for d in figures.designs)
    # a warm run that never reached the target counts with all its steps, and the shortfall is named
    warm = statistics.median(d.warm.end - d.warm.start if d.warm_steps is None else d.warm_steps
                             for d in figures.designs)
    cold = statistics.median(d.cold_steps for d in figures.designs)
    ratio = warm / max(cold, 1)
    verdict = "met" if ratio <= GOAL_SHARE else "not met"
    why = f"median {warm:.0f} warm against {cold:.0f} cold env steps: {ratio:.2f} of them (goal <= {GOAL_SHARE})"
    if never:
        why += f"; {never} of {len(figures.designs)} warm runs never reached the target (counted with all their steps)"
    return goal, verdict, why


def _rank_goal(figures: StepSavingFigures) -> tuple[str, str, str]:
    goal = "warm trials rank the designs as the cold ones do"
    tau = figures.tau
    if tau is None:
        return goal, "not met", f"{len(figures.designs)} warm design(s): a ranking needs two"
    verdict = "met" if tau >= GOAL_TAU else "not met"
    return goal, verdict, f"Kendall's tau {tau:.2f} over {len(figures.designs)} designs (goal >= {GOAL_TAU})"
