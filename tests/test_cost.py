"""What a sweep will cost (plan/cost.py, plan/speeds.py) and the lines `sweep run --dry-run` prints about it:
the arithmetic against numbers worked out by hand, speeds read from real run folders and a real bench record,
and the real command on configs/smoke.yaml and on a folder with earlier runs."""

from __future__ import annotations

import os
import re
from pathlib import Path

from helpers.commands import run_sweep, write_spec
from helpers.fake_sweep import make_run, result, run_spec
from helpers.models import REPO, TINY_LONG_XML
from mjsweep.bench import recommend
from mjsweep.plan.cost import BenchSpeed, EarlierRuns, Measurements, Source, Speed, estimate, queue_wall_s
from mjsweep.plan.speeds import earlier_runs
from mjsweep.sweepdir.files import SweepDir
from mjsweep.sweepdir.files import append_line as append
from mjsweep.sweepdir.models import RunState, RunStatus, TrialRecord, TrialState
from mjsweep.ui.console_tables import cost_lines


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


def test_the_lines_say_the_time_the_speed_and_where_it_comes_from():
    runs = [run_spec("v", seed, total=1000) for seed in range(4)]
    lines = cost_lines(estimate(runs, 2, measured(100.0, overhead_s=5.0, at_once=2)), skipped=3, here="here")
    assert lines[0] == ("cost: 4 runs (3 succeeded already, not counted), 4,000 env steps; "
                        "about 30 s on this machine at 2 runs at once")
    assert lines[1] == ("  speed: 100 env steps/s per run plus up to 5 s each for start-up, saving and evaluation, "
                        "from earlier runs of these variants in this sweep folder (measured with up to 2 at once); "
                        "retries not counted")
    many = [run_spec("v", seed, total=9_000_000) for seed in range(18)]
    assert "18 runs, 162.0M env steps; about 10 h on this machine at 2 runs at once" in \
        cost_lines(estimate(many, 2, measured(2250.0)))[0]
    low, high = estimate(runs[:3], 2, measured(100.0)), estimate(runs, 2, measured(100.0))
    assert cost_lines(low, at_max=high)[0] == ("cost: 3 to 4 runs (min to max seeds), 3,000 to 4,000 env steps; "
                                               "about 20 s at min seeds, 20 s at max seeds on this machine at 2 "
                                               "runs at once")


def test_without_a_measurement_the_wall_time_is_unknown_and_the_line_says_how_to_get_one():
    runs = [run_spec("v", 0, total=1000)]
    assert cost_lines(estimate(runs, 2, Measurements())) == [
        "cost: 1 run, 1,000 env steps; wall time unknown: no run of these variants finished here and no "
        "`sweep bench` result; run `sweep bench --env HalfCheetah-v5` for an estimate"]
    own_env = [run_spec("v", 0, env="mjsweep/Locomotion-v0")]
    assert cost_lines(estimate(own_env, 2, Measurements()))[0].endswith(
        "run `sweep bench --env mjsweep/Locomotion-v0 --xml XML` (a variant's model) for an estimate")
    half = estimate([*runs, run_spec("w", 0, algo="sac")], 2, Measurements(measured(100.0).earlier))
    assert "wall time unknown: no run of w finished here and no `sweep bench` result" in cost_lines(half)[0]
    ant = Measurements(bench=BenchSpeed("Ant-v5", "ppo", 1, 250.0, 2, "2025-01-01"))
    assert ("wall time unknown: no run of these variants finished here, and `sweep bench` measured Ant-v5/PPO, not "
            "HalfCheetah-v5/PPO; run `sweep bench --env HalfCheetah-v5`") in cost_lines(estimate(runs, 2, ant))[0]
    sac = [run_spec("v", 0, algo="sac")]
    assert "`sweep bench` measures PPO with one env" in cost_lines(estimate(sac, 2, Measurements()))[0]


def _cost(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith(("cost: ", "  speed: "))]


def test_the_dry_run_of_the_smoke_config_prints_its_cost_and_writes_nothing(tmp_path: Path):
    done = run_sweep("run", str(REPO / "configs" / "smoke.yaml"), "--dry-run", "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert _cost(done.stdout) == ["cost: 4 runs, 8,192 env steps; wall time unknown: no run of these variants "
                                  "finished here and no `sweep bench` result; run `sweep bench --env "
                                  "HalfCheetah-v5` for an estimate"]
    assert not (tmp_path / "runs").exists()


def test_the_dry_run_prices_by_earlier_runs_else_by_the_bench_and_writes_nothing(tmp_path: Path, tiny_spec):
    tiny_spec["variants"].append({"name": "long", "xml": str(TINY_LONG_XML)})
    tiny_spec.update(seeds=2, total_timesteps=1000)
    spec = write_spec(tmp_path, tiny_spec)
    recommend.save(2, len(os.sched_getaffinity(0)), "HalfCheetah-v5", 400.0)  # this test's cache (conftest)
    benched = run_sweep("run", str(spec), "--dry-run", cwd=tmp_path)  # --workers: the bench's 2
    assert benched.returncode == 0, benched.stdout + benched.stderr
    assert _cost(benched.stdout)[0] == "cost: 4 runs, 4,000 env steps; about 10 s on this machine at 2 runs at once"
    assert "200 env steps/s per run, from `sweep bench` of HalfCheetah-v5/PPO" in _cost(benched.stdout)[1]
    assert "at 2 runs at once (start-up and evaluation included)" in _cost(benched.stdout)[1]

    walker_s0 = re.search(r"walker_s0_[0-9a-f]+", benched.stdout)
    assert walker_s0 is not None
    sweep = tmp_path / "runs" / "tiny"
    make_run(sweep, run_spec("walker", 0, total=1000, run_id=walker_s0.group()), RunState.SUCCEEDED,
             result=result(1.0, fps=100.0, timesteps=1000))
    before = sorted(p for p in tmp_path.rglob("*"))
    again = run_sweep("run", str(spec), "--dry-run", "--workers", "2", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    # walker's second seed at its own 100/s, long's two seeds at the other variants' 100/s: 10 s each.
    assert _cost(again.stdout)[0] == ("cost: 3 runs (1 succeeded already, not counted), 3,000 env steps; "
                                      "about 20 s on this machine at 2 runs at once")
    assert ("from earlier runs of these variants in this sweep folder for 1 run; earlier runs of its other "
            "variants (same algorithm and n_envs) for 2 runs") in _cost(again.stdout)[1]
    assert sorted(p for p in tmp_path.rglob("*")) == before


def test_a_search_dry_run_prints_its_budget_at_most_less_the_trials_that_ended(tmp_path: Path, tiny_spec):
    tiny_spec.pop("seeds", None)
    tiny_spec["search"] = {"method": "random", "trials": 4, "seeds_per_trial": 2, "seed": 3,
                           "space": {"ppo.learning_rate": {"log_uniform": [1.0e-5, 1.0e-3]},
                                     "total_timesteps": {"int": [256, 1024]}}}
    spec = write_spec(tmp_path, tiny_spec)
    recommend.save(2, len(os.sched_getaffinity(0)), "HalfCheetah-v5", 400.0)
    fresh = run_sweep("run", str(spec), "--dry-run", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    # 8 runs of at most 1024 steps at the bench's 200/s per run, 2 at once: 4 rounds of 5.12 s.
    assert _cost(fresh.stdout)[0] == ("cost: at most 8 runs (1 study x 4 trials x 2 seeds, each to the space's "
                                      "largest total_timesteps), 8,192 env steps; at most about 20 s on "
                                      "this machine at 2 runs at once")
    assert not (tmp_path / "runs").exists()

    sweep = tmp_path / "runs" / "tiny"
    trial = run_spec("walker", 0, total=1024, run_id="t000_walker_s0")
    make_run(sweep, trial, RunState.SUCCEEDED, result=result(1.0, fps=100.0, timesteps=1024))
    append(sweep / "trials.jsonl", TrialRecord(study="walker", number=0, params={}, runs=[trial.run_id],
                                               state=TrialState.COMPLETE, value=1.0, seeds_ok=1))
    before = sorted(tmp_path.rglob("*"))
    again = run_sweep("run", str(spec), "--dry-run", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    # 3 trials x 2 seeds at the ended trial's 100/s, 2 at once: 3 rounds of 10.24 s.
    assert _cost(again.stdout)[0].startswith("cost: at most 6 runs (3 trials left of 1 study x 4 trials x 2 seeds")
    assert "at most about 31 s on this machine at 2 runs at once" in _cost(again.stdout)[0]
    assert "from earlier runs of these variants" in _cost(again.stdout)[1]
    assert sorted(tmp_path.rglob("*")) == before
