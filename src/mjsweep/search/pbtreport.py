"""What `sweep report` says of a PBT sweep: each population's lineage (every copy and perturbation), its last
generation's scores, the best member's hyperparameter schedule traced back through the members it copied, a
spec section that replays that schedule (also written to pbt_best.yaml), and the population's curves
(pbt_curves.png: each member's last segment, whose logs carry its lineage's from step 0)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from ..sweepdir.csvfiles import read_progress_points
from ..sweepdir.files import SweepDir, read_lines, read_or_none, write_text_atomic
from ..sweepdir.lineage import SegmentRecord


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
    for line in read_lines(sweep_dir.pbt_jsonl, SegmentRecord):
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


def lineage_lines(lines: list[SegmentRecord]) -> list[str]:
    """One line per copy, in generation order: each value as the member had it, and as the donor's value
    perturbed (or resampled) made it."""
    donors = {line.run: line for line in lines}
    out = []
    for line in lines:
        if line.copied_from is None:
            continue
        donor = donors.get(line.parent or "")
        changes = ", ".join(
            f"{k} {line.previous.get(k, float('nan')):.4g} -> {v:.4g} ("
            + (f"member {line.copied_from}'s {donor.hyperparams[k]:.4g} " if donor and k in donor.hyperparams else "")
            + f"{line.explored.get(k, '')})" for k, v in line.hyperparams.items())
        out.append(f"generation {line.generation}: member {line.member} ({_shown(line.score)}) copied member "
                   f"{line.copied_from} ({_shown(line.donor_score)}); {changes}")
    return out


def report(sweep_dir: SweepDir) -> str:
    """The markdown section of a PBT sweep (empty for any other), writing pbt_best.yaml and pbt_curves.png."""
    found = populations(sweep_dir)
    if not found:
        return ""
    interval = _interval(sweep_dir)
    parts = ["## Population-based training\n"]
    snippets = []
    for population, lines in found.items():
        parts.append(f"### {population}\n")
        parts += [f"- {text}" for text in lineage_lines(lines)] or ["- no copies yet"]
        winner = best(sweep_dir, population, lines)
        if winner is None:
            parts.append("\nno member of the last generation has a score yet\n")
            continue
        parts.append(f"\nbest member: {winner.member} (final evaluation {winner.score:.4g}); its schedule:\n")
        parts += [f"- generation {g}: " + ", ".join(f"{k}={v:.4g}" for k, v in values.items())
                  for g, values in enumerate(winner.schedule())]
        if interval is not None:
            snippets.append(replay_snippet(winner, interval, sweep_dir.path.name))
    if snippets:
        text = "\n".join(snippets)
        write_text_atomic(sweep_dir.pbt_best_yaml, text)
        parts.append(f"\nreplay spec ({sweep_dir.pbt_best_yaml.name}):\n\n```yaml\n{text}```\n")
    figure = plot_curves(sweep_dir, found)
    if figure is not None:
        parts.append(f"\n![population curves]({figure.name})\n")
    return "\n".join(parts) + "\n"


def plot_curves(sweep_dir: SweepDir, found: dict[str, list[SegmentRecord]]) -> Path | None:
    """pbt_curves.png: each member's episode return over timesteps, one panel per population; None without a
    curve."""
    curves = {p: {line.member: read_progress_points(sweep_dir.run(line.run).progress_csv)
                  for line in lines if line.generation == max(each.generation for each in lines)}
              for p, lines in found.items()}
    if not any(points for members in curves.values() for points in members.values()):
        return None
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False  # population names are user text
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 3.5), squeeze=False)
    for ax, (population, members) in zip(axes[0], curves.items(), strict=True):
        for member, points in sorted(members.items()):
            if points:
                ax.plot([x for x, _ in points], [y for _, y in points], label=f"member {member}")
        ax.set_title(population)
        ax.set_xlabel("timesteps")
        ax.set_ylabel("episode return (mean)")
        ax.legend(fontsize="small")
    path = sweep_dir.pbt_curves_png
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _interval(sweep_dir: SweepDir) -> int | None:
    """pbt.interval as sweep.yaml holds it; None where it cannot be read (no snippet then)."""
    try:
        spec = yaml.safe_load(sweep_dir.sweep_yaml.read_text(encoding="utf-8"))
        return int(spec["pbt"]["interval"])
    except (OSError, yaml.YAMLError, TypeError, KeyError, ValueError):
        return None


def _shown(value: float | None) -> str:
    return "failed" if value is None else f"{value:.4g}"
