"""The answer first: which group leads a report and whether the comparison test separates it from the others,
in one line, for `sweep run`'s end summary, a plain `sweep report` and the top of report.html. The test and its
family-wise error are `compare()`'s (every pair compared, as `sweep report --compare` does); this module only
says its verdict on the leader's pairs."""

from __future__ import annotations

import shlex

from . import stats
from .compare import Comparison
from .report import GroupRow
from .sweepreport import SweepReport

NAMED = 3
"""Groups named where the leader is not separated from several; the rest are counted."""
MOST_GROUPS = 20
"""Groups up to which the answer tests every pair (190 pairs, about a second): the cost grows with the square
of the groups, and a plain report or the end of a sweep should not wait minutes for one line."""


def answer(groups: list[GroupRow], comparisons: list[Comparison], details: str) -> str | None:
    """One line: the leader (the report's first group, best mean return first) and whether it is separated
    from every other group with a return; `details` is the command that shows every pair. None with fewer
    than two groups that have a return: there is nothing to compare."""
    ranked = [g for g in groups if g.mean_return is not None]
    if len(ranked) < 2:
        return None
    leader = ranked[0]
    others = {g.group for g in ranked[1:]}
    mine = [c if c.a == leader.group else c.flipped() for c in comparisons
            if leader.group in (c.a, c.b) and ({c.a, c.b} - {leader.group}) <= others]
    level = f"{mine[0].confidence if mine else stats.CONFIDENCE:.0%}"
    head = f"answer: {leader.group} leads (mean {leader.mean_return:.2f})"
    open_pairs = [c for c in mine if not (c.separated and c.p is not None and c.p > 0.5)]
    if mine and not open_pairs and len(mine) == len(others):
        return f"{head}, separated from every other group at {level}; details: {details}"
    names = [c.b for c in open_pairs] or sorted(others)
    said = ", ".join(names[:NAMED]) + (f" and {len(names) - NAMED} more" if len(names) > NAMED else "")
    return f"{head}, not separated from {said} at {level}{_why(open_pairs)}; details: {details}"


def _why(pairs: list[Comparison]) -> str:
    """Why nothing could separate them, where the seeds say it all: too few to compare, or too few for the
    test to reach the level (3 vs 3 at 95%)."""
    if pairs and all(c.p is None for c in pairs):
        return ": too few seeds to compare (2 each at least)"
    if pairs and all(c.sequential is None and not c.reachable for c in pairs):
        counts = {(c.seeds_a, c.seeds_b) for c in pairs}
        seeds = f"{pairs[0].seeds_a} vs {pairs[0].seeds_b} seeds" if len(counts) == 1 else "these seed counts"
        return f": {seeds} cannot separate anything"
    return ""


def of_report(read: SweepReport) -> str | None:
    """The answer of a sweep folder's report, every pair compared as `sweep report --compare` compares them;
    above MOST_GROUPS groups, only who leads, the test left to that command."""
    details = f"sweep report {shlex.quote(str(read.folder.path))} --compare"
    ranked = [g for g in read.groups if g.mean_return is not None]
    if len(ranked) > MOST_GROUPS:
        return (f"answer: {ranked[0].group} leads (mean {ranked[0].mean_return:.2f}) of {len(ranked)} groups, too "
                f"many to test every pair here; whether it is separated: {details}")
    return answer(read.groups, read.compare(), details)
