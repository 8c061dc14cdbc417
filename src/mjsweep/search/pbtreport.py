"""What `sweep report` says of a PBT sweep, as sections of tables (results/sections.py): each population's
members, their scores generation by generation, every copy and perturbation, the best member's hyperparameter
schedule traced back through the members it copied; a spec section that replays that schedule (also written to
pbt_best.yaml), and the population's curves (pbt_curves.svg: each member's last segment, whose logs carry its
lineage's from step 0). Its runs are segments of members, which reports do not list as groups of seeds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .. import svgplot
from ..results.sections import Block, Code, Figure, Section, Table, Text
from ..sweepdir.csvfiles import read_progress_points
from ..sweepdir.files import SweepDir, read_or_none, write_text_atomic
from ..sweepdir.lineage import SegmentRecord
from ..sweepdir.lineage import segments as pbt_journal

CURVES_CAPTION = "the population's episode returns, each member through its lineage"
"""pbt_curves.svg's caption: training episodes' returns (progress.csv), not evaluations."""


@dataclass(frozen=True)
class Best:
    population: str
    member: int
    score: float
    chain: list[SegmentRecord]
    """Its segments' ancestry, generation 0 first: the segment each one resumed from, back to the start."""

    def schedule(self) -> list[dict[str, float]]:
        return [line.hyperparams for line in self.chain]


def populations(sweep_dir: SweepDir) -> dict[str, list[SegmentRecord]]:
    """pbt.jsonl's lines by population, in the order written."""
    out: dict[str, list[SegmentRecord]] = {}
    for line in pbt_journal(sweep_dir).lines():
        out.setdefault(line.population, []).append(line)
    return out


def score(sweep_dir: SweepDir, run_id: str) -> float | None:
    result = read_or_none(sweep_dir.run(run_id).read_result)
    return result.eval_mean_return if result is not None else None


def best(sweep_dir: SweepDir, population: str, lines: list[SegmentRecord]) -> Best | None:
    """The last generation's best scored member and the chain of segments that made it."""
    last = max(line.generation for line in lines)
    scored = [(s, line) for line in lines if line.generation == last
              if (s := score(sweep_dir, line.run)) is not None]
    if not scored:
        return None
    top, line = max(scored, key=lambda item: (item[0], -item[1].member))
    by_run = {each.run: each for each in lines}
    chain = [line]
    while chain[-1].parent is not None and chain[-1].parent in by_run:
        chain.append(by_run[chain[-1].parent])
    return Best(population, line.member, top, chain[::-1])


def replay_snippet(found: Best, interval: int, sweep: str) -> str:
    """A `pbt:` section that trains `population` seeds along the best member's schedule, ready to paste."""
    body = yaml.safe_dump({"pbt": {"population": 3, "interval": interval, "schedule": found.schedule()}},
                          sort_keys=False, default_flow_style=None)
    return (f"# sweep {sweep}, population {found.population}: member {found.member}'s schedule "
            f"(final evaluation {found.score:.4g}), replayed on 3 seeds; paste into a spec with the same "
            f"variant, algorithm and total_timesteps\n{body}")


def copies_table(lines: list[SegmentRecord]) -> Table:
    """A row per copy, in generation order: who copied whom at which scores, and each value as the member had
    it and as the donor's value perturbed (or resampled) made it."""
    donors = {line.run: line for line in lines}
    rows = []
    for line in lines:
        if line.copied_from is None:
            continue
        donor = donors.get(line.parent or "")
        changes = ", ".join(
            f"{k} {line.previous.get(k, float('nan')):.4g} -> {v:.4g} ("
            + (f"member {line.copied_from}'s {donor.hyperparams[k]:.4g} " if donor and k in donor.hyperparams else "")
            + f"{line.explored.get(k, '')})" for k, v in line.hyperparams.items())
        rows.append((str(line.generation), str(line.member), _shown(line.score), str(line.copied_from),
                     _shown(line.donor_score), changes))
    return Table(("generation", "member", "its score", "copied member", "donor's score", "values"), tuple(rows),
                 "copies")


def members_table(sweep_dir: SweepDir, lines: list[SegmentRecord]) -> Table:
    """A row per member: its last segment's final evaluation and values, and how often it copied another."""
    last = {line.member: line for line in lines}  # lines come in generation order
    rows = tuple((str(member), _shown(score(sweep_dir, line.run)), str(line.generation + 1),
                  str(sum(1 for each in lines if each.member == member and each.copied_from is not None)),
                  _values(line.hyperparams), line.run)
                 for member, line in sorted(last.items()))
    return Table(("member", "final evaluation", "generations", "copies", "values now", "last segment"), rows,
                 "members")


def generations_table(sweep_dir: SweepDir, lines: list[SegmentRecord]) -> Table:
    """Each generation's segments' final evaluations, a column per member; "<- m" where it began as member m's
    copy."""
    members = sorted({line.member for line in lines})
    by_generation: dict[int, dict[int, SegmentRecord]] = {}
    for line in lines:
        by_generation.setdefault(line.generation, {})[line.member] = line
    rows = []
    for generation, segments in sorted(by_generation.items()):
        rows.append((str(generation), *(_segment_cell(sweep_dir, segments.get(m)) for m in members)))
    return Table(("generation", *(f"member {m}" for m in members)), tuple(rows), "generations")


def _segment_cell(sweep_dir: SweepDir, segment: SegmentRecord | None) -> str:
    if segment is None:
        return ""
    found = score(sweep_dir, segment.run)
    copied = f" <- {segment.copied_from}" if segment.copied_from is not None else ""
    return ("-" if found is None else f"{found:.4g}") + copied


def schedule_table(found: Best) -> Table:
    """The best member's values each generation, through the members it copied."""
    keys = list(dict.fromkeys(k for line in found.chain for k in line.hyperparams))
    rows = tuple((str(g), str(line.member), *(f"{line.hyperparams[k]:.4g}" if k in line.hyperparams else "-"
                                               for k in keys))
                 for g, line in enumerate(found.chain))
    return Table(("generation", "member", *keys), rows, "schedule")


def sections(sweep_dir: SweepDir) -> list[Section]:
    """The sections of a PBT sweep's report (none for any other): the populations' curves and the replay spec,
    then each population's members, generations, copies and best schedule. Writes pbt_best.yaml and
    pbt_curves.svg."""
    found = populations(sweep_dir)
    if not found:
        return []
    interval = _interval(sweep_dir)
    blocks: list[Block] = [Text(
        f"{len(found)} population{'s' if len(found) != 1 else ''}; each generation, members of the bottom quantile "
        "copy a member of the top one (its checkpoint, and its values perturbed) and every member trains one "
        "more segment" + (f" of {interval} steps" if interval is not None else "") + ". The runs are segments of "
        "members, not groups of seeds: their scores are the members' below.")]
    figure = plot_curves(sweep_dir, found)
    if figure is not None:
        blocks.append(Figure(figure, CURVES_CAPTION))
    parts: list[Section] = []
    snippets = []
    for population, lines in found.items():
        part: list[Block] = [members_table(sweep_dir, lines), generations_table(sweep_dir, lines)]
        copies = copies_table(lines)
        part.append(copies if copies.rows else Text("no copies yet"))
        winner = best(sweep_dir, population, lines)
        if winner is None:
            part.append(Text("no member of the last generation has a score yet"))
        else:
            part += [Text(f"best member: {winner.member} (final evaluation {winner.score:.4g}); its schedule, "
                          "through the members it copied:"), schedule_table(winner)]
            if interval is not None:
                snippets.append(replay_snippet(winner, interval, sweep_dir.path.name))
        parts.append(Section(f"population {population}", tuple(part), level=3))
    if snippets:
        text = "\n".join(snippets)
        write_text_atomic(sweep_dir.pbt_best_yaml, text)
        blocks.append(Code(text, f"the best schedule as a spec to replay ({sweep_dir.pbt_best_yaml.name})"))
    return [Section("population-based training", tuple(blocks)), *parts]


def to_json(sweep_dir: SweepDir) -> list[dict[str, Any]] | None:
    """`sweep report --format json`'s populations: every segment's line of pbt.jsonl with its final evaluation,
    and the best member's schedule; None for a sweep that is not a population's."""
    found = populations(sweep_dir)
    if not found:
        return None
    out = []
    for population, lines in found.items():
        winner = best(sweep_dir, population, lines)
        out.append({"population": population,
                    "segments": [{**line.model_dump(mode="json"), "final_evaluation": score(sweep_dir, line.run)}
                                 for line in lines],
                    "best": None if winner is None else {"member": winner.member, "score": winner.score,
                                                         "schedule": winner.schedule()}})
    return out


def segment_runs(sweep_dir: SweepDir) -> set[str]:
    """Every run that is a PBT segment (pbt.jsonl's), which reports show as members and not as groups."""
    return {line.run for lines in populations(sweep_dir).values() for line in lines}


def plot_curves(sweep_dir: SweepDir, found: dict[str, list[SegmentRecord]]) -> Path | None:
    """pbt_curves.svg: each member's episode return over timesteps (with several populations, each line named
    by its population too); None without a curve. An earlier version's pbt_curves.png is removed."""
    curves = {(p, line.member): read_progress_points(sweep_dir.run(line.run).progress_csv)
              for p, lines in found.items() for line in lines
              if line.generation == max(each.generation for each in lines)}
    drawn = {key: points for key, points in sorted(curves.items()) if points}
    sweep_dir.pbt_curves_png.unlink(missing_ok=True)
    if not drawn:
        return None
    names = {key: f"member {key[1]}" if len(found) == 1 else f"{key[0]}: member {key[1]}" for key in drawn}
    colors = {key: svgplot.color(k, len(drawn)) for k, key in enumerate(drawn)}
    x = svgplot.Scale.numeric([t for points in drawn.values() for t, _ in points], pad=0.02)
    y = svgplot.Scale.numeric([r for points in drawn.values() for _, r in points])
    title = ", ".join(found) if len(found) > 1 else next(iter(found))
    axes = svgplot.chart(CURVES_CAPTION, [f"{title}: episode returns of each member"], x, y, "timesteps",
                         "episode return (mean)", legend=[(names[key], colors[key]) for key in drawn], ids="pbt")
    for key, points in drawn.items():
        axes.line([t for t, _ in points], [r for _, r in points], colors[key], names[key])
    write_text_atomic(sweep_dir.pbt_curves_svg, axes.svg.document(standalone=True))
    return sweep_dir.pbt_curves_svg


def _interval(sweep_dir: SweepDir) -> int | None:
    """pbt.interval as sweep.yaml holds it; None where it cannot be read (no snippet then)."""
    try:
        spec = yaml.safe_load(sweep_dir.sweep_yaml.read_text(encoding="utf-8"))
        return int(spec["pbt"]["interval"])
    except (OSError, yaml.YAMLError, TypeError, KeyError, ValueError):
        return None


def _shown(value: float | None) -> str:
    return "failed" if value is None else f"{value:.4g}"


def _values(hyperparams: dict[str, float]) -> str:
    return " ".join(f"{k}={v:.4g}" for k, v in hyperparams.items())
