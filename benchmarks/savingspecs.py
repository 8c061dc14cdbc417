"""The sweeps of the step-saving benchmark (benchmarks/stepsaving.py) as spec mappings, for a budget.

Part (a) trains the same number of runs x env steps three ways over the same PPO hyperparameters: a PBT
population, a random search of as many trials and a grid of as many points. Part (b) is a design search
over one edit value with `warm_start: nearest`, and the same designs trained again from scratch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

PBT, RANDOM, GRID, DESIGN_WARM, DESIGN_COLD, PROBE = "pbt", "random", "grid", "design_warm", "design_cold", "probe"
"""Each sweep's name, which is also its folder under the bench's --out."""
EDIT_LABEL = "size"
"""The searched edit value: a factor on the scaled bodies."""
SPACE: dict[str, Any] = {
    "ppo.learning_rate": {"log_uniform": [1.0e-4, 3.0e-3]},
    "ppo.ent_coef": {"uniform": [0.0, 0.02]},
}
"""What PBT perturbs and the random search samples; the grid takes points inside it."""


@dataclass(frozen=True)
class Budget:
    name: str
    env: str
    robot: str
    """A file in xml_models/ (tiny), or empty: the env's own XML."""
    scaled_bodies: tuple[str, ...]
    """The bodies the design search scales by the edit value."""
    max_episode_steps: int | None
    ppo: dict[str, Any]
    members: int
    """PBT's population, the random search's trials and the grid's points alike."""
    steps: int
    """Each member's, trial's and grid point's env steps."""
    interval: int
    """PBT's segment length."""
    eval_every: int
    eval_episodes: int
    grid: dict[str, list[float]]
    """The grid's points: their product has `members` points."""
    designs: int
    """Trials of the design search (a quarter of them cold)."""
    design_steps: int
    probe_steps: int
    """The speed probe's env steps (the estimate printed before the sweeps start)."""

    @property
    def evaluation_steps(self) -> int:
        """At most, the env steps of every evaluation: of periodic ones at each eval_every and a final one per run."""
        episode = self.max_episode_steps or 1000
        evals = 3 * self.members * (self.steps // self.eval_every + 1) \
            + 2 * self.designs * (self.design_steps // self.eval_every + 2)
        return evals * self.eval_episodes * episode

    @property
    def training_steps(self) -> int:
        return 3 * self.members * self.steps + 2 * self.designs * self.design_steps


TINY = Budget(name="tiny", env="HalfCheetah-v5", robot="tiny_walker.xml", scaled_bodies=("front_leg", "back_leg"),
              max_episode_steps=200, ppo={"n_steps": 256, "batch_size": 64, "n_epochs": 4}, members=4, steps=2048,
              interval=512, eval_every=512, eval_episodes=2,
              grid={"ppo.learning_rate": [3.0e-4, 1.0e-3], "ppo.ent_coef": [0.0, 0.01]},
              designs=6, design_steps=2048, probe_steps=512)
FULL = Budget(name="full", env="Hopper-v5", robot="", scaled_bodies=("thigh",), max_episode_steps=None,
              ppo={"n_steps": 2048, "batch_size": 64, "n_epochs": 10}, members=8, steps=5 * 20_480,
              interval=20_480, eval_every=20_480, eval_episodes=5,
              grid={"ppo.learning_rate": [1.0e-4, 3.0e-4, 1.0e-3, 3.0e-3], "ppo.ent_coef": [0.0, 0.01]},
              designs=8, design_steps=4 * 20_480, probe_steps=4096)
BUDGETS = {b.name: b for b in (TINY, FULL)}


def _common(budget: Budget, name: str, out: Path, steps: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "env": budget.env, "total_timesteps": steps, "ppo": dict(budget.ppo),
                            "eval": {"episodes": budget.eval_episodes, "every": budget.eval_every},
                            "checkpoint_every": budget.eval_every, "runs_dir": str(out)}
    if budget.max_episode_steps is not None:
        spec["max_episode_steps"] = budget.max_episode_steps
    return spec


def probe_spec(budget: Budget, xml: Path, out: Path) -> dict[str, Any]:
    """One short run of the budget's robot, to measure a run's env steps per second."""
    return {**_common(budget, PROBE, out, budget.probe_steps), "variants": [{"name": "robot", "xml": str(xml)}]}


def pbt_spec(budget: Budget, xml: Path, out: Path) -> dict[str, Any]:
    return {**_common(budget, PBT, out, budget.steps), "variants": [{"name": "robot", "xml": str(xml)}],
            "pbt": {"population": budget.members, "interval": budget.interval, "quantile": 0.25,
                    "factors": [0.8, 1.25], "resample_probability": 0.25, "space": SPACE, "seed": 0}}


def random_spec(budget: Budget, xml: Path, out: Path) -> dict[str, Any]:
    return {**_common(budget, RANDOM, out, budget.steps), "variants": [{"name": "robot", "xml": str(xml)}],
            "search": {"method": "random", "trials": budget.members, "seeds_per_trial": 1, "space": SPACE,
                       "seed": 0}}


def grid_spec(budget: Budget, xml: Path, out: Path) -> dict[str, Any]:
    # keys in sorted order, as spec.json stores a run's grid: plan.json names its groups in the spec's order
    return {**_common(budget, GRID, out, budget.steps), "variants": [{"name": "robot", "xml": str(xml)}],
            "grid": {key: list(budget.grid[key]) for key in sorted(budget.grid)}}


def _scaled(budget: Budget, factor: str | float) -> list[dict[str, Any]]:
    return [{"scale_body": {"body": list(budget.scaled_bodies), "factor": factor}}]


def design_warm_spec(budget: Budget, xml: Path, out: Path) -> dict[str, Any]:
    """The design search: each new design starts from the finished design nearest in the edit value."""
    variant = {"name": "robot", "base": str(xml), "edits": _scaled(budget, f"${{{EDIT_LABEL}}}"),
               "edit_grid": {EDIT_LABEL: [0.8, 1.25]}}
    return {**_common(budget, DESIGN_WARM, out, budget.design_steps), "variants": [variant],
            "warm_start": {"nearest": True, "cold_share": 0.25},
            "search": {"method": "random", "trials": budget.designs, "seeds_per_trial": 1,
                       "space": {f"edits.{EDIT_LABEL}": {"uniform": [0.8, 1.25]}}, "seed": 0}}


def design_cold_spec(budget: Budget, xml: Path, out: Path, designs: dict[int, float]) -> dict[str, Any]:
    """The design search's designs (trial number -> edit value) trained from scratch, one variant each, named
    after its trial (`cold_variant`)."""
    variants = [{"name": cold_variant(number), "base": str(xml), "edits": _scaled(budget, value)}
                for number, value in sorted(designs.items())]
    return {**_common(budget, DESIGN_COLD, out, budget.design_steps), "variants": variants}


def cold_variant(trial: int) -> str:
    return f"trial{trial}"
