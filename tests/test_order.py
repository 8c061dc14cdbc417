"""The start order (order.py): breadth first over variants and grid points, longest first within each round;
and, through the scheduler with its fake launcher and clock, the sooner end that buys on a mixed sweep."""

from __future__ import annotations

import re

from helpers.commands import run_sweep, write_spec
from helpers.fake_launcher import FakeClock, FakeLauncher, Script, scheduler
from helpers.fake_sweep import run_spec
from helpers.models import TINY_XML
from mjsweep.plan.order import Order, expected_costs, measured_fps, start_order
from mjsweep.sweepdir.files import SweepDir, write_json_atomic
from mjsweep.sweepdir.models import RunSpec


def run(variant: str, seed: int, steps: int = 1000, point: int = 0, n_envs: int = 1, algo: str = "ppo") -> RunSpec:
    return run_spec(variant, seed, {"total_timesteps": steps, "p": point}, total=steps,
                    run_id=f"{variant}_p{point}_t{steps}_s{seed}", n_envs=n_envs, algo=algo, checkpoint_every=10)


def variant_major(variants: list[str], seeds: int, points: int = 1) -> list[RunSpec]:
    """What plan.expand gives: variant, then grid point, then seed."""
    return [run(v, s, point=p) for v in variants for p in range(points) for s in range(seeds)]


def test_every_group_gets_its_first_seed_before_any_gets_its_second():
    runs = variant_major(["a", "b", "c"], seeds=3, points=2)
    ordered = start_order(runs)
    groups = {r.group for r in runs}
    assert len(groups) == 6
    first_round = ordered[: len(groups)]
    assert {r.group for r in first_round} == groups
    assert all(r.seed == 0 for r in first_round)
    assert [r.seed for r in ordered] == [0] * 6 + [1] * 6 + [2] * 6


def test_same_cost_keeps_the_spec_order_within_a_round():
    runs = variant_major(["a", "b"], seeds=2)
    assert [r.run_id for r in start_order(runs)] == [runs[0].run_id, runs[2].run_id, runs[1].run_id,
                                                     runs[3].run_id]


def test_the_variant_order_is_the_given_order():
    runs = variant_major(["a", "b"], seeds=3)
    assert start_order(runs, Order.VARIANT) == runs


def test_longest_first_within_a_round_by_timesteps():
    runs = [run("a", 0, 1000), run("a", 1, 1000), run("b", 0, 5000), run("b", 1, 5000), run("c", 0, 3000)]
    assert [(r.variant, r.seed) for r in start_order(runs)] == [("b", 0), ("c", 0), ("a", 0), ("b", 1), ("a", 1)]


def test_measured_fps_prices_a_run_and_unmeasured_variants_take_the_median():
    runs = [run("fast", 0, 1000), run("slow", 0, 1000), run("new", 0, 1000)]
    fps = {("fast", 1, "ppo"): 1000.0, ("slow", 1, "ppo"): 100.0, ("other", 1, "ppo"): 400.0}
    assert expected_costs(runs, fps) == [1.0, 10.0, 2.5]
    assert [r.variant for r in start_order(runs, fps=fps)] == ["slow", "new", "fast"]


def test_fps_is_per_n_envs():
    runs = [run("a", 0, 1000, n_envs=1), run("a", 0, 1000, point=1, n_envs=8)]
    costs = expected_costs(runs, {("a", 1, "ppo"): 100.0, ("a", 8, "ppo"): 1000.0})
    assert costs == [10.0, 1.0]


def test_fps_is_per_algorithm():
    runs = [run("a", 0, 1000), run("a", 0, 1000, point=1, algo="sac")]
    costs = expected_costs(runs, {("a", 1, "ppo"): 1000.0, ("a", 1, "sac"): 100.0})
    assert costs == [1.0, 10.0]
    assert [r.algo for r in start_order(runs, fps={("a", 1, "ppo"): 1000.0, ("a", 1, "sac"): 100.0})] == \
        ["sac", "ppo"]


def test_the_order_is_a_permutation_and_pure():
    runs = variant_major(["a", "b", "c"], seeds=4, points=3)
    before = list(runs)
    ordered = start_order(runs)
    assert runs == before
    assert sorted(r.run_id for r in ordered) == sorted(r.run_id for r in runs)
    assert start_order(runs) == ordered


def test_measured_fps_reads_complete_results_only(tmp_path):
    sweep = SweepDir(tmp_path)
    done = [run("a", 0), run("a", 1), run("b", 0), run("c", 0), run("d", 0)]
    for r, body in zip(done, [{"eval_mean_return": 1.0, "fps": 100.0}, {"eval_mean_return": 1.0, "fps": 300.0},
                              {"fps": 50.0}, None, "{not json"], strict=True):
        sweep.run(r.run_id).path.mkdir(parents=True)
        if isinstance(body, dict):
            write_json_atomic(sweep.run(r.run_id).result_json, body)
        elif body:
            sweep.run(r.run_id).result_json.write_text(body)
    assert measured_fps(sweep, done) == {("a", 1, "ppo"): 200.0}


def makespan(tmp_path, runs: list[RunSpec], seconds: dict[str, float], workers: int) -> float:
    """Seconds on the fake clock until the scheduler has ended every run, started in the given order."""
    clock = FakeClock()
    launcher = FakeLauncher(clock, {r.run_id: Script([(seconds[r.run_id], 0)]) for r in runs})
    sched, _ = scheduler(tmp_path, launcher, clock, max_workers=workers, poll_s=0.25)
    outcome = sched.run(runs)
    assert sorted(outcome.succeeded) == sorted(r.run_id for r in runs)
    return clock.now


def test_longest_first_ends_a_mixed_sweep_sooner_than_first_in_first_out(tmp_path):
    """A sweep whose grid mixes short and long trainings: in the spec's order the long runs
    of the last variant start last and the sweep waits for them; the breadth order with the longest first
    packs them in early."""
    runs = [run(v, s, steps) for v in "abcd" for steps in (1000, 4000, 16000) for s in range(2)]
    seconds = {r.run_id: r.total_timesteps / 100 for r in runs}
    fifo = makespan(tmp_path / "fifo", runs, seconds, workers=6)
    ordered = makespan(tmp_path / "lpt", start_order(runs), seconds, workers=6)
    total = sum(seconds.values())
    assert ordered < fifo
    assert ordered <= 4 / 3 * max(total / 6, max(seconds.values()))  # Graham's bound for the rule
    print(f"makespan on 6 workers: first in first out {fifo:.0f} s, breadth + longest first {ordered:.0f} s "
          f"(lower bound {total / 6:.0f} s)")


def test_breadth_gives_every_variant_a_result_before_any_second_seed(tmp_path):
    """On 2 workers with 4 variants x 3 seeds, the spec's order leaves the last variant without a result
    until late; breadth order ends one run of every variant before any seed 1 or 2 ends."""
    runs = variant_major(["a", "b", "c", "d"], seeds=3)
    clock = FakeClock()
    launcher = FakeLauncher(clock, {r.run_id: Script([(10.0, 0)]) for r in runs})
    sched, events = scheduler(tmp_path, launcher, clock, max_workers=2)
    sched.run(start_order(runs))
    ended = [e.run_id for e in events if e.kind.value == "succeeded"]
    first_four = {r.variant for r in runs if r.run_id in ended[:4]}
    assert first_four == {"a", "b", "c", "d"}


def _dry_run_rows(stdout: str) -> list[str]:
    """The run ids of a dry run's plan table, top to bottom (the run id is the first cell of a row)."""
    return re.findall(r"\b(walker|long)_(total_timesteps=\d+)_s(\d)_", stdout)


def test_the_dry_run_lists_runs_in_the_order_they_would_start(tmp_path, tiny_spec):
    tiny_spec["variants"].append({"name": "long", "xml": str(TINY_XML.with_name("tiny_walker_long.xml"))})
    tiny_spec["grid"] = {"total_timesteps": [256, 512]}
    tiny_spec["seeds"] = 2
    spec = write_spec(tmp_path, tiny_spec)
    breadth = run_sweep("run", str(spec), "--dry-run", "--workers", "1")
    assert breadth.returncode == 0, breadth.stderr
    assert _dry_run_rows(breadth.stdout) == [
        ("walker", "total_timesteps=512", "0"), ("long", "total_timesteps=512", "0"),
        ("walker", "total_timesteps=256", "0"), ("long", "total_timesteps=256", "0"),
        ("walker", "total_timesteps=512", "1"), ("long", "total_timesteps=512", "1"),
        ("walker", "total_timesteps=256", "1"), ("long", "total_timesteps=256", "1")]
    variant = run_sweep("run", str(spec), "--dry-run", "--order", "variant")
    assert variant.returncode == 0, variant.stderr
    assert _dry_run_rows(variant.stdout) == [(v, f"total_timesteps={t}", s) for v in ("walker", "long")
                                             for t in (256, 512) for s in "01"]
    wrong = run_sweep("run", str(spec), "--dry-run", "--order", "depth")
    assert wrong.returncode == 2
    assert "--order 'depth': expected breadth or variant" in wrong.stderr
