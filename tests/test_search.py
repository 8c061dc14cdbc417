"""The search's pieces without training: the spec's search section, samplers, the trial record, pruning
decisions, and the trial bookkeeping of the run source (run files written by hand)."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from helpers.fake_launcher import FakeClock, FakeLauncher, Script
from helpers.fake_sweep import make_run, result
from helpers.models import REPO, TINY_XML
from mjsweep.errors import SpecError
from mjsweep.results import stats
from mjsweep.robots import variants as variantlib
from mjsweep.search import objective, prune
from mjsweep.search.journal import replay
from mjsweep.search.ranking import best_block, ranked, to_dicts, to_markdown
from mjsweep.search.samplers import RandomSampler, SobolSampler, make_sampler
from mjsweep.search.source import SearchSource
from mjsweep.search.studies import studies
from mjsweep.spec import loading
from mjsweep.spec import sweepspec as speclib
from mjsweep.spec.searchspace import Dimension, ObjectiveSpec, SearchSpec
from mjsweep.sweepdir.files import SweepDir
from mjsweep.sweepdir.files import append_line as append
from mjsweep.sweepdir.models import RunState, TrialRecord, TrialState

SEARCH = {
    "method": "random", "trials": 3, "seeds_per_trial": 2, "seed": 7,
    "space": {"ppo.learning_rate": {"log_uniform": [1.0e-5, 1.0e-3]}, "ppo.n_epochs": {"int": [1, 4]},
              "ppo.gae_lambda": {"choice": [0.9, 0.95]}},
}


def spec_data(**search) -> dict:
    return {"name": "s", "env": "HalfCheetah-v5", "max_episode_steps": 100,
            "variants": [{"name": "walker", "xml": str(TINY_XML)}], "total_timesteps": 512,
            "ppo": {"n_steps": 128, "batch_size": 64}, "eval": {"episodes": 1}, "runs_dir": "runs",
            "search": {**SEARCH, **search}}


def load(tmp_path: Path, data: dict) -> speclib.SweepSpec:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return loading.load(path)


def spec_error(tmp_path: Path, data: dict) -> str:
    with pytest.raises(SpecError) as info:
        load(tmp_path, data)
    return str(info.value)


# -- the spec --------------------------------------------------------------------------------------


def test_search_section_loads(tmp_path):
    spec = load(tmp_path, spec_data())
    assert spec.search is not None and spec.search.trials == 3 and spec.search.space["ppo.n_epochs"].kind == "int"
    assert spec.search.metric == "eval_iqm" and spec.search.maximize and not spec.search.multi


@pytest.mark.parametrize(("space", "key", "words"), [
    ({"ppo.learnin_rate": {"uniform": [0.1, 0.2]}}, "search.space.ppo.learnin_rate", "unknown PPO keyword"),
    ({"ppo.gamma": {"uniform": [0.99, 0.9]}}, "search.space.ppo.gamma", "low must be < high"),
    ({"ppo.learning_rate": {"log_uniform": [0.0, 0.1]}}, "search.space.ppo.learning_rate", "must be > 0"),
    ({"edits.legs": {"uniform": [0.8, 1.2]}}, "search.space.edits.legs", "no variant has the edit_grid label"),
    ({"ppo.n_steps": {"uniform": [64, 256]}}, "search.space.ppo.n_steps", "is an integer"),
    ({"ppo.gamma": {"uniform": [0.9, 1.5]}}, "search.space.ppo.gamma", "must be in (0, 1]"),
    ({"seed": {"int": [0, 3]}}, "search.space.seed", "unknown search key"),
    ({"ppo.gamma": {"uniform": [0.9, 0.99], "int": [1, 2]}}, "search.space.ppo.gamma", "exactly one of"),
    ({"ppo.seed": {"int": [0, 3]}}, "search.space.ppo.seed", "set by mjsweep"),
    ({"sac.tau": {"uniform": [0.001, 0.01]}}, "search.space.sac.tau", "but no run trains SAC"),
])
def test_bad_spaces_are_spec_errors_with_file_line_and_key(tmp_path, space, key, words):
    message = spec_error(tmp_path, spec_data(space=space))
    assert message.startswith(f"{tmp_path / 'spec.yaml'}:") and f": {key}: " in message and words in message
    line = int(message.split(":")[1])
    written = (tmp_path / "spec.yaml").read_text().splitlines()[line - 1]
    assert written.strip().startswith(key.rsplit(".space.", 1)[1].split(".")[0])  # the searched key's line


def test_pruning_needs_periodic_evaluations(tmp_path):
    message = spec_error(tmp_path, spec_data(prune={"method": "median", "after": 256}))
    assert ": search.prune: needs periodic evaluations: set eval.every" in message
    data = spec_data(prune={"method": "asha", "after": 256})
    data["eval"]["every"] = 128
    assert load(tmp_path, data).search.prune.method == "asha"


def test_seeds_and_grid_keys_clash_with_a_search(tmp_path):
    assert ": seeds: a search trains search.seeds_per_trial" in spec_error(tmp_path, {**spec_data(), "seeds": 2})
    data = {**spec_data(), "grid": {"ppo.gae_lambda": [0.9]}}
    assert "search.space.ppo.gae_lambda: this key is in the grid too" in spec_error(tmp_path, data)


def test_example_config_validates():
    proc = subprocess.run([str(Path(sys.executable).with_name("sweep")), "validate", str(REPO / "configs" /
                                                                                      "ant_search.yaml")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# -- samplers ------------------------------------------------------------------------------------


def dims() -> dict[str, Dimension]:
    return SearchSpec.model_validate(SEARCH).space


@pytest.mark.parametrize("kind", [RandomSampler, SobolSampler])
def test_samplers_are_pure_functions_of_seed_study_and_number(kind):
    first = [kind(dims(), 7, 0).propose(n) for n in range(6)]
    assert first == [kind(dims(), 7, 0).propose(n) for n in range(6)]
    assert first != [kind(dims(), 8, 0).propose(n) for n in range(6)]
    assert first != [kind(dims(), 7, 1).propose(n) for n in range(6)]
    for params in first:
        assert 1e-5 <= params["ppo.learning_rate"] <= 1e-3
        assert params["ppo.n_epochs"] in (1, 2, 3, 4) and isinstance(params["ppo.n_epochs"], int)
        assert params["ppo.gae_lambda"] in (0.9, 0.95)
    assert len({json.dumps(p, sort_keys=True) for p in first}) == 6


def test_random_and_sobol_do_not_import_optuna():
    code = ("import sys; from mjsweep.search.samplers import make_sampler; from mjsweep.spec.searchspace import "
            f"SearchSpec; s = SearchSpec.model_validate({SEARCH!r}); "
            "[make_sampler(m, s.space, 0, 0, s.objective, []).propose(3) for m in ('random', 'sobol')]; "
            "assert 'optuna' not in sys.modules, 'optuna imported'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_tpe_learns_from_replayed_trials():
    pytest.importorskip("optuna")
    sampler = make_sampler("tpe", dims(), 0, 0, [ObjectiveSpec()], [])
    history = []
    for n in range(4):
        params = sampler.propose(n)
        state = TrialState.FAILED if n == 3 else TrialState.COMPLETE
        rec = TrialRecord(study="s", number=n, params=params, runs=[], state=state,
                          value=None if n == 3 else float(n))
        sampler.tell(rec)
        history.append(rec)
    resumed = make_sampler("tpe", dims(), 0, 0, [ObjectiveSpec()], history)
    assert [t.state.name for t in resumed.study.trials] == ["COMPLETE", "COMPLETE", "COMPLETE", "FAIL"]
    assert [t.value for t in resumed.study.trials[:3]] == [0.0, 1.0, 2.0]
    assert 1 <= resumed.propose(4)["ppo.n_epochs"] <= 4


# -- the record ------------------------------------------------------------------------------------


def test_record_replays_the_last_state_of_each_trial_and_skips_a_cut_line(tmp_path):
    path = tmp_path / "trials.jsonl"
    running = TrialRecord(study="s", number=0, params={"a": 1}, runs=["r0"], state=TrialState.RUNNING)
    append(path, running)
    append(path, TrialRecord(study="s", number=1, params={"a": 2}, runs=["r1"], state=TrialState.RUNNING))
    append(path, running.model_copy(update={"state": TrialState.COMPLETE, "value": 3.0, "seeds_ok": 1}))
    with open(path, "a") as fh:
        fh.write('{"study": "s", "number": 2, "par')  # a launcher killed mid-line
    records = replay(path)
    assert [(r.number, r.state, r.value) for r in records] == [(0, TrialState.COMPLETE, 3.0),
                                                               (1, TrialState.RUNNING, None)]


# -- pruning decisions -----------------------------------------------------------------------------


def test_median_rule_stops_a_trial_behind_the_ended_ones():
    good = [[(100, 5.0), (200, 9.0)], [(100, 6.0), (200, 10.0)]]
    bad = [[(100, 1.0)], [(100, 2.0), (200, 2.5)]]
    assert prune.reached(bad) == 100
    assert prune.median_prunes(bad, [good], after=100, maximize=True, min_trials=1) == 1.5
    assert prune.median_prunes(bad, [good], after=100, maximize=False, min_trials=1) is None
    assert prune.median_prunes(bad, [good], after=200, maximize=True, min_trials=1) is None  # not there yet
    assert prune.median_prunes(bad, [good], after=100, maximize=True, min_trials=2) is None  # too few ended
    assert prune.median_prunes(good, [bad], after=100, maximize=True, min_trials=1) is None


def test_asha_keeps_the_best_third_at_each_rung():
    assert prune.rungs_below(950, 100) == [100, 300, 900]
    others = [[[(100, float(v))]] for v in (1, 2, 3, 4, 5)]
    assert prune.asha_prunes([[(100, 6.0)]], others, 100, True, 1) is None  # the best of six
    assert prune.asha_prunes([[(100, 4.5)]], others, 100, True, 1) is None  # second of six: two go on
    assert prune.asha_prunes([[(100, 3.5)]], others, 100, True, 1) == 3.5  # third of six
    assert prune.asha_prunes([[(100, 0.5)]], others, 100, False, 1) is None  # the best when minimizing


# -- the run source: trial bookkeeping -------------------------------------------------------------


def source_for(tmp_path: Path, **search) -> tuple[SearchSource, speclib.SweepSpec, SweepDir]:
    spec = load(tmp_path, spec_data(**search))
    sweep_dir = SweepDir(tmp_path / "runs" / "s")
    sweep_dir.path.mkdir(parents=True, exist_ok=True)
    return SearchSource(spec, studies(spec, variantlib.resolve(spec)), sweep_dir), spec, sweep_dir


def finish(sweep_dir: SweepDir, source: SearchSource, run, value: float | None) -> None:
    """The run's files as a worker and the scheduler leave them, and the scheduler's call."""
    state = RunState.SUCCEEDED if value is not None else RunState.FAILED
    make_run(sweep_dir.path, run, state, result(value) if value is not None else None)
    source.ended(run.run_id, state)


def test_seeds_of_a_trial_come_before_a_new_trial_and_ids_carry_the_trial(tmp_path):
    source, spec, sweep_dir = source_for(tmp_path, trials=2, seeds_per_trial=3)
    runs = [source.next_run() for _ in range(6)]
    assert source.next_run() is None and not source.exhausted()
    assert [r.run_id[:4] for r in runs] == ["t000"] * 3 + ["t001"] * 3
    assert [r.seed for r in runs] == [0, 1, 2, 0, 1, 2]
    assert all((sweep_dir.run(r.run_id).spec_json).exists() for r in runs)  # written as handed out
    first = RandomSampler(spec.search.space, 7, 0).propose(0)
    assert runs[0].hyperparams["learning_rate"] == first["ppo.learning_rate"]
    assert f"learning_rate={first['ppo.learning_rate']!r}" in runs[0].run_id


def test_a_trial_is_told_the_iqm_of_its_succeeded_seeds_once_all_ended(tmp_path):
    source, _, sweep_dir = source_for(tmp_path, trials=2, seeds_per_trial=2)
    a0, a1, b0, b1 = (source.next_run() for _ in range(4))
    finish(sweep_dir, source, a0, 4.0)
    assert replay(sweep_dir.trials_jsonl)[0].state is TrialState.RUNNING
    finish(sweep_dir, source, a1, None)  # a failed seed: the value comes from the one that succeeded
    finish(sweep_dir, source, b0, None)
    finish(sweep_dir, source, b1, None)
    first, second = replay(sweep_dir.trials_jsonl)
    assert (first.state, first.value, first.seeds_ok) == (TrialState.COMPLETE, 4.0, 1)
    assert (second.state, second.note) == (TrialState.FAILED, "no seed succeeded")
    assert source.exhausted()


def test_a_resumed_source_reruns_unfinished_seeds_and_asks_no_trial_twice(tmp_path):
    source, _, sweep_dir = source_for(tmp_path, trials=3, seeds_per_trial=2)
    a0, a1, b0, _ = (source.next_run() for _ in range(4))
    finish(sweep_dir, source, a0, 1.0)
    finish(sweep_dir, source, a1, 3.0)
    finish(sweep_dir, source, b0, 2.0)
    # The launcher dies here: trial 1's second seed never ended, trial 2 was never asked.
    again, _, _ = source_for(tmp_path, trials=3, seeds_per_trial=2)
    assert [r.run_id for r in again.queued_runs()] == [replay(sweep_dir.trials_jsonl)[1].runs[1]]
    assert again.skipped == [a0.run_id, a1.run_id, b0.run_id]
    resumed = again.next_run()
    assert resumed.run_id.startswith("t001") and resumed.seed == 1
    fresh = [again.next_run(), again.next_run()]
    assert [(r.run_id[:4], r.seed) for r in fresh] == [("t002", 0), ("t002", 1)]
    assert again.next_run() is None
    numbers = [(r.number, r.state) for r in replay(sweep_dir.trials_jsonl)]
    assert numbers == [(0, TrialState.COMPLETE), (1, TrialState.RUNNING), (2, TrialState.RUNNING)]


def test_ranked_trials_and_the_best_block(tmp_path):
    source, spec, sweep_dir = source_for(tmp_path, trials=3, seeds_per_trial=1)
    runs = [source.next_run() for _ in range(3)]
    for run, value in zip(runs, (1.0, 5.0, 3.0), strict=True):
        finish(sweep_dir, source, run, value)
    (sweep_dir.path / "sweep.yaml").write_text(yaml.safe_dump(spec.model_dump(mode="json")))
    rows = ranked(sweep_dir, spec.search)
    assert [r.record.number for r in rows] == [1, 2, 0] and [r.value for r in rows] == [5.0, 3.0, 1.0]
    block = yaml.safe_load(best_block(rows[0]))
    assert block == {"ppo": {k.removeprefix("ppo."): v for k, v in rows[0].record.params.items()}}
    markdown = to_markdown(rows, spec.search)
    assert markdown.splitlines()[4].startswith("| 1 | walker | 1 | complete | 5.00 | - | 1/1 |")
    assert markdown.rstrip().endswith("```") and best_block(rows[0]).rstrip() in markdown
    assert [(d["rank"], d["number"], d["value"]) for d in to_dicts(rows)] == [(1, 1, 5.0), (2, 2, 3.0), (3, 0, 1.0)]


def test_a_trials_interval_is_its_objectives_the_iqms(tmp_path):
    source, spec, sweep_dir = source_for(tmp_path, trials=1, seeds_per_trial=5)
    runs = [source.next_run() for _ in range(5)]
    for run, value in zip(runs, (1.0, 2.0, 3.0, 4.0, 50.0), strict=True):
        finish(sweep_dir, source, run, value)
    (sweep_dir.path / "sweep.yaml").write_text(yaml.safe_dump(spec.model_dump(mode="json")))
    [row] = ranked(sweep_dir, spec.search)
    # The objective is the IQM (2, 3, 4: 3.0), and its interval is the IQM's, not the mean's (12.0 +- 27).
    assert row.value == 3.0 and row.ci == stats.iqm_t_interval([1.0, 2.0, 3.0, 4.0, 50.0])
    assert row.ci is not None and row.ci[0] < 3.0 < row.ci[1] < 12.0
    assert objective.confidence([1.0, 2.0], "cpu_seconds") is None  # a cost is a total, not an estimate


def test_a_grid_splits_the_search_into_studies_and_searched_labels_make_families(tmp_path):
    walker = str(TINY_XML.with_name("planar_walker.xml"))
    data = spec_data(trials=1, space={"ppo.learning_rate": {"log_uniform": [1.0e-5, 1.0e-3]},
                                      "edits.legs": {"uniform": [0.8, 1.25]}})
    data["env"] = "mjsweep/Locomotion-v0"
    data["variants"] = [
        {"name": "w", "base": walker, "edit_grid": {"legs": [0.8, 1.25], "motors": [1.0, 2.0]},
         "edits": [{"scale_body": {"body": ["left_thigh", "right_thigh"], "factor": "${legs}"}},
                   {"gear": {"actuator": "left_hip", "factor": "${motors}"}}]},
        {"name": "plain", "xml": str(TINY_XML)}]
    data["grid"] = {"ppo.n_epochs": [1, 2]}
    spec = load(tmp_path, data)
    found = studies(spec, variantlib.resolve(spec))
    assert [s.key for s in found] == ["w_motors=1.0 ppo.n_epochs=1", "w_motors=1.0 ppo.n_epochs=2",
                                      "w_motors=2.0 ppo.n_epochs=1", "w_motors=2.0 ppo.n_epochs=2",
                                      "plain ppo.n_epochs=1", "plain ppo.n_epochs=2"]
    assert list(found[0].dims) == ["ppo.learning_rate", "edits.legs"]
    assert list(found[-1].dims) == ["ppo.learning_rate"]  # the label is not the plain variant's
    sweep_dir = SweepDir(tmp_path / "runs" / "s")
    sweep_dir.path.mkdir(parents=True)
    source = SearchSource(spec, found, sweep_dir)
    runs = [source.next_run() for _ in range(12)]  # 6 studies x 1 trial x 2 seeds
    assert len({r.run_id for r in runs}) == 12 and source.next_run() is None
    first = runs[0]
    legs = replay(sweep_dir.trials_jsonl)[0].params["edits.legs"]
    assert first.variant == f"w_legs={legs!r}_motors=1.0" and first.hyperparams["n_epochs"] == 1
    assert first.grid["ppo.n_epochs"] == 1 and "edits.legs" not in first.grid
    assert first.xml.startswith(str(sweep_dir.snapshots)) and Path(first.xml).read_text().startswith("<mujoco")


def test_a_searched_env_argument_the_env_does_not_take_is_a_spec_error(tmp_path):
    from mjsweep.engine.sweep import prepare

    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec_data(space={"env_kwargs.ctrl_cost_weigt": {"uniform": [0.0, 1.0]}})))
    with pytest.raises(SpecError, match=r"spec.yaml:\d+: search.space.env_kwargs.ctrl_cost_weigt: .*did you mean "
                                        r"ctrl_cost_weight"):
        prepare(path)


def test_a_pruned_trials_run_left_running_by_a_dead_launcher_is_recorded_pruned(tmp_path):
    from mjsweep.engine.status_recorder import StatusRecorder
    from mjsweep.search.execute import settle_pruned

    source, _, sweep_dir = source_for(tmp_path, trials=1, seeds_per_trial=2)
    a, b = source.next_run(), source.next_run()
    make_run(sweep_dir.path, a, RunState.PRUNED)
    make_run(sweep_dir.path, b, RunState.RUNNING, pid=2**22 + 7)  # no such process: nothing to end
    pruned = replay(sweep_dir.trials_jsonl)[0].model_copy(update={"state": TrialState.PRUNED})
    settle_pruned(sweep_dir, [pruned], StatusRecorder(sweep_dir, warn=lambda run_id, message: None))
    assert sweep_dir.run(b.run_id).read_status().state is RunState.PRUNED
    assert sweep_dir.run(a.run_id).read_status().state is RunState.PRUNED


def test_search_figure_needs_a_complete_trial(tmp_path):
    from mjsweep.search.plots import plot_search

    source, spec, sweep_dir = source_for(tmp_path, trials=2, seeds_per_trial=1)
    first = source.next_run()
    assert plot_search(sweep_dir, spec.search, tmp_path / "figs.svg") == []  # asked, nothing ended
    finish(sweep_dir, source, first, 2.0)
    [path] = plot_search(sweep_dir, spec.search, tmp_path / "figs.svg")
    root = ET.parse(path).getroot()
    assert path.name == "figs_search.svg" and root.tag == "{http://www.w3.org/2000/svg}svg"
    trials = [e for e in root.iter() if e.get("class") == "trial"]  # the one trial in each parameter's panel
    assert len(trials) == len(spec.search.space) + 1  # and over the trials
    assert len([e for e in root.iter() if e.get("class") == "best"]) == 1


def test_a_whole_search_through_the_scheduler_with_a_fake_launcher(tmp_path):
    from mjsweep.engine.scheduler import Scheduler, SchedulerOptions

    source, _, sweep_dir = source_for(tmp_path, trials=3, seeds_per_trial=2)
    clock = FakeClock()
    launcher = FakeLauncher(clock)

    def start(run, run_dir, _start=launcher.start):
        if run.run_id.startswith("t001_"):  # every seed of trial 1 fails: the trial fails, the search goes on
            launcher.scripts[run.run_id] = Script([(1.0, 1)])
        return _start(run, run_dir)

    launcher.start = start
    sched = Scheduler(launcher, sweep_dir, SchedulerOptions(max_workers=2, memory_guard=False, poll_s=0.5),
                      clock=clock, sleep=clock.sleep)
    outcome = sched.run([], source=source)
    assert len(launcher.started) == 6 and len(outcome.succeeded) == 4 and len(outcome.failed) == 2
    assert max(len(together) for together in launcher.together) == 2
    states = [(r.number, r.state, r.value, r.seeds_ok) for r in replay(sweep_dir.trials_jsonl)]
    assert states == [(0, TrialState.COMPLETE, 1.0, 2), (1, TrialState.FAILED, None, 0),
                      (2, TrialState.COMPLETE, 1.0, 2)]
