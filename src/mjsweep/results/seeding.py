"""Adaptive seeds: after a round, which groups get one more seed.

The best group is the one with the highest mean final return. Every other group is compared with it through
P(best > other) and its stratified-bootstrap interval (results/compare.py): a pair whose interval leaves out
0.5 is separated and its group gets no more seeds. A group not separated gets one more seed, up to `max`,
and so does the best group while any group is still open, since both sides of a comparison narrow its
interval. Rounds are breadth-first: the next decision waits for every seed of this one, so the groups stay
comparable. A pure function of the returns: the same results always give the same decisions.
"""

from __future__ import annotations

import statistics

from ..spec.sweepspec import AdaptiveSeeds
from ..sweepdir.models import SeedGroup, SeedRound, SeedVerdict
from .compare import compare


def next_round(number: int, returns: dict[str, list[float]], seeds: dict[str, int],
               policy: AdaptiveSeeds) -> SeedRound:
    """Round `number`'s decision. `returns`: each group's final returns (its seeds that succeeded); `seeds`:
    how many seeds each group has had, in the order groups are reported (ties of the mean go to the first)."""
    means = {g: statistics.fmean(returns[g]) for g in seeds if returns.get(g)}
    best = max(means, key=lambda g: means[g]) if means else None
    groups: list[SeedGroup] = []
    for group, had in seeds.items():
        mine = returns.get(group, [])
        base = SeedGroup(group=group, seeds=had, returns=len(mine), mean=means.get(group),
                         verdict=SeedVerdict.OPEN)
        if not mine:
            groups.append(base.model_copy(update={"verdict": SeedVerdict.NO_RETURN}))
        elif group == best:
            groups.append(base.model_copy(update={"verdict": SeedVerdict.BEST}))
        else:
            assert best is not None
            [pair] = compare({best: returns[best], group: mine}, [(best, group)], policy.confidence)
            verdict = SeedVerdict.SEPARATED if pair.separated else \
                SeedVerdict.OPEN if had < policy.max else SeedVerdict.AT_MAX
            groups.append(base.model_copy(update={"p": pair.p, "low": pair.low, "high": pair.high,
                                                  "verdict": verdict, "add": verdict is SeedVerdict.OPEN}))
    if any(g.add for g in groups):
        groups = [g.model_copy(update={"add": g.seeds < policy.max}) if g.verdict is SeedVerdict.BEST else g
                  for g in groups]
    return SeedRound(round=number, best=best, confidence=policy.confidence, groups=groups)


def explain(decision: SeedRound) -> str:
    """One line: what the round decided and why."""
    added = [g.group for g in decision.groups if g.add]
    if decision.best is None:
        return f"round {decision.round}: no group has a final return; no seed added"
    reasons = [f"{g.group}: {_why(g)}" for g in decision.groups if g.verdict is not SeedVerdict.BEST]
    head = f"round {decision.round}: best {decision.best}"
    tail = f"one more seed to {', '.join(added)}" if added else "done"
    return f"{head}; {'; '.join(reasons) or 'no other group'}; {tail}"


def _why(group: SeedGroup) -> str:
    if group.p is None or group.low is None or group.high is None:
        return f"{group.verdict.value} ({group.returns} of {group.seeds} seeds gave a return)"
    return f"{group.verdict.value}, P(best > it) = {group.p:.2f} [{group.low:.2f}, {group.high:.2f}] " \
           f"with {group.seeds} seeds"


def standing(rounds: list[SeedRound]) -> list[SeedRound]:
    """Each round's decision as it stands: a round decided again (a failed seed rerun, a larger max) keeps
    its last line."""
    latest = {decision.round: decision for decision in rounds}
    return [latest[number] for number in sorted(latest)]


def to_markdown(rounds: list[SeedRound]) -> str:
    """report.md's section: every decision, and where the seeds went."""
    kept = standing(rounds)
    last = kept[-1]
    seeds = ", ".join(f"{group} {n}" for group, n in last.granted().items())
    state = "done" if last.done else "still adding seeds"
    lines = ["## Adaptive seeds", "", f"{len(kept)} decision{'s' if len(kept) != 1 else ''}, {state}; seeds per "
             f"group: {seeds}. A group got one more seed a round while P(best > it) had a "
             f"{last.confidence:.0%} interval that held 0.5 (seeds.jsonl has the numbers).", ""]
    return "\n".join(lines + [f"- {explain(d)}" for d in kept]) + "\n"
