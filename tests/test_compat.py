"""Sweep folders written by earlier versions stay readable by every command, and `sweep run` on their spec
finishes them.

tests/fixtures/schema1_sweep (files without a `schema` field) is a real sweep of 1 variant x 2 seeds: seed 0
succeeded, seed 1 was stopped by SIGINT with a checkpoint at 1024 of its 2048 timesteps. Its finished run's
model files were deleted to keep it small.

tests/fixtures/schema2_sweep was written by the release before the sweep folder's formats moved into one
package: a random search (1 trial x 2 seeds per study) over two variants x `algo: [ppo, sac]`, with
`normalize`, `eval.every`, a cross-evaluation, and the SAC run on walker-long stopped by SIGINT with a
checkpoint (model, statistics, replay buffer) at 265 of 1024 timesteps. The finished SAC runs' replay
buffers were deleted to keep it small.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from helpers.commands import run_sweep, write_spec
from helpers.models import TINY_LONG_XML, TINY_XML

FIXTURE = Path(__file__).parent / "fixtures" / "schema1_sweep"
DONE, STOPPED = "walker_s0_b95a302d", "walker_s1_3300fee5"


@pytest.fixture
def old_sweep(tmp_path) -> tuple[Path, Path]:
    """The fixture copied into tmp_path/runs/schema1, and the spec that produced it."""
    sweep_dir = tmp_path / "runs" / "schema1"
    shutil.copytree(FIXTURE, sweep_dir)
    spec = write_spec(tmp_path, {
        "name": "schema1", "env": "HalfCheetah-v5", "max_episode_steps": 100,
        "variants": [{"name": "walker", "xml": str(TINY_XML)}], "seeds": 2, "total_timesteps": 2048,
        "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1}, "eval": {"episodes": 1},
        "checkpoint_every": 256, "runs_dir": "runs"})
    return sweep_dir, spec


def test_status_reads_an_old_sweep_folder(old_sweep):
    sweep_dir, _ = old_sweep
    proc = run_sweep("status", "--json", str(sweep_dir))
    assert proc.returncode == 0, proc.stderr
    runs = {r["run_id"]: r for r in json.loads(proc.stdout)["runs"]}
    assert runs[DONE]["state"] == "succeeded" and runs[DONE]["final_return"] == pytest.approx(-5.71643)
    assert runs[STOPPED]["state"] == "interrupted" and runs[STOPPED]["timesteps"] == 1024
    assert not any(r["problems"] for r in runs.values())
    (sweep_dir / "index.jsonl").unlink()  # the run files alone say the same
    again = {r["run_id"]: r for r in json.loads(run_sweep("status", "--json", str(sweep_dir)).stdout)["runs"]}
    assert again == runs
    table = run_sweep("status", str(sweep_dir))
    assert table.returncode == 0 and DONE in table.stdout and STOPPED in table.stdout


def test_report_and_plot_read_an_old_sweep_folder(old_sweep, tmp_path):
    sweep_dir, _ = old_sweep
    proc = run_sweep("report", str(sweep_dir))
    assert proc.returncode == 0, proc.stderr
    [row] = list(csv.DictReader((sweep_dir / "report.csv").open()))
    assert row["variant"] == "walker" and row["runs"] == "2" and row["succeeded"] == "1"
    assert float(row["mean_return"]) == pytest.approx(-5.71643)
    plot = run_sweep("plot", str(sweep_dir), "-o", str(tmp_path / "curves.svg"))
    assert plot.returncode == 0, plot.stderr
    assert (tmp_path / "curves.svg").stat().st_size > 0 and (tmp_path / "curves_final.svg").stat().st_size > 0


def test_run_on_the_same_spec_resumes_the_stopped_run(old_sweep):
    sweep_dir, spec = old_sweep
    done_before = {p.name: p.read_bytes() for p in (sweep_dir / DONE).iterdir() if p.is_file()}
    proc = run_sweep("run", str(spec), "--workers", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 to run, 1 already succeeded" in proc.stdout
    assert {p.name: p.read_bytes() for p in (sweep_dir / DONE).iterdir() if p.is_file()} == done_before
    result = json.loads((sweep_dir / STOPPED / "result.json").read_text())
    assert result["resumed_from"] == 1024 and result["timesteps"] == 2048
    # a checkpoint of an earlier version has no exact state: it resumes re-seeded, and says so
    assert "resuming re-seeded, not exactly: its checkpoint has no exact state (saved by an earlier version)" \
        in (sweep_dir / STOPPED / "log.txt").read_text()
    status = json.loads((sweep_dir / STOPPED / "status.json").read_text())
    assert status["state"] == "succeeded" and status["attempts"] == 2
    variants = json.loads((sweep_dir / "variants.json").read_text())["variants"]
    assert [v["name"] for v in variants] == ["walker"]  # written by this version's launcher
    # the folder had no snapshot: the run resumed now trains from the one this launcher stored
    resumed = json.loads((sweep_dir / STOPPED / "spec.json").read_text())
    assert resumed["xml"].startswith(str(sweep_dir / "snapshots")) and result["xml_sha256"] == resumed["xml_sha256"]


FIXTURE2 = Path(__file__).parent / "fixtures" / "schema2_sweep"
STOPPED2 = "t000_walker-long_algo=sac_ctrl_cost_weight=0.4527_s0_8a99bf1b"
FINAL2 = {  # run id -> its final evaluation, as the release that wrote the fixture read it
    "t000_walker-long_algo=ppo_ctrl_cost_weight=0.08637_s0_62daeb5a": -10.699009,
    "t000_walker-long_algo=ppo_ctrl_cost_weight=0.08637_s1_80850a1c": 8.992592,
    "t000_walker_algo=ppo_ctrl_cost_weight=0.3366_s0_ef0da0c7": -5.962298,
    "t000_walker_algo=ppo_ctrl_cost_weight=0.3366_s1_17cf9e83": 4.564264,
    "t000_walker_algo=sac_ctrl_cost_weight=0.4504_s0_b28e8ab8": 4.20139,
    "t000_walker_algo=sac_ctrl_cost_weight=0.4504_s1_53419354": 5.3904,
}
POLICY_NET = {"policy_kwargs": {"net_arch": [16, 16]}}


@pytest.fixture
def search_sweep(tmp_path) -> tuple[Path, Path]:
    """The schema-2 fixture copied into tmp_path/runs/schema2, and the spec that produced it."""
    sweep_dir = tmp_path / "runs" / "schema2"
    shutil.copytree(FIXTURE2, sweep_dir)
    spec = write_spec(tmp_path, {
        "name": "schema2", "env": "HalfCheetah-v5", "max_episode_steps": 100,
        "variants": [{"name": "walker", "xml": str(TINY_XML)}, {"name": "walker-long", "xml": str(TINY_LONG_XML)}],
        "total_timesteps": 1024, "normalize": True, "grid": {"algo": ["ppo", "sac"]},
        "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1, **POLICY_NET},
        "sac": {"learning_starts": 128, "batch_size": 64, "buffer_size": 2048, **POLICY_NET},
        "eval": {"episodes": 1, "every": 512}, "checkpoint_every": 256, "runs_dir": "runs",
        "search": {"method": "random", "trials": 1, "seeds_per_trial": 2, "objective": {"metric": "best_iqm"},
                   "space": {"env_kwargs.ctrl_cost_weight": {"uniform": [0.05, 0.5]}}, "seed": 0}})
    return sweep_dir, spec


def test_status_reads_a_search_sweep_folder(search_sweep):
    sweep_dir, _ = search_sweep
    proc = run_sweep("status", "--json", str(sweep_dir))
    assert proc.returncode == 0, proc.stderr
    runs = {r["run_id"]: r for r in json.loads(proc.stdout)["runs"]}
    assert {k: r["final_return"] for k, r in runs.items() if r["state"] == "succeeded"} == pytest.approx(FINAL2)
    assert runs[STOPPED2]["state"] == "interrupted"
    assert not any(r["problems"] for r in runs.values())
    (sweep_dir / "index.jsonl").unlink()  # the run files alone say the same
    again = {r["run_id"]: r for r in json.loads(run_sweep("status", "--json", str(sweep_dir)).stdout)["runs"]}
    assert again == runs


def test_report_plot_and_html_read_a_search_sweep_folder(search_sweep, tmp_path):
    sweep_dir, _ = search_sweep
    proc = run_sweep("report", str(sweep_dir))
    assert proc.returncode == 0, proc.stderr
    assert "trial" in proc.stdout  # the search's ranked trials
    rows = {(r["variant"], r["grid"]): r for r in csv.DictReader((sweep_dir / "report.csv").open())}
    sac = rows[("walker", "algo=sac env_kwargs.ctrl_cost_weight=0.4504")]
    assert sac["runs"] == "2" and sac["succeeded"] == "2"
    assert float(sac["mean_return"]) == pytest.approx((4.20139 + 5.3904) / 2, abs=1e-5)
    assert float(sac["mean_best_return"]) == pytest.approx(4.85446)  # from evaluations.csv
    assert float(sac["mean_eval_auc"]) == pytest.approx(4.61433)
    assert rows[("walker-long", "algo=sac env_kwargs.ctrl_cost_weight=0.4527")]["succeeded"] == "0"
    plot = run_sweep("plot", str(sweep_dir), "-o", str(tmp_path / "curves.svg"))
    assert plot.returncode == 0, plot.stderr
    assert (tmp_path / "curves.svg").stat().st_size > 0
    html = run_sweep("report", str(sweep_dir), "--format", "html")
    assert html.returncode == 0, html.stderr
    page = (sweep_dir / "report.html").read_text()
    assert "walker-long" in page and "<figure><svg " in page


def test_evaluate_reads_the_cross_evaluations_already_done(search_sweep):
    sweep_dir, _ = search_sweep
    before = list(csv.DictReader((sweep_dir / "cross" / "matrix.csv").open()))
    proc = run_sweep("evaluate", "--cross", str(sweep_dir), "--episodes", "1", "--workers", "1")
    assert proc.returncode == 0, proc.stderr
    assert "0 pairs to evaluate" in proc.stderr  # every pair's result was read back, none evaluated again
    after = list(csv.DictReader((sweep_dir / "cross" / "matrix.csv").open()))
    # The same pairs, seeds and means; the interval is now Student's t of the same means, not a bootstrap.
    columns = ("train", "test", "seeds", "mean", "skipped")
    assert [{k: row[k] for k in columns} for row in after] == [{k: row[k] for k in columns} for row in before]
    for row in after:
        if row["mean"] and row["seeds"] != "1":
            low, high = float(row["ci95_low"]), float(row["ci95_high"])
            assert low < float(row["mean"]) < high and high - float(row["mean"]) == pytest.approx(
                float(row["mean"]) - low, rel=1e-4)


def test_evaluate_says_an_old_sweep_has_no_model_to_evaluate(old_sweep):
    sweep_dir, _ = old_sweep
    proc = run_sweep("evaluate", "--cross", str(sweep_dir))
    assert proc.returncode == 2 and "no succeeded run with a model.zip" in proc.stderr


def test_html_report_reads_an_old_sweep_folder(old_sweep):
    sweep_dir, _ = old_sweep
    proc = run_sweep("report", str(sweep_dir), "--format", "html")
    assert proc.returncode == 0, proc.stderr
    assert "walker" in (sweep_dir / "report.html").read_text()


@pytest.mark.slow
def test_run_resumes_the_stopped_sac_run_of_a_search(search_sweep):
    sweep_dir, spec = search_sweep
    trials_before = (sweep_dir / "trials.jsonl").read_text()
    proc = run_sweep("run", str(spec), "--workers", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((sweep_dir / STOPPED2 / "result.json").read_text())
    assert result["resumed_from"] == 265 and result["timesteps"] == 1024
    assert result["replay_buffer_resumed"] == 265
    assert "resuming re-seeded, not exactly" in (sweep_dir / STOPPED2 / "log.txt").read_text()
    status = json.loads((sweep_dir / STOPPED2 / "status.json").read_text())
    assert status["state"] == "succeeded" and status["attempts"] == 2
    trials = (sweep_dir / "trials.jsonl").read_text()
    assert trials.startswith(trials_before)  # the record is appended to, never rewritten
    last = [json.loads(line) for line in trials.splitlines() if '"walker-long algo=sac"' in line][-1]
    assert last["state"] == "complete" and last["seeds_ok"] == 2
    for run_id, final in FINAL2.items():  # finished runs are not trained again
        assert json.loads((sweep_dir / run_id / "result.json").read_text())["eval_mean_return"] == pytest.approx(final)


EXACT_PKL_RUN = Path(__file__).parent / "fixtures" / "exact_pkl_run"
"""A tiny PPO run (normalize, 90-step episodes) stopped at 384 timesteps, mid-episode, by the release that
wrote each exact state as exact_<t>.pkl: a pickle holding each env's whole MjData."""


def test_an_exact_state_pickled_by_an_earlier_version_still_resumes_exactly(tmp_path):
    import subprocess
    import sys

    run = tmp_path / "run"
    shutil.copytree(EXACT_PKL_RUN, run)
    spec = json.loads((run / "spec.json").read_text())
    (run / "spec.json").write_text(json.dumps({**spec, "xml": str(TINY_XML), "total_timesteps": 640}))
    proc = subprocess.run([sys.executable, "-m", "mjsweep.worker", str(run)], capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "resuming exactly" in proc.stdout
    result = json.loads((run / "result.json").read_text())
    assert result["resumed_from"] == 384 and result["timesteps"] == 640
    # the checkpoints it wrote hold the state in this version's format, the old pickle gone with its checkpoint
    checkpoint = json.loads((run / "checkpoints" / "checkpoint.json").read_text())
    assert checkpoint["exact_file"] == "exact_640.npz"
    assert not list((run / "checkpoints").glob("exact_*.pkl"))
