"""Tune, then confirm: a search's best trials trained again on fresh seeds, ranked on those, and what the
report says of the optimism the search had."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from helpers.commands import run_sweep, start_sweep, write_spec
from helpers.models import TINY_XML
from mjsweep.search.confirm import fresh_seeds, kendall_tau, optimism_gap, top_trials
from mjsweep.spec.searchspace import SearchSpec
from mjsweep.sweepdir.models import TrialRecord, TrialState


def spec_file(tmp_path: Path, **search) -> Path:
    data = {
        "name": "tuned", "env": "HalfCheetah-v5", "max_episode_steps": 50,
        "variants": [{"name": "walker", "xml": str(TINY_XML)}], "total_timesteps": 256,
        "ppo": {"n_steps": 64, "batch_size": 32, "n_epochs": 1}, "eval": {"episodes": 1},
        "runs_dir": str(tmp_path / "runs"),
        "search": {"method": "random", "trials": 3, "seeds_per_trial": 1, "seed": 3,
                   "space": {"ppo.learning_rate": {"log_uniform": [1.0e-5, 1.0e-3]}},
                   "confirm": {"top": 2, "seeds": 2}, **search},
    }
    return write_spec(tmp_path, data)


def trial(number: int, value: float | None, runs: int = 1, state: TrialState = TrialState.COMPLETE) -> TrialRecord:
    return TrialRecord(study="walker", number=number, params={"ppo.learning_rate": 1e-4}, state=state, value=value,
                       runs=[f"t{number:03d}_s{s}" for s in range(runs)])


def test_the_top_trials_and_their_fresh_seeds():
    trials = [trial(0, 1.0), trial(1, 5.0), trial(2, None, state=TrialState.FAILED), trial(3, 3.0, runs=3),
              trial(4, 5.0)]
    assert [t.number for t in top_trials(trials, 3, maximize=True)] == [1, 4, 3]
    assert [t.number for t in top_trials(trials, 2, maximize=False)] == [0, 3]
    assert fresh_seeds(trials, 4) == [3, 4, 5, 6]  # after trial 3's seeds 0-2
    assert fresh_seeds([], 2) == [0, 1]


def test_kendall_tau_and_the_optimism_gap():
    assert kendall_tau([3.0, 2.0, 1.0], [30.0, 20.0, 10.0]) == 1.0
    assert kendall_tau([3.0, 2.0, 1.0], [10.0, 20.0, 30.0]) == -1.0
    assert kendall_tau([3.0, 2.0, 1.0], [20.0, 30.0, 10.0]) == pytest.approx(1 / 3)
    gap, low, high = optimism_gap([10.0, 12.0, 11.0], [5.0, 6.0, 4.0], 11.0, 5.0, maximize=True)
    # Yuen's interval, worked by hand: 3 seeds a side are their means, d = 2 * 1 / (3 * 2) each, Welch's df
    # (2/3)^2 / (2 * (1/3)^2 / 2) = 4, t(4) = 2.776445: 6 +- 2.776445 * sqrt(2/3).
    assert gap == 6.0 and (low, high) == pytest.approx((6 - 2.266958, 6 + 2.266958), abs=1e-5)
    assert optimism_gap([1.0], [3.0], 1.0, 3.0, maximize=False)[0] == 2.0  # minimizing: confirmed - tuned
    assert optimism_gap([1.0], [], 1.0, None, maximize=True) == (None, None, None)


def test_confirm_needs_one_objective():
    with pytest.raises(ValueError, match="confirm ranks trials by one objective; this search has 2"):
        SearchSpec.model_validate({"trials": 2, "space": {"ppo.learning_rate": {"choice": [1e-3, 1e-4]}},
                                   "objective": [{"metric": "eval_iqm"}, {"metric": "mass", "direction": "minimize"}],
                                   "confirm": {"top": 1, "seeds": 2}})


def test_the_dry_run_prices_the_confirmation(tmp_path):
    dry = run_sweep("run", str(spec_file(tmp_path)), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "then 4 runs confirm the top 2 trials of each study on 2 fresh seeds" in dry.stdout
    assert "7 runs" in dry.stdout  # 3 trials x 1 seed + 2 x 2 confirmation runs


@pytest.mark.slow
def test_a_search_confirms_its_best_trials_on_fresh_seeds_and_resumes_after_ctrl_c(tmp_path):
    spec = spec_file(tmp_path)
    sweep = tmp_path / "runs" / "tuned"
    first = start_sweep(spec)
    deadline = time.monotonic() + 300
    while not (sweep / "confirm.jsonl").exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    first.send_signal(signal.SIGINT)  # while the confirmation runs
    first.wait(timeout=120)
    again = run_sweep("run", str(spec))
    assert again.returncode == 0, again.stdout + again.stderr

    trials = [json.loads(line) for line in (sweep / "trials.jsonl").read_text().splitlines()]
    confirmations = [json.loads(line) for line in (sweep / "confirm.jsonl").read_text().splitlines()]
    done = {c["number"]: c for c in confirmations if c["state"] == "complete"}
    assert len(done) == 2 and all(c["seeds"] == [1, 2] for c in done.values())
    best = sorted((t for t in trials if t["state"] == "complete"), key=lambda t: -t["value"])[:2]
    assert sorted(done) == sorted(t["number"] for t in best)
    for c in done.values():
        assert [json.loads((sweep / r / "spec.json").read_text())["seed"] for r in c["runs"]] == [1, 2]
        assert all(r.startswith(f"c{c['number']:03d}_") for r in c["runs"])
    # No confirmation seed trained a trial.
    trial_seeds = {json.loads((sweep / r / "spec.json").read_text())["seed"] for t in trials for r in t["runs"]}
    assert trial_seeds == {0}

    report = json.loads(run_sweep("report", str(sweep), "--format", "json").stdout)
    [study] = report["confirmed"]
    assert study["kendall_tau"] in (-1.0, 1.0) and isinstance(study["best_held"], bool)
    for c in study["trials"]:
        assert c["fresh"] and c["value"] == pytest.approx(done[c["number"]]["value"])
        assert c["gap"] == pytest.approx(c["tuned"] - c["value"])
    md = (sweep / "report.md").read_text()
    assert "## Confirmed on fresh seeds" in md and "Kendall's tau" in md
    table = run_sweep("report", str(sweep)).stdout
    assert "confirmed on fresh seeds: walker: the best tuned trial " in table
    assert run_sweep("report", str(sweep), "--format", "html").returncode == 0
    page = (sweep / "report.html").read_text()
    assert "<h2>confirmed on fresh seeds</h2>" in page and "walker: the best tuned trial " in page
    assert page.count("<tr><td>walker</td>") >= len(done)  # a row per confirmed trial (and the trials' own)
    # Nothing left: a third run runs nothing more.
    third = run_sweep("run", str(spec))
    assert third.returncode == 0
    assert [json.loads(line) for line in (sweep / "confirm.jsonl").read_text().splitlines()] == confirmations
