"""What a sweep will cost (plan/cost.py, plan/speeds.py): the arithmetic against numbers worked out by hand,
and speeds read from real run folders."""

from __future__ import annotations

from pathlib import Path

from helpers.fake_sweep import make_run, result, run_spec
from mjsweep.plan.cost import BenchSpeed, EarlierRuns, Measurements, Source, Speed, estimate, queue_wall_s
from mjsweep.plan.speeds import earlier_runs
from mjsweep.sweepdir.files import SweepDir
from mjsweep.sweepdir.models import RunState, RunStatus


def measured(fps: float, overhead_s: float = 0.0, variant: str = "v", at_once: int | None = None) -> Measurements:
    return Measurements(EarlierRuns({(variant, 1, "ppo"): Speed(fps, overhead_s)}, at_once))


def test_four_runs_of_1000_steps_on_two_slots_at_100_steps_per_s_take_20_s():
    runs = [run_spec("v", seed, total=1000) for seed in range(4)]
    cost = estimate(runs, 2, measured(100.0))
    assert (cost.runs, cost.env_steps, cost.wall_s) == (4, 4000, 20.0)
    assert cost.sources == {Source.OWN: 4}
    assert estimate(runs, 1, measured(100.0)).wall_s == 40.0
    assert estimate(runs, 8, measured(100.0)).wall_s == 10.0  # more slots than runs: one round


def test_the_queue_starts_each_run_on_the_first_free_slot_in_start_order():
    # 2000, 1000, 1000 steps at 100/s plus 5 s each: 25 s and 15 s start at once; the third waits 15 s.
    runs = [run_spec("v", 0, total=2000), run_spec("v", 1, total=1000), run_spec("v", 2, total=1000)]
    assert estimate(runs, 2, measured(100.0, overhead_s=5.0)).wall_s == 30.0
    # A run of two CPU slots waits for both: 0-10 alone, then 10-20 on both, then 20-30.
    assert queue_wall_s([10, 10, 10], [1, 2, 1], 2) == 30.0
    assert queue_wall_s([10, 10], [4, 1], 2) == 20.0  # wider than the machine: it takes every slot


def test_a_resumed_run_counts_only_the_steps_its_checkpoint_lacks():
    runs = [run_spec("v", 0, total=1000), run_spec("v", 1, total=1000)]
    cost = estimate(runs, 1, measured(100.0), done_steps={runs[0].run_id: 600})
    assert (cost.env_steps, cost.wall_s) == (1400, 14.0)


def test_a_variant_without_runs_is_priced_by_the_others_then_by_a_matching_bench_only():
    runs = [run_spec("v", 0, total=1000), run_spec("w", 0, total=1000)]
    cost = estimate(runs, 1, measured(100.0))
    assert cost.sources == {Source.OWN: 1, Source.OTHERS: 1} and cost.wall_s == 20.0
    bench = BenchSpeed("HalfCheetah-v5", "ppo", 1, 250.0, 2, "2025-01-01T00:00:00+00:00")
    assert estimate(runs, 1, Measurements(bench=bench)).wall_s == 8.0
    other_env = BenchSpeed("Ant-v5", "ppo", 1, 250.0, 2, "2025-01-01")
    assert estimate(runs, 1, Measurements(bench=other_env)).wall_s is None  # another env's speed is not these runs'
    sac = [run_spec("v", 0, total=1000, algo="sac")]
    unknown = estimate(sac, 1, Measurements(measured(100.0).earlier, bench))  # PPO's speeds, not SAC's
    assert unknown.wall_s is None and unknown.sources == {} and unknown.unpriced == ("v",)


def test_speeds_come_from_the_succeeded_runs_of_the_folder(tmp_path: Path):
    sweep = tmp_path / "sweep"
    spans = {0: ("2025-01-01T10:00:00+00:00", "2025-01-01T10:10:00+00:00"),
             1: ("2025-01-01T10:00:00+00:00", "2025-01-01T10:05:00+00:00"),
             2: ("2025-01-01T10:05:00+00:00", "2025-01-01T10:12:00+00:00")}
    runs = [run_spec("v", seed) for seed in range(4)]
    for seed, fps in ((0, 100.0), (1, 300.0), (2, 200.0)):
        run = make_run(sweep, runs[seed], result=result(1.0, fps=fps, startup_s=2.0, save_s=1.0, eval_s=3.0,
                                                        host="node7"))
        start, end = spans[seed]
        run.write_status(RunStatus(state=RunState.SUCCEEDED, attempts=1, started_at=start, ended_at=end))
    make_run(sweep, runs[3], RunState.FAILED, result={"fps": 5.0, "timesteps": 10})  # no final evaluation
    earlier = earlier_runs(SweepDir(sweep), runs)
    assert earlier is not None
    assert earlier.speeds == {("v", 1, "ppo"): Speed(200.0, 6.0)}
    assert earlier.at_once == 2 and earlier.hosts == ("node7",)  # seed 2 began as seed 1 ended
    assert earlier_runs(SweepDir(sweep), runs[3:]) is None
