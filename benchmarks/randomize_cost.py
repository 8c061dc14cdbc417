"""What randomized edits add to a PPO run's wall time (BENCHMARKS.md, "Randomized edits"): Ant-v5 on its own
XML, stable-baselines3's PPO defaults, one torch thread, trained through the worker's env stack and model
(worker/train_envs.py, worker/model.py) nominal, with field edits drawn per episode and with structural edits
drawn per episode.

Two figures per randomized condition, because a share of 1% is well below what two trainings on a shared
machine differ by from noise alone:

- side by side: the conditions alternate over the rounds (each round in another order, so that each comes first
  once in three), and each training's wall and CPU seconds are divided by the same round's nominal training's;
  the median ratio and its range;
- direct: what the wrapper adds to an episode (blocks of episodes of the condition's mean length, the env as
  the worker wraps it against the same env unwrapped, alternated; medians of CPU time, which other processes
  on the machine do not inflate), times the episodes a run of the condition made, over the nominal
  training's CPU time. Beside it the wrapper's reset work alone, the env step and the PPO update it is
  weighed against, and the shortest mean episode at which the target would still hold.

    python -m benchmarks.randomize_cost [--steps N] [--rounds R] [--json FILE] [--markdown FILE]
    python -m benchmarks.randomize_cost --quick     (tiny sizes: that the benchmark runs, not its figures)
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from statistics import median
from typing import Any, NoReturn

ENV = "Ant-v5"
LEGS = ["front_left_leg", "front_right_leg", "back_leg", "right_back_leg"]
MOTORS = ["hip_*", "ankle_*"]
FIELD_EDITS: list[dict[str, Any]] = [
    {"mass": {"body": "torso", "factor": {"uniform": [0.8, 1.25]}}},
    {"mass": {"body": [*LEGS, "aux_*"], "factor": {"uniform": [0.8, 1.25]}}},
    {"friction": {"geom": "*", "factor": {"log_uniform": [0.5, 2.0]}}},
    {"gear": {"joint": MOTORS, "factor": {"uniform": [0.9, 1.1]}}},
]
"""Masses (torso, legs) and friction as a robot meets them off the bench, and the motors' strength."""
STRUCTURAL_EDITS: list[dict[str, Any]] = [
    *({"scale_body": {"body": leg, "factor": {"uniform": [0.9, 1.1]}}} for leg in LEGS),
    {"mass": {"body": "torso", "factor": {"uniform": [0.8, 1.25]}}},
]
"""Each leg's size on its own (a recompile every episode), and the torso's mass with it."""
CONDITIONS: dict[str, list[dict[str, Any]]] = {"nominal": [], "field": FIELD_EDITS, "structural": STRUCTURAL_EDITS}
TARGETS = {"field": 0.01, "structural": 0.05}
"""The issue's ceilings on what each adds to a PPO run's wall time."""


@dataclass(frozen=True)
class Sizes:
    steps: int
    rounds: int
    episodes: int
    """Episodes per timed block of the direct measure (and 5 x as many resets per block of resets alone)."""
    blocks: int
    """Timed blocks per env, wrapped and plain alternated."""
    ppo: dict[str, Any] = field(default_factory=dict)
    """PPO's keyword arguments over SB3's defaults (only --quick sets any)."""


FULL = Sizes(steps=32768, rounds=3, episodes=20, blocks=9)
"""About 5-6 minutes on 2 cores (the trainings are the size of `sweep bench`'s Ant-v5 runs)."""
QUICK = Sizes(steps=128, rounds=1, episodes=2, blocks=2, ppo={"n_steps": 64, "batch_size": 32, "n_epochs": 1})


@dataclass
class Training:
    condition: str
    round: int
    steps: int
    wall_s: float
    """Around learn(): rollouts and updates."""
    cpu_s: float
    update_s: float
    """Of wall_s, the seconds in PPO's updates (model.train)."""
    updates: int
    episodes: int
    """Resets the run's envs made (each draws, when randomized)."""


@dataclass
class EpisodeCost:
    condition: str
    length: int
    """Env steps per timed episode: the condition's mean episode in its trainings."""
    wrapped_us: float
    plain_us: float
    added_us: float
    """What the wrapper adds to an episode, in CPU time: the median of the wrapped blocks less the plain ones'."""
    reset_us: float
    """Of it, what the wrapper adds to the reset alone (timed the same way, resets only)."""


@dataclass
class Verdict:
    condition: str
    episodes: float
    """Episodes per training (median over the rounds)."""
    ratio: float
    """Wall time over the same round's nominal training's, median over the rounds."""
    ratio_low: float
    ratio_high: float
    cpu_ratio: float
    cpu_ratio_low: float
    cpu_ratio_high: float
    added_us: float
    """What the wrapper adds to an episode (EpisodeCost.added_us)."""
    added_steps: float
    """The same in env steps."""
    added_updates: float
    """The same as a share of one PPO update."""
    share: float
    """Episodes x added_us / the nominal training's CPU seconds: what the condition adds, directly."""
    target: float
    shortest_episode: float
    """The shortest mean episode (env steps) at which the direct share would still be within the target."""
    met: bool


@dataclass
class Result:
    sizes: Sizes
    host: str
    cpu: str
    cores: int
    load_before: float
    load_after: float
    step_us: float
    """The plain env's step alone, CPU time, median of the blocks."""
    update_s: float
    """One PPO update (a model.train call), median over the nominal trainings."""
    nominal_wall_s: float
    nominal_cpu_s: float
    trainings: list[Training]
    costs: list[EpisodeCost]
    verdicts: list[Verdict]


def run_specs(folder: Path, sizes: Sizes) -> dict[str, Any]:
    """The run `sweep run` would make of each condition's variant (no evaluation, no checkpoint), by name."""
    import yaml

    from mjsweep.bench import env_default_xml
    from mjsweep.engine.sweep import prepare

    xml = str(env_default_xml(ENV))
    variants = [{"name": name, "xml": xml, **({"randomize": edits} if edits else {})}
                for name, edits in CONDITIONS.items()]
    spec = {"name": "randomize-cost", "env": ENV, "variants": variants, "seeds": 1, "total_timesteps": sizes.steps,
            "algo": "ppo", "ppo": sizes.ppo, "eval": {"episodes": 1}, "checkpoint_every": 10**9,
            "checkpoint_every_s": None, "runs_dir": str(folder / "runs")}
    (folder / "spec.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    return {run.variant: run for run in prepare(folder / "spec.yaml", check_envs=False).runs}


def train(spec: Any, folder: Path, round_: int) -> Training:
    """One PPO training as the worker builds it (env stack with draws.jsonl, model), timed around learn()."""
    from mjsweep.engine.sweep import write_run_dir
    from mjsweep.sweepdir.csvfiles import read_monitor_episodes
    from mjsweep.sweepdir.files import RunDir
    from mjsweep.worker.checkpoints import Checkpointer
    from mjsweep.worker.model import build_model
    from mjsweep.worker.train_envs import make_vec_env

    run = RunDir(folder)
    write_run_dir(run, spec, None)
    venv = make_vec_env(spec, run, None)
    model: Any = build_model(spec, venv, Checkpointer(run, spec.checkpoint_every), None)
    updates: list[float] = []
    update = model.train

    def timed_update() -> None:
        started = time.perf_counter()
        update()
        updates.append(time.perf_counter() - started)

    model.train = timed_update  # PPO.learn calls self.train() once per rollout
    wall, cpu = time.perf_counter(), time.process_time()
    model.learn(spec.total_timesteps)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    venv.close()
    # Every reset starts an episode: the finished ones in monitor.csv, and each env's last, cut off.
    episodes = len(read_monitor_episodes(run.monitor_csv)) + spec.n_envs
    return Training(spec.variant, round_, int(model.num_timesteps), round(wall, 4), round(cpu, 4),
                    round(sum(updates), 4), len(updates), episodes)


def episode_cost(spec: Any, folder: Path, sizes: Sizes, length: int) -> EpisodeCost:
    """What the wrapper adds to an episode of `length` steps, measured directly in CPU time: blocks of episodes
    (a reset, then random actions) of the env as the worker wraps it, its draws.jsonl written, alternated with
    blocks of the same env unwrapped; then blocks of resets alone the same way. The episode holds what a
    reset leaves for the steps after it (a recompiled model's new MjData), the reset alone the wrapper's work."""
    import numpy as np

    from mjsweep.robots.envs import make_env
    from mjsweep.robots.randomized_env import RandomizedEnv
    from mjsweep.spec.randomspec import RandomizedEdit

    edits = [RandomizedEdit.model_validate(edit) for edit in spec.randomize]
    xml = Path(spec.xml)
    folder.mkdir(parents=True, exist_ok=True)
    envs = {"plain": make_env(spec.env, xml, spec.env_kwargs, spec.max_episode_steps),
            "wrapped": RandomizedEnv(make_env(spec.env, xml, spec.env_kwargs, spec.max_episode_steps), xml, edits,
                                     spec.seed, 0, folder / "draws.jsonl")}
    actions = np.random.default_rng(0).uniform(-1, 1, (length, *envs["plain"].action_space.shape))
    for env in envs.values():
        env.reset(seed=0)

    def episodes(env: Any) -> None:
        for _ in range(sizes.episodes):
            env.reset()
            for action in actions:
                env.step(action)

    def resets(env: Any) -> None:
        for _ in range(5 * sizes.episodes):
            env.reset()

    episode = _alternated(envs, episodes, sizes.blocks, sizes.episodes)
    reset = _alternated(envs, resets, sizes.blocks, 5 * sizes.episodes)
    for env in envs.values():
        env.close()
    return EpisodeCost(spec.variant, length, round(episode["wrapped"], 2), round(episode["plain"], 2),
                       round(episode["wrapped"] - episode["plain"], 2), round(reset["wrapped"] - reset["plain"], 2))


def _alternated(envs: dict[str, Any], work: Any, blocks: int, per_block: int) -> dict[str, float]:
    """The median CPU microseconds per unit of `work` on each env, over blocks alternating which goes first."""
    times: dict[str, list[float]] = {name: [] for name in envs}
    for block in range(blocks):
        for name in list(envs) if block % 2 == 0 else list(envs)[::-1]:
            started = time.thread_time()
            work(envs[name])
            times[name].append((time.thread_time() - started) / per_block)
    return {name: median(values) * 1e6 for name, values in times.items()}


def step_us(spec: Any, sizes: Sizes) -> float:
    """The plain env's step alone in CPU time (random actions; a reset where an episode ends, not timed): the
    median of `blocks` blocks of 100 x `episodes` steps."""
    import numpy as np

    from mjsweep.robots.envs import make_env

    env = make_env(spec.env, Path(spec.xml), spec.env_kwargs, spec.max_episode_steps)
    env.reset(seed=0)
    actions = np.random.default_rng(0).uniform(-1, 1, (100 * sizes.episodes, *env.action_space.shape))
    blocks = []
    for _ in range(sizes.blocks):
        spent = 0.0
        for action in actions:
            started = time.thread_time()
            _, _, terminated, truncated, _ = env.step(action)
            spent += time.thread_time() - started
            if terminated or truncated:
                env.reset()
        blocks.append(spent / len(actions))
    env.close()
    return median(blocks) * 1e6


def order(round_: int) -> list[str]:
    """The conditions rotated by the round: over three rounds each goes first, second and last once."""
    names = list(CONDITIONS)
    shift = round_ % len(names)
    return names[shift:] + names[:shift]


def mean_episode(trainings: list[Training], condition: str) -> int:
    """The condition's mean episode length in its trainings, in env steps."""
    mine = [t for t in trainings if t.condition == condition]
    return max(1, round(sum(t.steps for t in mine) / sum(t.episodes for t in mine)))


def verdicts(trainings: list[Training], costs: list[EpisodeCost], step: float, update_s: float) -> list[Verdict]:
    nominal = {t.round: t for t in trainings if t.condition == "nominal"}
    nominal_cpu = median(t.cpu_s for t in nominal.values())
    training_step_s = nominal_cpu / median(t.steps for t in nominal.values())
    out = []
    for cost in costs:
        mine = [t for t in trainings if t.condition == cost.condition]
        ratios = [t.wall_s / nominal[t.round].wall_s for t in mine]
        cpu_ratios = [t.cpu_s / nominal[t.round].cpu_s for t in mine]
        episodes = median(t.episodes for t in mine)
        share = episodes * cost.added_us * 1e-6 / nominal_cpu
        target = TARGETS[cost.condition]
        out.append(Verdict(
            condition=cost.condition, episodes=episodes, ratio=round(median(ratios), 4),
            ratio_low=round(min(ratios), 4), ratio_high=round(max(ratios), 4),
            cpu_ratio=round(median(cpu_ratios), 4), cpu_ratio_low=round(min(cpu_ratios), 4),
            cpu_ratio_high=round(max(cpu_ratios), 4), added_us=cost.added_us,
            added_steps=round(cost.added_us / step, 2), added_updates=round(cost.added_us * 1e-6 / update_s, 6),
            share=round(share, 6), target=target,
            shortest_episode=round(max(cost.added_us, 0) * 1e-6 / (target * training_step_s), 1),
            met=share <= target))
    return out


def measure(sizes: Sizes, on_line=lambda line: None) -> Result:
    import torch

    from mjsweep.engine.profile import cpu_model

    torch.set_num_threads(1)
    load_before = os.getloadavg()[0]
    trainings: list[Training] = []
    with tempfile.TemporaryDirectory(prefix="randomize-cost-") as tmp:
        specs = run_specs(Path(tmp), sizes)
        for round_ in range(sizes.rounds):
            for name in order(round_):
                training = train(specs[name], Path(tmp) / f"{name}-{round_}", round_)
                on_line(f"round {round_ + 1}/{sizes.rounds}: {name:10s} {training.wall_s:8.2f} s wall, "
                        f"{training.cpu_s:8.2f} s CPU, {training.episodes} episodes")
                trainings.append(training)
        costs = []
        for name in (name for name, edits in CONDITIONS.items() if edits):
            costs.append(episode_cost(specs[name], Path(tmp) / f"{name}-episodes", sizes,
                                      mean_episode(trainings, name)))
            on_line(f"{name}: an episode of {costs[-1].length} steps {costs[-1].added_us:.0f} us more in CPU time")
        step = step_us(specs["nominal"], sizes)
    nominal = [t for t in trainings if t.condition == "nominal"]
    update_s = median(t.update_s / t.updates for t in nominal)
    return Result(sizes=sizes, host=socket.gethostname(), cpu=cpu_model(), cores=os.cpu_count() or 1,
                  load_before=round(load_before, 2), load_after=round(os.getloadavg()[0], 2),
                  step_us=round(step, 2), update_s=round(update_s, 4),
                  nominal_wall_s=round(median(t.wall_s for t in nominal), 3),
                  nominal_cpu_s=round(median(t.cpu_s for t in nominal), 3), trainings=trainings, costs=costs,
                  verdicts=verdicts(trainings, costs, step, update_s))


def markdown(result: Result) -> str:
    sizes = result.sizes
    lines = [f"randomize cost: {ENV} on its own XML, {sizes.steps} env steps per training, PPO defaults"
             + (f" with {sizes.ppo}" if sizes.ppo else "") + f", 1 torch thread, {sizes.rounds} rounds alternated; "
             f"{result.host}, {result.cores} cores ({result.cpu}), load {result.load_before} before, "
             f"{result.load_after} after", "",
             "| condition | episodes per run | wall s per round | CPU s per round | wall ratio to nominal, median "
             "[range] | CPU ratio, median [range] | added per episode (CPU) | in env steps | share of the PPO run "
             "| target | met |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    nominal = [t for t in result.trainings if t.condition == "nominal"]
    lines.append(f"| nominal | {median(t.episodes for t in nominal):g} | {_listed(nominal, 'wall_s')} | "
                 f"{_listed(nominal, 'cpu_s')} | 1 | 1 | - | - | - | - | - |")
    for v in result.verdicts:
        mine = [t for t in result.trainings if t.condition == v.condition]
        lines.append(f"| {v.condition} | {v.episodes:g} | {_listed(mine, 'wall_s')} | {_listed(mine, 'cpu_s')} | "
                     f"{v.ratio:.3f} [{v.ratio_low:.3f}, {v.ratio_high:.3f}] | {v.cpu_ratio:.3f} "
                     f"[{v.cpu_ratio_low:.3f}, {v.cpu_ratio_high:.3f}] | {v.added_us / 1000:.3f} ms | "
                     f"{v.added_steps:.2f} | {100 * v.share:.3f}% | <= {100 * v.target:g}% | "
                     f"{'yes' if v.met else 'NO'} |")
    lines += ["", f"- env step alone: {result.step_us:.1f} us CPU; one PPO update (model.train): "
              f"{result.update_s:.3f} s; nominal training: {result.nominal_cpu_s:.1f} CPU s, "
              f"{result.nominal_wall_s:.1f} s wall (medians)"]
    for cost, v in zip(result.costs, result.verdicts, strict=True):
        lines.append(f"- {cost.condition}: an episode of {cost.length} steps {cost.wrapped_us / 1000:.2f} ms wrapped "
                     f"against {cost.plain_us / 1000:.2f} ms plain, of which the reset adds {cost.reset_us:.0f} us; "
                     f"the added {cost.added_us:.0f} us is {100 * v.added_updates:.3f}% of a PPO update; the "
                     f"target holds down to a mean episode of {v.shortest_episode:g} env steps")
    return "\n".join(lines) + "\n"


def _listed(trainings: list[Training], key: str) -> str:
    return ", ".join(f"{getattr(t, key):.1f}" for t in trainings)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m benchmarks.randomize_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks that it runs, not its figures")
    parser.add_argument("--steps", type=int, help=f"env steps per training (default {FULL.steps})")
    parser.add_argument("--rounds", type=int, help=f"rounds of the three trainings (default {FULL.rounds})")
    parser.add_argument("--json", type=Path, help="write every figure as one JSON object to this file")
    parser.add_argument("--markdown", type=Path, help="write the table to this file")
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = _parser()
    args = parser.parse_args(argv)
    for name in ("steps", "rounds"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name} must be at least 1, not {value}")
    sizes = QUICK if args.quick else FULL
    sizes = replace(sizes, steps=args.steps or sizes.steps, rounds=args.rounds or sizes.rounds)
    result = measure(sizes, on_line=lambda line: print(line, file=sys.stderr, flush=True))
    table = markdown(result)
    if args.markdown:
        args.markdown.write_text(table, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(asdict(result), indent=1), encoding="utf-8")
    print(table, end="")


if __name__ == "__main__":
    main()
