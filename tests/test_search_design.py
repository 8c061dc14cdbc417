"""Searches for robot design without training: CMA-ES and multi-objective samplers (real Optuna), their replay
on resume, the objectives read from run files and robots, Pareto fronts, the report of a front, and the spec
errors that refuse what Optuna cannot do."""

from __future__ import annotations

import itertools
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from helpers.commands import run_sweep, write_spec
from helpers.fake_sweep import make_run, result
from helpers.models import REPO, TINY_XML
from mjsweep.errors import SpecError
from mjsweep.robots import variants as variantlib
from mjsweep.search import pareto
from mjsweep.search.journal import lines, replay
from mjsweep.search.plots import plot_pareto
from mjsweep.search.ranking import best_block, front, ranked, to_dicts, to_markdown
from mjsweep.search.samplers import make_sampler
from mjsweep.search.source import SearchSource
from mjsweep.search.studies import studies
from mjsweep.spec import loading
from mjsweep.spec import sweepspec as speclib
from mjsweep.spec.searchspace import ObjectiveSpec, SearchSpec
from mjsweep.sweepdir.files import SweepDir, append_line
from mjsweep.sweepdir.models import RunState, TrialRecord, TrialState

pytest.importorskip("optuna")

SPACE = {"ppo.learning_rate": {"log_uniform": [1.0e-5, 1.0e-3]}, "ppo.n_epochs": {"int": [1, 8]},
         "ppo.gae_lambda": {"uniform": [0.8, 0.99]}}
TWO = [{"metric": "eval_iqm", "direction": "maximize"}, {"metric": "mass", "direction": "minimize"}]


def spec_data(**search) -> dict:
    return {"name": "s", "env": "HalfCheetah-v5", "max_episode_steps": 100,
            "variants": [{"name": "walker", "xml": str(TINY_XML)}], "total_timesteps": 512,
            "ppo": {"n_steps": 128, "batch_size": 64}, "eval": {"episodes": 1}, "runs_dir": "runs",
            "search": {"method": "cmaes", "trials": 4, "seed": 5, "space": SPACE, **search}}


def spec_error(tmp_path: Path, data: dict) -> tuple[str, str]:
    """The error and the spec line it names."""
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(SpecError) as info:
        loading.load(path)
    message = str(info.value)
    assert message.startswith(f"{path}:")
    return message, path.read_text().splitlines()[int(message.split(":")[1]) - 1]


# -- what the spec refuses -------------------------------------------------------------------------


@pytest.mark.parametrize(("search", "key", "words", "line"), [
    ({"method": "tpe", "objective": TWO, "prune": {"after": 256}}, "search.prune", "pruning needs a single objective",
     "prune:"),
    ({"objective": TWO}, "search.method", "cmaes optimizes one objective", "method: cmaes"),
    ({"space": {**SPACE, "ppo.gamma": {"choice": [0.9, 0.99]}}}, "search.space.ppo.gamma",
     "cmaes samples numbers only", "ppo.gamma:"),
    ({"method": "tpe", "objective": [TWO[0], {"metric": "best_iqm"}]}, "search.objective[1].metric",
     "needs periodic evaluations", "- metric: best_iqm"),
    ({"method": "nsga2", "objective": [TWO[1], dict(TWO[1])]}, "search.objective[1].metric",
     "mass is an objective twice", "- metric: mass"),
    ({"objective": {"metric": "energy"}}, "search.objective.metric", "unknown metric 'energy'", "metric: energy"),
    ({"objective": [{"metric": "info:energy per meter"}]}, "search.objective[0].metric", "unknown metric",
     "- metric: info:energy per meter"),
])
def test_what_optuna_cannot_do_is_a_spec_error_at_its_key(tmp_path, search, key, words, line):
    message, written = spec_error(tmp_path, spec_data(**search))
    assert f": {key}" in message and words in message, message
    assert written.strip().startswith(line)


def test_one_objective_or_several_load(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec_data(method="nsga2", objective=[*TWO, {"metric": "info:energy_per_meter"}])))
    search = loading.load(path).search
    assert search.multi and [o.maximize for o in search.objective] == [True, False, True]
    assert search.info_keys() == ["energy_per_meter"]
    single = SearchSpec.model_validate({"trials": 1, "space": SPACE, "objective": {"metric": "mass"}})
    assert not single.multi and single.metric == "mass" and single.maximize


def test_cmaes_without_its_package_is_one_line_at_search_method_exit_2(tmp_path):
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "cmaes.py").write_text("raise ImportError('cmaes is not installed here')\n")
    data = {**spec_data(), "runs_dir": str(tmp_path / "runs")}
    spec = write_spec(tmp_path, data)
    env = {"PYTHONPATH": os.pathsep.join([str(shadow), os.environ.get("PYTHONPATH", "")])}
    for args in (["--dry-run"], []):
        proc = run_sweep("run", str(spec), *args, env=env)
        [line] = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and line.startswith(f"error: {spec}:"), proc.stdout + proc.stderr
        assert ": search.method: cmaes needs the cmaes package" in line
        assert "method: cmaes" in spec.read_text().splitlines()[int(line.split(":")[2]) - 1]
    assert not (tmp_path / "runs").exists()


# -- samplers and their replay ---------------------------------------------------------------------


def play(sampler, script: list[tuple[str, int]], values: dict[int, list[float] | None]) -> list[TrialRecord]:
    """Asks and tells in the order of `script` as the run source does, and the record it writes."""
    asked: dict[int, dict] = {}
    out = []
    for action, n in script:
        if action == "ask":
            asked[n] = sampler.propose(n)
            out.append(TrialRecord(study="s", number=n, params=asked[n], runs=[], state=TrialState.RUNNING))
            continue
        v = values[n]
        rec = TrialRecord(study="s", number=n, params=asked[n], runs=[],
                          state=TrialState.COMPLETE if v is not None else TrialState.FAILED,
                          value=v[0] if v else None, values=v if v and len(v) > 1 else None)
        sampler.tell(rec)
        out.append(rec)
    return out


def interleaved(n: int) -> list[tuple[str, int]]:
    """Two trials at a time, told in turn the newer and the older: ask 0, ask 1, tell 1, ask 2, tell 0, ..."""
    script, running = [("ask", 0), ("ask", 1)], [0, 1]
    for k in range(2, n):
        done = max(running) if k % 2 == 0 else min(running)
        running = [*(r for r in running if r != done), k]
        script += [("tell", done), ("ask", k)]
    return script


def objective_values(width: int) -> dict[int, list[float] | None]:
    return {k: None if k == 3 else [float((k * 7) % 5 + j * k) for j in range(width)] for k in range(40)}


@pytest.mark.parametrize(("method", "objectives"), [
    ("cmaes", [ObjectiveSpec()]),
    ("tpe", [ObjectiveSpec(), ObjectiveSpec(metric="mass", direction="minimize")]),
    ("nsga2", [ObjectiveSpec(), ObjectiveSpec(metric="mass", direction="minimize")]),
])
def test_a_resumed_optuna_search_proposes_what_an_uninterrupted_one_would(method, objectives):
    dims = SearchSpec.model_validate({"trials": 1, "space": SPACE}).space
    values = objective_values(len(objectives))
    script = interleaved(24)  # past CMA-ES's first generation (6 for 3 dimensions) and NSGA-II's startup
    uninterrupted = make_sampler(method, dims, 5, 0, objectives, [])
    record = play(uninterrupted, script, values)
    assert record == play(make_sampler(method, dims, 5, 0, objectives, []), script, values)  # seeded
    assert record != play(make_sampler(method, dims, 6, 0, objectives, []), script, values)
    for cut in (5, 17, len(record)):  # the launcher died after this many lines
        resumed = make_sampler(method, dims, 5, 0, objectives, record[:cut])
        again = make_sampler(method, dims, 5, 0, objectives, [])
        play(again, script[:cut], values)
        pending = sorted({r.number for r in record[:cut]} - {r.number for r in record[:cut] if r.state
                                                               is not TrialState.RUNNING})
        for n in pending:  # trials on record as running end after the resume: both are told the same
            for sampler in (resumed, again):
                sampler.tell(TrialRecord(study="s", number=n, params=record[[r.number for r in record].index(n)]
                                         .params, runs=[], state=TrialState.FAILED))
        assert [resumed.propose(100 + k) for k in range(3)] == [again.propose(100 + k) for k in range(3)]
    for params in (r.params for r in record):
        assert 1e-5 <= params["ppo.learning_rate"] <= 1e-3 and params["ppo.n_epochs"] in range(1, 9)


def test_cmaes_moves_its_generation_on_and_a_record_of_another_space_is_history():
    dims = SearchSpec.model_validate({"trials": 1, "space": SPACE}).space
    sampler = make_sampler("cmaes", dims, 0, 0, [ObjectiveSpec()], [])
    record = play(sampler, [(a, n) for n in range(14) for a in ("ask", "tell")],
                  {n: [float(n % 4)] for n in range(14)})
    generations = {t.system_attrs.get("cma:generation") for t in sampler.study.trials}
    assert {0, 1} <= generations  # a generation was told and the next one sampled from the new mean
    edited = SearchSpec.model_validate({"trials": 1, "space": {**SPACE, "ppo.gae_lambda": {"uniform": [0.9, 0.99]}}})
    resumed = make_sampler("cmaes", edited.space, 0, 0, [ObjectiveSpec()], record)  # proposals differ now
    inside = [r for r in record if r.state is TrialState.COMPLETE and r.params["ppo.gae_lambda"] >= 0.9]
    assert 0 < len(inside) < 14 and len(resumed.study.trials) == len(inside)  # those outside teach nothing
    assert 0.9 <= resumed.propose(14)["ppo.gae_lambda"] <= 0.99


# -- Pareto fronts ---------------------------------------------------------------------------------


def test_pareto_front_by_hand():
    up_down = [True, False]  # maximize the return, minimize the mass
    points = [[10.0, 5.0], [8.0, 3.0], [10.0, 5.0], [9.0, 6.0], [7.0, 3.0], [12.0, 9.0], [8.0, 3.0]]
    # [9, 6] is dominated by [10, 5]; [7, 3] by [8, 3]; equal points are both on the front
    assert pareto.front(points, up_down) == [0, 1, 2, 5, 6]
    assert pareto.ranks(points, up_down) == [0, 0, 0, 1, 1, 0, 0]
    assert pareto.front(points, [True, True]) == [5]  # more of both: only [12, 9]
    assert pareto.front(points, [False, False]) == [4]
    assert pareto.ranks([[1.0], [3.0], [2.0], [3.0]], [True]) == [2, 0, 1, 0]
    assert pareto.front([], up_down) == []
    assert not pareto.dominates([1.0, 1.0], [1.0, 1.0], up_down)


# -- a multi-objective search's record and report --------------------------------------------------


def source_for(tmp_path: Path, **search) -> tuple[SearchSource, speclib.SweepSpec, SweepDir]:
    data = spec_data(**{"method": "random", "seeds_per_trial": 2, **search})
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    spec = loading.load(path)
    sweep_dir = SweepDir(tmp_path / "runs" / "s")
    sweep_dir.path.mkdir(parents=True, exist_ok=True)
    (sweep_dir.path / "sweep.yaml").write_text(yaml.safe_dump(spec.model_dump(mode="json")))
    return SearchSource(spec, studies(spec, variantlib.resolve(spec)), sweep_dir), spec, sweep_dir


def finish(sweep_dir: SweepDir, source: SearchSource, run, value: float, **extra) -> None:
    make_run(sweep_dir.path, run, RunState.SUCCEEDED, result(value, **extra))
    source.ended(run.run_id, RunState.SUCCEEDED)


def test_a_multi_objective_trial_records_every_objective_and_the_report_shows_the_front(tmp_path):
    objectives = [TWO[0], {"metric": "info:x_velocity", "direction": "maximize"}, TWO[1]]
    source, spec, sweep_dir = source_for(tmp_path, objective=objectives, trials=4)
    runs = [source.next_run() for _ in range(8)]
    assert all(r.eval_info == ["x_velocity"] for r in runs)  # the worker is asked to average it
    # (return, x velocity) per seed: trial 1 is dominated by trial 0, trials 0, 2 and 3 trade off
    seeds = [(4.0, 1.0), (6.0, 1.0), (3.0, 0.5), (5.0, 0.5), (9.0, 0.1), (9.0, 0.1), (1.0, 2.0), (1.0, 2.0)]
    for run, (ret, velocity) in zip(runs, seeds, strict=True):
        finish(sweep_dir, source, run, ret, eval_info={"x_velocity": velocity})
    mass = variantlib.model_stats(variantlib.compile_model(TINY_XML)).total_mass
    records = replay(sweep_dir.trials_jsonl)
    assert [r.values for r in records] == [[5.0, 1.0, mass], [4.0, 0.5, mass], [9.0, 0.1, mass], [1.0, 2.0, mass]]
    assert [r.value for r in records] == [5.0, 4.0, 9.0, 1.0]
    rows = ranked(sweep_dir, spec.search)
    assert [(r.record.number, r.pareto_rank) for r in rows] == [(2, 0), (0, 0), (3, 0), (1, 1)]
    assert [r.record.number for r in front(rows)] == [2, 0, 3]
    assert [d["pareto_rank"] for d in to_dicts(rows)] == [0, 0, 0, 1]
    markdown = to_markdown(rows, spec.search, "report_pareto.svg")
    assert "| 4 | walker | 1 | complete |  | 4 | 0.5 |" in markdown
    assert "![Pareto front](report_pareto.svg)" in markdown
    for row in front(rows):
        assert f"**trial {row.record.number} of walker: eval_iqm " in markdown and best_block(row).rstrip() in markdown
    figure = tmp_path / "pareto.svg"
    assert plot_pareto(rows, spec.search, figure)
    drawn = list(ET.parse(figure).getroot().iter())
    panels = len(list(itertools.combinations(spec.search.objective, 2)))  # a panel per pair of objectives
    front_dots = [e for e in drawn if e.get("class") == "front"]
    assert len(front_dots) == 3 * panels and len([e for e in drawn if e.get("class") == "dominated"]) == panels
    numbers = sorted("".join(e.itertext()) for e in drawn if e.get("class") == "number")
    assert numbers == sorted(["0", "2", "3"] * panels)


def test_a_trial_whose_env_reported_no_such_info_fails_with_a_note(tmp_path):
    source, _, sweep_dir = source_for(tmp_path, objective=[TWO[0], {"metric": "info:energy_per_meter"}], trials=1)
    for run in (source.next_run(), source.next_run()):
        finish(sweep_dir, source, run, 1.0)
    [record] = replay(sweep_dir.trials_jsonl)
    assert record.state is TrialState.FAILED and record.note == "no seed has a value of eval_iqm, info:energy_per_meter"


def test_a_trials_jsonl_from_before_multi_objective_searches_reads_and_resumes(tmp_path):
    source, _, sweep_dir = source_for(tmp_path, method="tpe", objective={"metric": "eval_iqm"}, trials=3,
                                      seeds_per_trial=1)
    first = source.next_run()
    finish(sweep_dir, source, first, 2.0)
    old = [line.replace(', "values": null', "") for line in sweep_dir.trials_jsonl.read_text().splitlines()]
    assert all('"values"' not in line for line in old)
    sweep_dir.trials_jsonl.write_text("\n".join(old) + "\n")
    [record] = replay(sweep_dir.trials_jsonl)
    assert (record.value, record.values, record.objectives) == (2.0, None, [2.0])
    again, _, _ = source_for(tmp_path, method="tpe", objective={"metric": "eval_iqm"}, trials=3, seeds_per_trial=1)
    assert again.next_run().run_id.startswith("t001_") and len(again.samplers["walker"].study.trials) == 2
    append_line(sweep_dir.trials_jsonl, TrialRecord(study="walker", number=9, params={}, runs=[],
                                                    state=TrialState.FAILED))
    assert [r.number for r in lines(sweep_dir.trials_jsonl)] == [0, 0, 1, 9]


def test_the_design_config_validates():
    proc = run_sweep("validate", str(REPO / "configs" / "ant_design.yaml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    search = loading.load(REPO / "configs" / "ant_design.yaml").search
    assert search.method == "nsga2" and [o.metric for o in search.objective] == ["eval_iqm", "mass", "total_gear"]
