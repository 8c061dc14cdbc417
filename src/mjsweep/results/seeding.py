"""Adaptive seeds: after a round, which groups get one more seed, with the chance of any false separation held
at 1 - confidence over every look and every pair.

Every group starts with `min` seeds. After each round (a look), every pair of groups is tested by the
group-sequential Brunner-Munzel test of results/sequential.py on the returns it has (its null: P(A > B) = 1/2,
whatever the groups' spreads), and Holm's step-down runs over the
pairs (a pair is separated once its test, at alpha / (pairs not yet separated), has crossed at any of its
looks; by the closure principle this holds the family-wise error at alpha). The best group is the one with the
highest mean final return among those still in play; a group in play that is not separated from it (nor,
with `equal_within`, found equal to it) gets one more seed, up to `max`, and so does the best while any group
does. A group that gets no seed leaves play for good: its pairs keep the looks they had, which drops looks
and so never adds error. A pair's look is a round at which both its groups had gained seeds since its last
look. A pure function of the returns and the looks: the same results always give the same decisions.
"""

from __future__ import annotations

import itertools
import math
import statistics

from ..spec.sweepspec import AdaptiveSeeds
from ..sweepdir.models import SeedGroup, SeedPair, SeedRound, SeedVerdict
from . import brunnermunzel, ranktest, sequential
from .compare import SequentialVerdict
from .stats import probability_of_improvement

Returns = dict[str, list[float | None]]
"""Each group's granted seeds in seed order: a seed's final return, or None where it gave none."""


def test_words(policy: AdaptiveSeeds, pairs: int) -> str:
    return (f"group-sequential {brunnermunzel.NAME} test, error {1 - policy.confidence:.2g} spent as "
            f"{sequential.SPENDING} over looks up to {policy.max} seeds each, Holm over {pairs} pairs")


def next_round(number: int, returns: Returns, history: list[dict[str, int]], policy: AdaptiveSeeds) -> SeedRound:
    """Round `number`'s decision. `returns`: every group's granted seeds (their count is this round's look), in
    the order groups are reported (ties of the mean go to the first); `history`: the seeds each group had at
    every earlier round's look."""
    look_seeds = [*history, {g: len(r) for g, r in returns.items()}]
    playing = _in_play(look_seeds)
    got = {g: [r for r in rs if r is not None] for g, rs in returns.items()}
    means = {g: statistics.fmean(v) for g, v in got.items() if v}
    contenders = [g for g in returns if g in means and g in playing]
    best = max(contenders, key=lambda g: means[g]) if contenders else None
    pairs = test_pairs(returns, look_seeds, policy)
    by_pair = {frozenset((p.a, p.b)): p for p in pairs}
    groups: list[SeedGroup] = []
    for group, seeds in returns.items():
        base = SeedGroup(group=group, seeds=len(seeds), returns=len(got[group]), mean=means.get(group),
                         verdict=SeedVerdict.OPEN)
        if not got[group]:
            groups.append(base.model_copy(update={"verdict": SeedVerdict.NO_RETURN}))
            continue
        if group == best:
            groups.append(base.model_copy(update={"verdict": SeedVerdict.BEST}))
            continue
        pair = by_pair.get(frozenset((best, group))) if best is not None else None
        p = probability_of_improvement(got[best], got[group]) if best is not None and pair is not None else None
        if pair is not None and pair.separated:
            verdict = SeedVerdict.SEPARATED
        elif pair is not None and pair.equal:
            verdict = SeedVerdict.EQUAL
        elif group not in playing or best is None:
            verdict = SeedVerdict.STOPPED
        else:
            verdict = SeedVerdict.OPEN if len(seeds) < policy.max else SeedVerdict.AT_MAX
        groups.append(base.model_copy(update={"p": p, "verdict": verdict, "add": verdict is SeedVerdict.OPEN}))
    if any(g.add for g in groups):
        groups = [g.model_copy(update={"add": g.seeds < policy.max}) if g.verdict is SeedVerdict.BEST else g
                  for g in groups]
    return SeedRound(round=number, best=best, confidence=policy.confidence, groups=groups,
                     test=test_words(policy, len(pairs)), method=brunnermunzel.NAME, pairs=pairs,
                     equal_within=policy.equal_within)


def _in_play(look_seeds: list[dict[str, int]]) -> set[str]:
    """Groups that gained a seed at the last look (every group at the first)."""
    if len(look_seeds) == 1:
        return set(look_seeds[0])
    before, now = look_seeds[-2], look_seeds[-1]
    return {g for g, n in now.items() if n > before.get(g, 0)}


def pair_looks(a: str, b: str, look_seeds: list[dict[str, int]]) -> list[tuple[int, int]]:
    """The seeds of a and b at each of their pair's looks: the first look, then every look at which both had
    gained seeds since the pair's last."""
    out: list[tuple[int, int]] = []
    for seeds in look_seeds:
        n_a, n_b = seeds.get(a, 0), seeds.get(b, 0)
        if n_a == 0 or n_b == 0:
            continue
        if not out or (n_a > out[-1][0] and n_b > out[-1][1]):
            out.append((n_a, n_b))
    return out


def test_pairs(returns: Returns, look_seeds: list[dict[str, int]], policy: AdaptiveSeeds) -> list[SeedPair]:
    """Every pair's sequential test with Holm's step-down over the pairs: a pair is separated once it has
    crossed, at any of its looks, its boundaries at alpha / (pairs not yet separated)."""
    alpha, top = 1.0 - policy.confidence, policy.max
    paths = {}
    for a, b in itertools.combinations(returns, 2):
        a_looks: list[list[float]] = []
        b_looks: list[list[float]] = []
        for n_a, n_b in pair_looks(a, b, look_seeds):
            x = [r for r in returns[a][:n_a] if r is not None]
            y = [r for r in returns[b][:n_b] if r is not None]
            # T needs two returns a side; a look with fewer (failed seeds) is not taken.
            grown = not a_looks or (len(x), len(y)) != (len(a_looks[-1]), len(b_looks[-1]))
            if len(x) >= 2 and len(y) >= 2 and grown:
                a_looks.append(x)
                b_looks.append(y)
        if a_looks:
            paths[(a, b)] = sequential.path(a_looks, b_looks)
    family = len(paths)
    separated: set[tuple[str, str]] = set()
    while True:
        level = alpha / max(1, family - len(separated))
        crossing = {key for key, p in paths.items() if key not in separated and p.crossed(level, top)}
        if not crossing:
            break
        separated |= crossing
    out = []
    for (a, b), p in paths.items():
        level = alpha / max(1, family - len(separated) + int((a, b) in separated))
        bounds = sequential.boundaries(p.sizes, level, top)
        last_a, last_b = p.last
        equal = (policy.equal_within is not None and (a, b) not in separated and
                 sequential.within(last_a, last_b, policy.equal_within,
                                   sequential.boundaries(p.sizes, alpha / family, top)[-1]))
        u = ranktest.u_statistic(last_a, last_b)
        out.append(SeedPair(a=a, b=b, looks=[list(size) for size in p.sizes], u=u,
                            d=abs(2 * u - len(last_a) * len(last_b)), t=brunnermunzel.statistic(last_a, last_b),
                            boundaries=[b if math.isfinite(b) else None for b in bounds], level=level,
                            separated=(a, b) in separated, equal=equal))
    return out


def explain(decision: SeedRound) -> str:
    """One line: what the round decided and why."""
    added = [g.group for g in decision.groups if g.add]
    if decision.best is None:
        return f"round {decision.round}: no group in play has a final return; no seed added"
    pairs = {frozenset((p.a, p.b)): p for p in decision.pairs}
    reasons = [f"{g.group}: {_why(g, pairs.get(frozenset((decision.best, g.group))))}"
               for g in decision.groups if g.verdict is not SeedVerdict.BEST]
    head = f"round {decision.round}: best {decision.best}"
    tail = f"one more seed to {', '.join(added)}" if added else "done"
    return f"{head}; {'; '.join(reasons) or 'no other group'}; {tail}"


def _why(group: SeedGroup, pair: SeedPair | None) -> str:
    if group.p is None:
        return f"{group.verdict.value} ({group.returns} of {group.seeds} seeds gave a return)"
    if group.low is not None and group.high is not None:  # a round decided before the sequential test
        return f"{group.verdict.value}, P(best > it) = {group.p:.2f} [{group.low:.2f}, {group.high:.2f}] " \
               f"with {group.seeds} seeds"
    said = f"{group.verdict.value}, P(best > it) = {group.p:.2f} with {group.seeds} seeds"
    return said if pair is None else f"{said} ({test_line(pair)})"


def test_line(pair: SeedPair) -> str:
    """The pair's test at its last look, as a reader rechecks it: |T| (D in rounds of the rank test) against its
    boundary at its level."""
    bound = pair.boundaries[-1]
    looks = f"{len(pair.looks)} look{'s' if len(pair.looks) != 1 else ''}"
    name, value = ("D", f"{pair.d:g}") if pair.t is None else ("|T|", f"{abs(pair.t):.3g}")
    if pair.separated:
        return f"separated at error {pair.level:.2g}, {looks}, {name} = {value}"
    if bound is None:
        return f"{name} = {value}; no {name} can cross at error {pair.level:.2g} yet, {looks}"
    return f"{name} = {value} < {bound:.3g} at error {pair.level:.2g}, {looks}"


def decided_by(decision: SeedRound) -> str:
    """The test a round was decided by: a line without `method` was the exact rank test's, one without `test`
    either the bootstrap interval's, from before any sequential test."""
    if decision.test is None:
        return "bootstrap interval of P(best > it)"
    return f"sequential {decision.method} test" if decision.method is not None else "sequential rank test"


def standing(rounds: list[SeedRound]) -> list[SeedRound]:
    """Each round's decision as it stands: a round decided again (a failed seed rerun, a larger max) keeps
    its last line."""
    latest = {decision.round: decision for decision in rounds}
    return [latest[number] for number in sorted(latest)]


def history(rounds: list[SeedRound], before: int) -> list[dict[str, int]]:
    """The looks of the rounds standing before round `before`: the seeds each group had at each."""
    return [r.seeds() for r in standing(rounds) if r.round < before]


def verdicts(rounds: list[SeedRound]) -> dict[frozenset[str], SequentialVerdict] | None:
    """Every pair's verdict as the last decision on record left it, for the report to show in place of a
    one-look test (which would overstate returns gathered by looking); None without sequential decisions."""
    kept = standing(rounds)
    if not kept or kept[-1].test is None:
        return None
    family = len(kept[-1].pairs)
    words = f"{decided_by(kept[-1])}, round {kept[-1].round}"
    return {frozenset((p.a, p.b)): SequentialVerdict(p.separated, p.equal, family, f"{words}: {test_line(p)}")
            for p in kept[-1].pairs}


def to_markdown(rounds: list[SeedRound]) -> str:
    """report.md's section: every decision, and where the seeds went."""
    kept = standing(rounds)
    last = kept[-1]
    seeds = ", ".join(f"{group} {n}" for group, n in last.granted().items())
    state = "done" if last.done else "still adding seeds"
    rule = (f"A group in play got one more seed a round until the {last.test} separated it from the best"
            if last.test is not None else
            f"A group got one more seed a round while P(best > it) had a {last.confidence:.0%} interval that "
            "held 0.5 (rounds decided before the sequential test)")
    ranked = [str(d.round) for d in kept if d.test is not None and d.method is None]
    if ranked:  # an older launcher's rounds: their decisions stand as that test made them
        rule += (f". Round{'s' if len(ranked) > 1 else ''} {', '.join(ranked)} {'were' if len(ranked) > 1 else 'was'} "
                 "decided by the sequential exact rank test (D = |2U - n_a n_b|), whose null is one distribution "
                 "for both groups")
    lines = ["## Adaptive seeds", "", f"{len(kept)} decision{'s' if len(kept) != 1 else ''}, {state}; seeds per "
             f"group: {seeds}. {rule} (seeds.jsonl has the numbers).", ""]
    return "\n".join(lines + [f"- {explain(d)}" for d in kept]) + "\n"
