"""`sweep bench`: a real tiny bench end to end (its figures complete and consistent, not its speed),
plus the pure pieces: batch sizes, the table, the recommendation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.commands import run_sweep, write_spec
from helpers.models import TINY_XML
from mjsweep.bench import AlgoOverhead, Batch, BenchConfig, BenchReport, CheckCost, ScaleFigures, batch_sizes, recommend
from mjsweep.bench.batches import mjsweep_batch
from mjsweep.bench.contender import MISSING, command, gnu_parallel, parallel_batch
from mjsweep.bench.figures import LaunchFigures
from mjsweep.bench.launch import measure_launch
from mjsweep.childproc import THREAD_VARS
from mjsweep.engine import profile
from mjsweep.ui.bench_table import COLUMNS, render
from mjsweep.ui.live import make_progress

STEPS, N_STEPS = 256, 128


def _torch_default_threads() -> int:
    """What torch picks in a fresh process with no thread caps: what the naive pool must see."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                         capture_output=True, text=True, env=env, check=True, timeout=120)
    return int(out.stdout.strip())


@pytest.mark.slow
def test_tiny_bench_reports_every_figure_consistently(tmp_path: Path):
    # The caller's shell caps threads: the naive baseline must still get torch's defaults.
    markdown = tmp_path / "table.md"
    done = run_sweep("bench", "--env", "HalfCheetah-v5", "--xml", str(TINY_XML), "--steps", str(STEPS),
                     "--n-steps", str(N_STEPS), "--max-workers", "2", "--scale-runs", "40", "--overhead", "a2c",
                     "--json", "--markdown", str(markdown), cwd=tmp_path, env={"OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    cores = len(os.sched_getaffinity(0))
    [overhead] = report["overhead"]
    assert overhead["algo"] == "a2c" and overhead["steps"] == STEPS and overhead["plain_s"] > 0

    mj = report["mjsweep"]
    assert [b["n"] for b in mj] == batch_sizes(2, cores)
    solo = mj[0]
    assert solo["n"] == 1 and report["solo_fps"] == pytest.approx(solo["aggregate_fps"], abs=0.1)
    for b in mj:
        assert b["kind"] == "mjsweep" and b["failed"] == 0
        assert b["timesteps"] == b["n"] * STEPS  # every run trained, and only what it was asked to
        assert b["aggregate_fps"] == pytest.approx(b["timesteps"] / b["wall_s"], rel=0.01, abs=0.1)
        per_core = b["aggregate_fps"] / (min(b["n"], cores) * solo["aggregate_fps"])
        assert b["efficiency"] == pytest.approx(per_core, abs=0.002)
        assert b["torch_threads"] == 1
        assert 0 < b["startup_s"] < b["wall_s"]
        assert b["peak_rss_mb"] > 50 and b["run_fps"] > 0
        assert 0 < b["peak_uss_mb"] < b["peak_rss_mb"]
        assert b["rollout_s"] > 0 and b["train_s"] > 0
        assert b["spread_s"] >= 0 and (b["n"] > 1 or b["spread_s"] == 0)
        assert 0 <= b["launcher_cpu"] < 1
        assert b["workers_cpu_s"] > 0 and b["cores_busy"] == pytest.approx(
            b["workers_cpu_s"] / (b["wall_s"] * min(b["n"], cores)), abs=0.002)

    naive = report["naive"]
    assert naive["kind"] == "naive" and naive["n"] == cores
    assert naive["timesteps"] == cores * STEPS
    assert naive["torch_threads"] == _torch_default_threads()
    assert naive["workers_cpu_s"] > 0 and naive["cores_busy"] > 0
    # Both kinds of batch count a run's fps over its rollout + update seconds alone.
    assert naive["rollout_s"] > 0 and naive["train_s"] > 0
    assert solo["run_fps"] == pytest.approx(STEPS / (solo["rollout_s"] + solo["train_s"]), rel=0.01)
    at_cores = max((b for b in mj if b["n"] <= cores), key=lambda b: b["n"])
    assert report["speedup_over_naive"] == pytest.approx(at_cores["aggregate_fps"] / naive["aggregate_fps"],
                                                         rel=0.01)
    assert report["recommended_workers"] in [b["n"] for b in mj]

    parallel = report["parallel"]
    if parallel is None:  # GNU parallel missing: said in one line, and no figure pretends otherwise
        assert report["parallel_skipped"] and report["ratio_to_parallel"] is None
        assert report["parallel_skipped"] in done.stderr
    else:
        assert parallel["kind"] == "parallel" and parallel["n"] == cores and parallel["failed"] == 0
        assert parallel["timesteps"] == cores * STEPS and parallel["torch_threads"] == 1
        assert parallel["peak_rss_mb"] > 50 and parallel["rollout_s"] > 0 and parallel["train_s"] > 0
        assert report["ratio_to_parallel"] == pytest.approx(at_cores["aggregate_fps"] / parallel["aggregate_fps"],
                                                            rel=0.01)

    launch = report["launch"]
    assert 0 < launch["to_first_run_s"] and 0 < launch["worker_startup_s"]
    assert launch["to_first_env_step_s"] == pytest.approx(launch["to_first_run_s"] + launch["worker_startup_s"],
                                                          abs=0.002)
    template = report["launch_template"]  # side by side, in the same run
    assert launch["start_with"] == "exec" and template["start_with"] == "template"
    assert report["template_launch_ratio"] == pytest.approx(template["later_startup_s"] / launch["later_startup_s"],
                                                            abs=0.002)

    checks = report["checks"]  # the worker's own wrapper and parameter check, timed on this env and policy
    assert checks["step_us"] > 0 and checks["update_us"] > 0 and checks["steps_per_update"] == N_STEPS
    assert report["check_share"] == pytest.approx(
        (checks["step_us"] + checks["update_us"] / N_STEPS) * solo["run_fps"] / 1e6, rel=0.01)

    scale = report["scale"]
    assert scale["runs"] == 40
    assert 0 < scale["dry_run_cpu_s"] and 0 < scale["status_cpu_s"] and scale["dry_run_s"] > 0 and scale["status_s"] > 0
    assert report["config"]["ppo"] == {"n_steps": N_STEPS} and report["config"]["cores"] == cores

    # The same figures as a Markdown table, and the recommendation kept for `sweep run`.
    table = markdown.read_text()
    rows = [line for line in table.splitlines() if line.startswith("| mjsweep") or line.startswith("| naive")]
    assert [row.split("|")[2].strip() for row in rows] == [str(b["n"]) for b in mj] + [str(cores)]
    assert f"{solo['efficiency']:.2f}" in rows[0] and f"`sweep run --workers {report['recommended_workers']}`" in table
    assert profile.load(cores).workers == report["recommended_workers"]
    assert f"defaults to --workers {report['recommended_workers']}" in done.stderr


def test_bench_rejects_a_missing_xml(tmp_path: Path):
    done = run_sweep("bench", "--xml", str(tmp_path / "nope.xml"), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().startswith("error: --xml") and "nope.xml" in done.stderr


def test_bench_rejects_an_env_without_a_default_xml(tmp_path: Path):
    done = run_sweep("bench", "--env", "CartPole-v1", "--scale-runs", "0", cwd=tmp_path)
    assert done.returncode == 2
    assert "error: " in done.stderr and "--xml" in done.stderr


def test_batch_sizes_double_and_include_cores_and_the_maximum():
    assert batch_sizes(4, 2) == [1, 2, 4]
    assert batch_sizes(12, 6) == [1, 2, 4, 6, 8, 12]
    assert batch_sizes(1, 2) == [1]


def _batch(kind: str, n: int, wall: float, **extra) -> Batch:
    fields = {"run_fps": 700.0, "rollout_s": 8.0, "train_s": 3.0, "startup_s": 1.9, "peak_rss_mb": 330.0,
              "torch_threads": 1, "launcher_cpu": 0.002}
    fields.update(extra)
    return Batch(kind=kind, n=n, wall_s=wall, timesteps=n * 8192, **fields)


def _report() -> BenchReport:
    mj = [_batch("mjsweep", 1, 10.0), _batch("mjsweep", 2, 10.5), _batch("mjsweep", 4, 20.5)]
    naive = _batch("naive", 2, 70.0, rollout_s=None, train_s=None, torch_threads=2, launcher_cpu=None)
    return BenchReport(BenchConfig(cores=2, max_workers=4), mj, naive, ScaleFigures(10_000, 1.2, 1.1, 0.8, 0.7),
                       "host", "cpu", 0.1)


def test_report_figures_and_recommendation():
    report = _report()
    assert report.solo.aggregate == pytest.approx(819.2)
    assert report.efficiency(report.mjsweep[1]) == pytest.approx(10.0 / 10.5)
    assert report.efficiency(report.mjsweep[2]) == pytest.approx(10.0 / 10.25)  # 4 runs, 2 cores: vs 2 x solo
    assert report.at_cores().n == 2
    assert report.speedup_over_naive == pytest.approx(70.0 / 10.5)
    # N=4 is 2.4% ahead of N=2: within 3%, so the smaller batch is recommended.
    assert report.recommended_workers() == 2
    assert report.recommended_workers(tolerance=0.01) == 4


def test_the_checks_cost_is_judged_against_the_solo_runs_training_step():
    base = _report()  # solo run fps 700: a training step of 1,429 us
    report = BenchReport(base.config, base.mjsweep, base.naive, base.scale, "host", "cpu", 0.1,
                         checks=CheckCost(step_us=7.0, update_us=2048.0, steps_per_update=2048))
    assert report.check_share == pytest.approx(8.0 * 700 / 1e6)
    text = render(report)
    assert "| non-finite checks <= 1% of a training step | 0.56% | yes |" in text
    assert "- non-finite checks: 7.0 us an env step (VecCheckNan) + 2048 us an update of 2048 steps" in text
    assert base.check_share is None and "non-finite" not in render(base)
    assert report.to_dict()["checks"] == {"step_us": 7.0, "update_us": 2048.0, "steps_per_update": 2048}


def test_each_algorithm_through_the_worker_has_its_line_its_target_and_its_json():
    base = _report()
    overhead = (AlgoOverhead("ppo", 4096, 4.0, 4.02, 1.005, 0.004, 3, 3.5, 0.0042, 0.00463),
                AlgoOverhead("sac", 600, 6.0, 6.3, 1.05, 0.02, 3, 3.5, 0.09, 0.0153))
    report = BenchReport(base.config, base.mjsweep, base.naive, base.scale, "host", "cpu", 0.1, overhead=overhead)
    text = render(report)
    # The target judges what is timed in place; the whole trainings' ratio is beside it, with its noise.
    assert "| ppo through the worker adds <= 1% to plain SB3 | 0.46% | yes |" in text
    assert "| sac through the worker adds <= 1% to plain SB3 | 1.53% | NO |" in text
    assert ("- ppo through the worker adds 0.46% to plain SB3's training, timed in place: 3.5 us an env step "
            "(env stack) x 4096 steps + 4.2 ms in the recorder's hooks beyond plain SB3's, against 4.00 s; whole "
            "trainings 1.005x plain SB3's CPU time (4.02 s against 4.00 s; median of 3 alternated pairs, spread "
            "0.004)") in text
    assert report.to_dict()["overhead"][1] == {"algo": "sac", "steps": 600, "plain_s": 6.0, "worker_s": 6.3,
                                               "ratio": 1.05, "spread": 0.02, "rounds": 3, "env_stack_us": 3.5,
                                               "recorder_s": 0.09, "added": 0.0153}
    assert "through the worker" not in render(base)


@pytest.mark.slow
def test_a_pair_trains_the_same_steps_plain_and_through_the_worker():
    from mjsweep.bench.overhead import ROUNDS, time_pair

    figure = time_pair("HalfCheetah-v5", str(TINY_XML), "sac", 120)
    assert (figure.algo, figure.steps, figure.rounds) == ("sac", 120, ROUNDS)
    assert figure.plain_s > 0 and figure.worker_s > 0 and figure.spread >= 0
    assert figure.ratio > 0
    # The worker's stack does more than a Monitor at every step; its recorder more than SB3's empty callback.
    assert figure.env_stack_us > 0 and figure.recorder_s > 0
    assert figure.added == pytest.approx((figure.env_stack_us * 1e-6 * 120 + figure.recorder_s) / figure.plain_s,
                                         rel=0.01, abs=1e-5)


def test_the_hook_timer_sums_the_time_spent_in_each_hook_and_only_there():
    from stable_baselines3.common.callbacks import ConvertCallback

    from mjsweep.bench.overhead import HookTimer

    slept: list[float] = []

    def busy(locals_, globals_):  # a callback that spends 2 ms of CPU at each step
        started = time.thread_time()
        while time.thread_time() - started < 0.002:
            pass
        slept.append(time.thread_time() - started)
        return True

    callback = ConvertCallback(busy)
    timer = HookTimer(callback)
    assert 0 < timer.timer_ns < 100_000  # what one timed call of nothing adds
    callback.n_calls = 0
    callback.model = type("Model", (), {"num_timesteps": 0})()
    for _ in range(5):
        callback.on_step()
    assert timer.calls == 5
    assert timer.seconds() >= 0.9 * sum(slept)  # wall time in the hooks covers the CPU time spent there


def test_the_hooks_left_untimed_are_sb3s_own_in_the_recorder_too():
    from stable_baselines3.common.callbacks import BaseCallback

    from mjsweep.bench.overhead import HookTimer
    from mjsweep.worker.iterations import IterationRecorder

    untimed = [name for name in ("update_locals", "update_child_locals") if name not in HookTimer.HOOKS]
    assert untimed == ["update_locals", "update_child_locals"]
    assert all(getattr(IterationRecorder, name) is getattr(BaseCallback, name) for name in untimed)


@pytest.mark.parametrize(("value", "expected"), [("none", "()"), ("ppo, sac", "('ppo', 'sac')")])
def test_overhead_names_the_algorithms(value, expected):
    from mjsweep.ui.bench_view import overhead_algos

    assert str(overhead_algos(value)) == expected


def test_an_unknown_overhead_algorithm_is_one_line_and_exit_2(tmp_path: Path):
    done = run_sweep("bench", "--overhead", "ppo,dqn", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("error: --overhead 'dqn': choose among ppo, sac, td3")


def test_table_has_a_row_per_batch_and_every_target():
    text = render(_report())
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| batch"))
    rows = [line for line in lines[header + 2:lines.index("", header)] if line.startswith("|")]
    assert len(rows) == 4 and all(row.count("|") == len(COLUMNS) + 1 for row in rows)
    assert rows[0].startswith("| mjsweep (solo) | 1 |") and rows[-1].startswith("| naive | 2 |")
    assert "recommended: `sweep run --workers 2`" in text
    targets = [line for line in lines[lines.index("| target | measured | met |") + 2:] if line.startswith("|")]
    assert len(targets) == 7 and all(row.count("|") == 4 for row in targets)
    assert "| >= 5x the naive pool at N = 2 | 6.7x | yes |" in targets
    assert "| scaling efficiency at N = 2 (usable cores) >= 0.95 | 0.95 | yes |" in targets
    assert "| `sweep status` over 10000 runs < 1 s | 0.80 s | yes |" in targets


def test_bench_rejects_a_markdown_file_in_a_missing_folder(tmp_path: Path):
    done = run_sweep("bench", "--markdown", str(tmp_path / "no" / "table.md"), cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("error: --markdown")


def test_recommendation_is_kept_per_machine_kind(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MJSWEEP_CACHE_DIR", str(tmp_path))
    assert profile.load(2) is None
    assert profile.default_workers(2).workers == 2  # nothing measured: one run per usable core
    recommend.save(4, 2, "Ant-v5", 1356.0)
    recommend.save(12, 8, "Ant-v5", 5000.0)
    assert profile.load(2).workers == 4 and profile.load(8).workers == 12
    assert profile.load(3) is None  # measured on another core count: not this machine's figure
    chosen = profile.default_workers(2)
    assert chosen.workers == 4 and "sweep bench" in chosen.source
    (tmp_path / profile.FILE_NAME).write_text("{not json")
    assert profile.load(2) is None  # a broken cache never stops a sweep


@pytest.mark.slow
def test_sweep_run_uses_the_measured_workers_and_says_so(tmp_path: Path, tiny_spec):
    cores = len(os.sched_getaffinity(0))
    recommend.save(1, cores, "HalfCheetah-v5", 100.0)  # into this test's private cache (conftest)
    tiny_spec.update(seeds=2, total_timesteps=256)
    done = run_sweep("run", str(write_spec(tmp_path, tiny_spec)), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "workers: 1 (measured best by `sweep bench`" in done.stderr
    spans = sorted((s["started_at"], s["ended_at"]) for s in
                   (json.loads(p.read_text()) for p in (tmp_path / "runs" / "tiny").glob("*/status.json")))
    assert len(spans) == 2 and spans[0][1] <= spans[1][0]  # one at a time: the second began after the first ended

    explicit = run_sweep("run", str(write_spec(tmp_path, tiny_spec)), "--workers", "2", cwd=tmp_path)
    assert explicit.returncode == 0 and "workers:" not in explicit.stderr  # --workers wins, nothing to say


def test_launcher_lists_a_workers_process_tree_once_per_interval(monkeypatch):
    # Listing children reads every process's stat file: at every poll it was most of the launcher's CPU.
    import psutil

    from mjsweep.launchers.local import LocalHandle

    listed = []
    real_children = psutil.Process.children
    monkeypatch.setattr(psutil.Process, "children", lambda self, **kw: listed.append(1) or real_children(self, **kw))
    proc = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"],
                            start_new_session=True, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "up\n"  # an interpreter, not a process image just exec'd with no RSS yet
    handle = LocalHandle(proc)
    try:
        for _ in range(5):
            assert handle.poll() is None
        assert len(listed) == 1  # once, then only the known processes' RSS
        assert handle.peak_rss_mb() > 1  # and the RSS is still sampled
    finally:
        handle.kill()
        proc.wait(timeout=30)
        proc.stdout.close()


def _report_with_parallel(**extra) -> BenchReport:
    base = _report()
    parallel = _batch("parallel", 2, 11.0, peak_rss_mb=350.0)
    return BenchReport(base.config, base.mjsweep, base.naive, base.scale, "host", "cpu", 0.1, parallel=parallel,
                       **extra)


def test_the_gnu_parallel_contender_has_its_row_its_ratio_its_memory_and_a_target():
    report = _report_with_parallel()
    assert report.ratio_to_parallel == pytest.approx(11.0 / 10.5)
    figures = report.to_dict()
    assert figures["ratio_to_parallel"] == pytest.approx(11.0 / 10.5, abs=0.001)
    assert figures["parallel"]["peak_rss_mb"] == 350.0 and figures["parallel_skipped"] is None
    text = render(report)
    rows = [line for line in text.splitlines() if line.startswith("| GNU parallel | 2 |")]
    assert len(rows) == 1 and rows[0].count("|") == len(COLUMNS) + 1
    assert "- mjsweep at N=2: 1.05x GNU parallel's 1489 env-steps/s" in text
    assert "- memory per run (largest peak RSS): mjsweep 330 MiB, GNU parallel 350 MiB" in text
    assert "| >= 1.0x GNU parallel at N = 2 | 1.05x | yes |" in text


def test_the_memory_per_run_is_what_one_more_run_adds_beside_the_rss():
    base = _report()
    mj = [_batch("mjsweep", 1, 10.0, peak_uss_mb=240.0), _batch("mjsweep", 2, 10.5, peak_uss_mb=120.4),
          _batch("mjsweep", 4, 20.5, peak_uss_mb=118.0)]
    report = BenchReport(base.config, mj, base.naive, base.scale, "host", "cpu", 0.1)
    assert [b["peak_uss_mb"] for b in report.to_dict()["mjsweep"]] == [240.0, 120.4, 118.0]
    assert report.to_dict()["naive"]["peak_uss_mb"] is None
    text = render(report)
    header = next(line for line in text.splitlines() if line.startswith("| batch |")).split(" | ")
    rows = {tuple(line.split(" | ")[:2]): line.split(" | ") for line in text.splitlines() if line.startswith("| ")}
    uss, rss = header.index("peak USS MiB"), header.index("peak RSS MiB")
    assert (rows["| mjsweep", "2"][rss], rows["| mjsweep", "2"][uss]) == ("330", "120")
    assert rows["| naive", "2"][uss] == "-"  # the contenders' own memory is not measured apart
    assert "- what one more run adds (largest peak USS, the memory admission's measure): mjsweep 120 MiB at N=2" in text


def test_an_mjsweep_batch_reports_its_runs_uss_as_the_launcher_measured_it(tmp_path: Path):
    config = BenchConfig(env="HalfCheetah-v5", steps=STEPS, ppo={"n_steps": N_STEPS}, max_episode_steps=100,
                         cores=2)
    batch = mjsweep_batch(config, TINY_XML, 2, tmp_path / "bench", make_progress)
    statuses = [json.loads(path.read_text()) for path in (tmp_path / "bench" / "runs").glob("*/*/status.json")]
    assert batch.failed == 0 and len(statuses) == 2
    assert batch.peak_uss_mb == max(status["peak_uss_mb"] for status in statuses)
    assert 0 < batch.peak_uss_mb < batch.peak_rss_mb


def test_a_skipped_contender_is_one_line_and_no_figure():
    base = _report()
    report = BenchReport(base.config, base.mjsweep, base.naive, base.scale, "host", "cpu", 0.1,
                         parallel_skipped=MISSING)
    assert report.ratio_to_parallel is None and report.to_dict()["parallel"] is None
    text = render(report)
    assert text.count("GNU parallel") == 1 and f"- {MISSING}" in text


def test_gnu_parallel_is_found_only_when_it_is_gnu_parallel(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gnu_parallel() is None
    fake = tmp_path / "parallel"
    fake.write_text("#!/bin/sh\necho 'parallel from moreutils'\n")
    fake.chmod(0o755)
    assert gnu_parallel() is None
    fake.write_text("#!/bin/sh\necho 'GNU parallel 20221122'\n")
    assert gnu_parallel() == str(fake)


def test_the_contender_runs_one_training_per_seed_with_one_thread_each():
    argv = command("/usr/bin/parallel", 3, Path("/b/train_one.py"), Path("/b/job.json"), Path("/b/out"))
    assert argv[:4] == ["/usr/bin/parallel", "--will-cite", "-j", "3"]
    assert argv[argv.index(":::") + 1:] == ["0", "1", "2"]
    assert "{}" in argv and "/b/out/{}.json" in argv


@pytest.mark.skipif(gnu_parallel() is None, reason="GNU parallel is not installed")
def test_a_real_gnu_parallel_batch_reports_consistent_figures(tmp_path: Path):
    config = BenchConfig(env="HalfCheetah-v5", steps=STEPS, ppo={"n_steps": N_STEPS}, max_episode_steps=100,
                         cores=2)
    batch = parallel_batch(config, TINY_XML, 2, tmp_path / "parallel", gnu_parallel())
    assert batch.kind == "parallel" and batch.failed == 0 and batch.timesteps == 2 * STEPS
    assert batch.torch_threads == 1 and batch.peak_rss_mb > 50 and batch.workers_cpu_s > 0
    # the mean of each run's fps, next to the fps of the mean run: near, not equal, when runs differ
    assert batch.run_fps == pytest.approx(STEPS / (batch.rollout_s + batch.train_s), rel=0.5)
    assert 0 < batch.startup_s < batch.wall_s
    for seed in (0, 1):  # each training recorded its episodes, as an mjsweep run's monitor.csv does
        rows = (tmp_path / "parallel" / "results" / f"{seed}.monitor.csv").read_text().splitlines()
        assert rows[1] == "r,l,t" and len(rows) > 2


def test_the_launch_figures_are_in_the_summary_and_the_json():
    base = _report()
    report = BenchReport(base.config, base.mjsweep, base.naive, base.scale, "host", "cpu", 0.1,
                         launch=LaunchFigures(1.25, 2.5, "exec", 2.4),
                         launch_template=LaunchFigures(3.0, 2.0, "template", 0.3))
    assert report.to_dict()["launch"] == {"to_first_run_s": 1.25, "worker_startup_s": 2.5, "start_with": "exec",
                                          "later_startup_s": 2.4, "to_first_env_step_s": 3.75}
    assert report.to_dict()["launch_template"]["to_first_env_step_s"] == 5.0
    assert report.to_dict()["template_launch_ratio"] == 0.125  # 0.3 / 2.4: the later runs' launches
    text = render(report)
    assert ("- `sweep run --start exec` to first run started: 1.25 s; to its first env step: 3.75 s (the worker's "
            "own start-up 2.50 s; the next run's 2.40 s)") in text
    assert "- a run's launch to first env step through the template: 0.12x the exec's" in text
    assert "| a run's launch to first env step through the template <= 1/4 of an exec's | 0.12x | yes |" in text
    assert "sweep run --start" not in render(base) and base.to_dict()["launch"] is None
    assert base.template_launch_ratio is None and "through the template" not in render(base)


# The template is the default start; exec is tested with the slow tests.
@pytest.mark.parametrize("start_with", [pytest.param("exec", marks=pytest.mark.slow), "template"])
def test_a_real_launch_is_timed_to_its_first_run_and_first_env_step(tmp_path: Path, start_with):
    config = BenchConfig(env="HalfCheetah-v5", steps=STEPS, ppo={"n_steps": N_STEPS}, max_episode_steps=100)
    figures = measure_launch(config, TINY_XML, tmp_path / "launch", start_with)
    assert figures.start_with == start_with
    assert 0 < figures.to_first_run_s and 0 < figures.worker_startup_s and 0 < figures.later_startup_s
    assert figures.to_first_env_step_s == pytest.approx(figures.to_first_run_s + figures.worker_startup_s)
    runs = [d for d in (tmp_path / "launch" / "runs" / "launch").iterdir() if (d / "result.json").exists()]
    assert len(runs) == 2 and {json.loads((d / "result.json").read_text())["started_by"] for d in runs} == {start_with}
