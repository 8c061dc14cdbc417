"""Adaptive seeds' rounds as a report's section (results/sections.py): a row per round, a column per group with
the seeds it had at that look and its verdict, and each decision in words (results/seeding.explain) with the
test that made it."""

from __future__ import annotations

from ..sweepdir.models import SeedRound
from .sections import Items, Section, Table, Text
from .seeding import decided_by, explain


def section(rounds: list[SeedRound]) -> Section:
    """`rounds`: the decisions as they stand (seeding.standing), at least one."""
    last = rounds[-1]
    groups = list(dict.fromkeys(g.group for r in rounds for g in r.groups))
    rule = (f"A group in play got one more seed a round until the {last.test} separated it from the best"
            if last.test is not None else
            f"A group got one more seed a round while P(best > it) had a {last.confidence:.0%} interval that "
            "held 0.5 (rounds decided before the sequential test)")
    state = "done" if last.done else "still adding seeds"
    seeds = ", ".join(f"{group} {n}" for group, n in last.granted().items())
    rows = []
    for decision in rounds:
        by_group = {g.group: g for g in decision.groups}
        cells = [f"{g.seeds} {g.verdict.value}" + (" +1" if g.add else "") if (g := by_group.get(name)) else ""
                 for name in groups]
        rows.append((str(decision.round), decision.best or "-", *cells))
    return Section("adaptive seeds", (
        Text(f"{len(rounds)} decision{'s' if len(rounds) != 1 else ''}, {state}; seeds per group: {seeds}. {rule} "
             "(seeds.jsonl has the numbers). Each cell: the seeds a group had at that round's look, its verdict, "
             "and +1 where it got one more seed."),
        Table(("round", "best", *groups), tuple(rows), "rounds"),
        Items(tuple(f"{explain(d)} (by the {decided_by(d)})" for d in rounds))))
