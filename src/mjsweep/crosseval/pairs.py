"""Which (trained run, test variant) pairs to evaluate, and the matrix they make. Pure: tested alone."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..results.stats import mean_interval
from ..sweepdir.csvfiles import CrossMatrixRow, csv_text
from ..sweepdir.files import RunDir, SweepDir, read_model, read_or_none
from ..sweepdir.models import CrossResult, RunSpec, succeeded

HELD_OUT = "@held-out"
"""A test column's suffix for a variant's held-out physics (eval.physics) rather than its nominal model."""


@dataclass(frozen=True)
class Target:
    """A test variant, as the run of that variant at the same grid point builds its env."""

    variant: str
    env: str
    xml: str
    env_kwargs: dict[str, Any]
    max_episode_steps: int | None
    result: Path
    physics: dict[str, Any] | None = None
    """The variant's runs' eval.physics: one episode on each of its held-out draws (its distribution, the test
    one) instead of `episodes` episodes of the nominal model."""

    def evaluated_by(self, done: CrossResult | None, episodes: int) -> bool:
        """Whether `done` is this target's evaluation as asked now."""
        if done is None:
            return False
        return done.physics == self.physics if self.physics is not None else done.episodes == episodes


@dataclass(frozen=True)
class PolicyJob:
    """One trained run and the variants its policy is still to be evaluated on."""

    run: RunSpec
    run_dir: Path
    targets: list[Target]


def read_result(path: Path) -> CrossResult | None:
    return read_or_none(lambda: read_model(path, CrossResult))  # a torn or foreign file: evaluated again


def jobs(sweep: SweepDir, trained: list[RunSpec], all_runs: list[RunSpec], episodes: int) -> list[PolicyJob]:
    """For each trained run, the variants (its own included) at its grid point whose result is missing
    or was made with another number of episodes, and, where that variant's runs have eval.physics, its held-out
    physics (the test distribution: <variant>@held-out) whose result is missing or of other settings."""
    envs: dict[tuple[str, str], RunSpec] = {}
    for run in all_runs:  # any seed of a variant at a grid point builds the same env
        envs.setdefault((run.variant, _grid_key(run)), run)
    variants = sorted({run.variant for run in all_runs})
    out = []
    for run in trained:
        targets = []
        for variant in variants:
            template = envs.get((variant, _grid_key(run)))
            if template is None:
                continue
            xml = sweep.run(template.run_id).model_xml(template)  # where the folder is now, if it has moved
            tests = [(variant, None)] + ([(variant + HELD_OUT, template.physics_eval)] if template.physics_eval else [])
            for name, physics in tests:
                target = Target(variant, template.env, str(xml), template.env_kwargs, template.max_episode_steps,
                                sweep.cross_result(run.run_id, name), physics)
                if not target.evaluated_by(read_result(target.result), episodes):
                    targets.append(target)
        if targets:
            out.append(PolicyJob(run, sweep.run(run.run_id).path, targets))
    return out


def _grid_key(run: RunSpec) -> str:
    return json.dumps(run.grid, sort_keys=True, default=str)


@dataclass(frozen=True)
class Cell:
    train: str
    """The trained group: variant and grid point."""
    test: str
    """The variant evaluated on: its nominal model, or its held-out physics (<variant>@held-out)."""
    seeds: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    skipped: str = ""
    """Why there is no number (spaces that do not match)."""


def matrix(sweep: SweepDir, trained: list[RunSpec]) -> list[Cell]:
    """Mean over seeds (and its 95% Student's t interval, from two seeds) of each trained group's return on each
    variant."""
    returns: dict[tuple[str, str], list[float]] = {}
    skipped: dict[tuple[str, str], str] = {}
    for run in trained:
        for path in sweep.cross_result_files(run.run_id):
            result = read_result(path)
            if result is None:
                continue
            key = (run.group, path.stem)
            if result.skipped:
                skipped[key] = result.skipped
            elif result.mean is not None:
                returns.setdefault(key, []).append(result.mean)
    cells = []
    for key in sorted(set(returns) | set(skipped)):
        values = returns.get(key, [])
        if values:  # one seed has no spread: no interval, rather than [x, x]
            low, high = mean_interval(values) if len(values) >= 2 else (None, None)
            cells.append(Cell(*key, len(values), sum(values) / len(values), low, high))
        else:
            cells.append(Cell(*key, 0, None, None, None, skipped[key]))
    return cells


def to_csv(cells: list[Cell]) -> str:
    return csv_text(CrossMatrixRow, (CrossMatrixRow(c.train, c.test, c.seeds, c.mean, c.ci_low, c.ci_high, c.skipped)
                                     for c in cells))


def trained_runs(sweep: SweepDir) -> tuple[list[RunSpec], list[RunSpec]]:
    """(runs with a trained model that succeeded, every run) of the sweep folder."""
    trained, every = [], []
    for run_dir in sweep.run_dirs():
        try:
            run = RunSpec.model_validate_json(run_dir.spec_json.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        every.append(run)
        if _succeeded(run_dir):
            trained.append(run)
    return trained, every


def _succeeded(run_dir: RunDir) -> bool:
    done = succeeded(read_or_none(run_dir.read_status), read_or_none(run_dir.read_result))
    return done and run_dir.model_zip.is_file()
