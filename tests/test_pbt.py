"""Population-based training: the decisions (pure), the spec's refusals, and real PBT sweeps of the tiny walker
through `sweep run` as a subprocess: the lineage written, the same lineage after a Ctrl-C and a resume, and
after a launcher killed while it wrote a generation's lines; `sweep report`'s replay spec."""

from __future__ import annotations

import html
import json
import shutil
import signal
from pathlib import Path

import pytest
import yaml

from helpers.commands import launcher_output, run_sweep, start_sweep, wait_for, write_spec
from helpers.models import REPO
from mjsweep.errors import SpecError
from mjsweep.results.sections import Table, to_markdown
from mjsweep.search import pbtpolicy, pbtreport
from mjsweep.spec.loading import load
from mjsweep.spec.pbtspec import PbtSpec
from mjsweep.sweepdir.files import SweepDir, append_line, write_model
from mjsweep.sweepdir.lineage import SegmentRecord
from mjsweep.sweepdir.models import RunResult

SPACE = {"ppo.learning_rate": {"log_uniform": [1.0e-4, 1.0e-2]}, "ppo.ent_coef": {"uniform": [0.0, 0.1]}}


def pbt(**changes) -> PbtSpec:
    return PbtSpec.model_validate({"population": 4, "interval": 128, "space": SPACE, **changes})


def test_members_start_from_draws_of_the_space_that_the_seed_decides():
    first = pbtpolicy.initial(pbt(), 0)
    assert len(first) == 4 and len({m["ppo.learning_rate"] for m in first}) == 4
    for values in first:
        assert 1e-4 <= values["ppo.learning_rate"] <= 1e-2 and 0.0 <= values["ppo.ent_coef"] <= 0.1
    assert pbtpolicy.initial(pbt(), 0) == first
    assert pbtpolicy.initial(pbt(seed=1), 0) != first
    assert pbtpolicy.initial(pbt(), 1) != first  # each population its own draws


def test_the_bottom_quantile_copies_the_top_and_perturbs_its_values():
    spec = pbt(resample_probability=0.0, factors=[0.5, 2.0])
    current = [{"ppo.learning_rate": 1e-3 * (m + 1), "ppo.ent_coef": 0.01 * (m + 1)} for m in range(4)]
    decisions = pbtpolicy.next_generation(spec, 0, 1, current, [3.0, 9.0, 1.0, 5.0])
    copies = {d.member: d for d in decisions if d.copied_from is not None}
    assert list(copies) == [2]  # the worst of 4 at quantile 0.25
    assert copies[2].copied_from == 1  # the best
    for key, value in copies[2].hyperparams.items():
        factor = {"x0.5": 0.5, "x2": 2.0}[copies[2].explored[key]]
        assert value == pytest.approx(current[1][key] * factor, rel=1e-3)
    assert [d.hyperparams for d in decisions if d.copied_from is None] == [current[0], current[1], current[3]]
    assert pbtpolicy.next_generation(spec, 0, 1, current, [3.0, 9.0, 1.0, 5.0]) == decisions


def test_resampled_and_multiplied_values_stay_in_the_space():
    spec = pbt(resample_probability=1.0)
    current = [{"ppo.learning_rate": 1e-2, "ppo.ent_coef": 0.1}] * 4
    decision = pbtpolicy.next_generation(spec, 0, 1, current, [1.0, 2.0, 3.0, 0.0])[3]
    assert set(decision.explored.values()) == {"resampled"}
    bounded = pbtpolicy.next_generation(pbt(resample_probability=0.0, factors=[4.0]), 0, 1, current,
                                        [1.0, 2.0, 3.0, 0.0])[3]
    assert bounded.hyperparams == {"ppo.learning_rate": 1e-2, "ppo.ent_coef": 0.1}  # clamped to the bounds


def test_a_member_whose_segment_failed_copies_a_scored_one():
    decisions = pbtpolicy.next_generation(pbt(), 0, 1, pbtpolicy.initial(pbt(), 0), [None, 2.0, None, 1.0])
    assert {d.member: d.copied_from for d in decisions if d.copied_from is not None} == {0: 1, 2: 1}


def test_a_schedule_is_replayed_by_every_member_without_copies():
    schedule = [{"ppo.learning_rate": 1e-3}, {"ppo.learning_rate": 5e-4}]
    spec = PbtSpec.model_validate({"population": 2, "interval": 128, "schedule": schedule})
    assert pbtpolicy.initial(spec, 0) == [schedule[0]] * 2
    later = pbtpolicy.next_generation(spec, 0, 1, [schedule[0]] * 2, [1.0, 2.0])
    assert [(d.hyperparams, d.copied_from) for d in later] == [(schedule[1], None)] * 2


def test_the_report_traces_the_best_members_schedule_through_the_members_it_copied(tmp_path):
    folder = SweepDir(tmp_path / "sweep")
    folder.path.mkdir()
    folder.sweep_yaml.write_text(yaml.safe_dump({"pbt": {"interval": 128}}))
    lr = "ppo.learning_rate"
    lines = [SegmentRecord(population="walker", generation=0, member=0, run="a0", hyperparams={lr: 1e-3}),
             SegmentRecord(population="walker", generation=0, member=1, run="b0", hyperparams={lr: 2e-3}),
             SegmentRecord(population="walker", generation=1, member=0, run="a1", hyperparams={lr: 2.5e-3},
                           parent="b0", copied_from=1, previous={lr: 1e-3}, explored={lr: "x1.25"}, score=1.0,
                           donor_score=2.0),
             SegmentRecord(population="walker", generation=1, member=1, run="b1", hyperparams={lr: 2e-3},
                           parent="b0", previous={lr: 2e-3}, score=2.0)]
    for line in lines:
        append_line(folder.pbt_jsonl, line)
    for run, score in (("a1", 5.0), ("b1", 3.0)):
        folder.run(run).path.mkdir()
        write_model(folder.run(run).result_json, RunResult(run_id=run, eval_mean_return=score))
    sections = pbtreport.sections(folder)
    text = to_markdown(sections)
    tables = {b.name: b for s in sections for b in s.blocks if isinstance(b, Table)}
    # generation 1: member 0 (scored 1) copied member 1 (scored 2), its learning rate member 1's times 1.25
    assert tables["copies"].rows == (("1", "0", "1", "1", "2", "ppo.learning_rate 0.001 -> 0.0025 (member 1's "
                                      "0.002 x1.25)"),)
    assert tables["members"].rows == (("0", "5", "2", "1", "ppo.learning_rate=0.0025", "a1"),
                                      ("1", "3", "2", "0", "ppo.learning_rate=0.002", "b1"))
    assert tables["generations"].rows == (("0", "-", "-"), ("1", "5 <- 1", "3"))
    assert tables["schedule"].rows == (("0", "1", "0.002"), ("1", "0", "0.0025"))
    assert "best member: 0 (final evaluation 5)" in text
    replay = yaml.safe_load(folder.pbt_best_yaml.read_text())["pbt"]
    assert replay["schedule"] == [{lr: 2e-3}, {lr: 2.5e-3}]  # member 1's first segment, then its own
    assert replay["interval"] == 128 and "```yaml" in text


def pbt_spec(tiny_spec: dict, **pbt_changes) -> dict:
    tiny_spec.pop("seeds")
    tiny_spec.update(total_timesteps=384, ppo={"n_steps": 64, "batch_size": 32, "n_epochs": 1},
                     pbt={"population": 2, "interval": 128, "space": SPACE, "seed": 3, **pbt_changes})
    return tiny_spec


@pytest.mark.parametrize(("change", "where", "says"), [
    ({"space": {"ppo.n_steps": {"uniform": [32, 64]}}}, "pbt.space.ppo.n_steps", "cannot change in a running model"),
    ({"space": {"sac.tau": {"uniform": [0.01, 0.02]}}}, "pbt.space.sac.tau", "explore ppo.<kwarg>"),
    ({"interval": 100}, "pbt.interval", "multiple of interval"),
    ({"interval": 96}, "pbt.interval", "multiple of n_steps * n_envs"),
    ({"space": {"ppo.gamma": {"uniform": [0.9, 1.5]}}}, "pbt.space.ppo.gamma", "must be in (0, 1]"),
])
def test_the_spec_refuses_what_a_population_cannot_explore(tmp_path, tiny_spec, change, where, says):
    with pytest.raises(SpecError) as error:
        load(write_spec(tmp_path, pbt_spec(tiny_spec, **change)))
    assert where in str(error.value) and says in str(error.value)


@pytest.mark.parametrize(("train_freq", "where", "says"), [
    (5, "pbt.interval", "multiple of train_freq * n_envs (5 * 1): a segment ends where a rollout ends"),
    ([1, "episode"], "sac.train_freq", "give train_freq in steps"),
])
def test_an_off_policy_segment_must_end_where_a_rollout_ends(tmp_path, tiny_spec, train_freq, where, says):
    data = pbt_spec(tiny_spec)
    del data["ppo"]
    data.update(algo="sac", sac={"train_freq": train_freq}, pbt={**data["pbt"], "space": {"sac.tau": {
        "uniform": [0.01, 0.02]}}})
    with pytest.raises(SpecError) as error:
        load(write_spec(tmp_path, data))
    assert where in str(error.value) and says in str(error.value)
    data["sac"] = {"train_freq": 4}  # 128 steps are 32 rollouts of 4
    assert load(write_spec(tmp_path, data)).pbt is not None


def test_a_population_takes_no_seeds_and_a_schedule_covers_every_generation(tmp_path, tiny_spec):
    data = pbt_spec(tiny_spec)
    with pytest.raises(SpecError, match="seeds: pbt trains pbt.population members"):
        load(write_spec(tmp_path, {**data, "seeds": 2}))
    with pytest.raises(SpecError, match="warm_start: a pbt population starts its members cold"):
        load(write_spec(tmp_path, {**data, "warm_start": {"from": str(tmp_path)}}))
    replay = {"population": 2, "interval": 128, "schedule": [{"ppo.learning_rate": 1e-3}] * 2}
    with pytest.raises(SpecError, match="pbt.schedule: 2 generations scheduled; total_timesteps / interval is 3"):
        load(write_spec(tmp_path, {**data, "pbt": replay}))
    with pytest.raises(SpecError, match="a space to explore or a schedule to replay"):
        load(write_spec(tmp_path, {**data, "pbt": {**replay, "space": SPACE}}))
    three = [{"ppo.learning_rate": 1e-3}, {"ppo.learning_rate": 5e-4}, {"ppo.learning_rate": 2e-4}]
    assert load(write_spec(tmp_path, {**data, "pbt": {**replay, "schedule": three}})).pbt.schedule == three


def test_every_segment_counts_against_max_runs(tmp_path, tiny_spec):
    """A population of 2 over 3 segments is 6 runs: a limit of 5 refuses it, naming its factors."""
    data = pbt_spec(tiny_spec)
    with pytest.raises(SpecError) as error:
        load(write_spec(tmp_path, {**data, "max_runs": 5}))
    assert "the spec plans 6 runs (variants 1 x grid points 1 x members 2 x segments each 3)" in str(error.value)
    assert load(write_spec(tmp_path, {**data, "max_runs": 6})).pbt is not None


def test_sweep_run_refuses_pbt_on_slurm_before_anything_is_written(tmp_path, tiny_spec):
    spec = write_spec(tmp_path, pbt_spec(tiny_spec))
    done = run_sweep("run", str(spec), "--backend", "slurm")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("error: pbt starts each generation as results come in")
    assert not (tmp_path / "runs").exists()


def test_a_dry_run_says_what_the_population_trains_and_writes_nothing(tmp_path, tiny_spec):
    spec = write_spec(tmp_path, pbt_spec(tiny_spec))
    done = run_sweep("run", str(spec), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "1 population(s) x 2 members x 3 generations of 128 env steps = 6 segments, 768 env steps" in \
        " ".join(done.stdout.split())
    assert not (tmp_path / "runs").exists()


def test_a_dry_run_prices_the_segments_a_generation_at_a_time_and_weighs_their_disk(tmp_path, tiny_spec):
    import mjsweep
    from mjsweep.api import planning
    from mjsweep.engine.sweep import prepare
    from mjsweep.kinds import kind_of
    from mjsweep.plan.cost import Source

    data = pbt_spec(tiny_spec)
    data.update(total_timesteps=256, runs_dir=str(tmp_path / "runs"))  # two generations of 2 segments, trained
    mjsweep.run(data, workers=2)
    data["total_timesteps"] = 512  # four: the first two's segments succeeded, the other two price from them
    spec = write_spec(tmp_path, data)
    plan = prepare(spec)
    pricing = planning.price_population(plan, 2, "local", None)
    cost = pricing.cost
    assert (cost.runs, cost.env_steps, dict(cost.sources)) == (4, 4 * 128, {Source.OWN: 4})
    one = planning.price_population(plan, 1, "local", None).cost
    # Two segments a generation: side by side on 2 slots, one after the other on 1.
    assert cost.wall_s is not None and one.wall_s is not None and one.wall_s == pytest.approx(2 * cost.wall_s)
    check = kind_of(plan.spec).disk_check(plan, 2)
    assert check is not None
    disk = check.needed
    assert disk.runs == 4 and disk.held.startswith("2 checkpoints held by each running segment, the final one")

    done = run_sweep("run", str(spec), "--dry-run", "--workers", "2")
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())
    assert "cost: 4 runs (PBT segments, a generation at a time), 512 env steps; about " in said
    assert "disk: about " in said and "(4 PPO runs, 2 at once, 2 checkpoints held by each running segment" in said


def test_the_example_config_is_the_population_docs_search_md_describes(tmp_path):
    done = run_sweep("run", str(REPO / "configs" / "smoke_pbt.yaml"), "--runs-dir", str(tmp_path), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "1 population(s) x 4 members x 4 generations of 512 env steps = 16 segments" in " ".join(done.stdout.split())


def test_the_python_api_trains_a_population_as_sweep_run_does(tmp_path, tiny_spec):
    import mjsweep

    data = pbt_spec(tiny_spec, population=2)
    data.update(total_timesteps=256, runs_dir=str(tmp_path / "runs"))
    assert mjsweep.validate(data).runs == 0  # made as the population goes, as a search's
    sweep = mjsweep.run(data, workers=2)
    lines = lineage(tmp_path / "runs" / "tiny")
    assert [(line["generation"], line["member"]) for line in lines] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert sorted(run.run_id for run in sweep.runs) == sorted(line["run"] for line in lines)
    # Each segment's explored values are data: a field of its Run and a float column of the DataFrame.
    by_run = {r.run_id: r for r in sweep.runs}
    frame = sweep.to_dataframe().set_index("run_id")
    for line in lines:
        for key, value in line["hyperparams"].items():
            assert by_run[line["run"]].grid[key] == value and frame.loc[line["run"], key] == value
            assert frame[key].dtype == "float64"


@pytest.mark.slow
def test_sweep_verify_trains_a_segment_again_with_its_lineage_and_it_reproduces(tmp_path, tiny_spec):
    import mjsweep

    data = pbt_spec(tiny_spec, population=2)
    data.update(total_timesteps=256, runs_dir=str(tmp_path / "runs"))
    mjsweep.run(data, workers=2)
    sweep_dir = tmp_path / "runs" / "tiny"
    lines = lineage(sweep_dir)
    [last] = [line for line in lines if (line["generation"], line["member"]) == (1, 0)]
    done = run_sweep("verify", str(sweep_dir), last["run"], "--scratch", str(tmp_path / "scratch"))
    assert done.returncode == 0, done.stdout + done.stderr
    said = " ".join(done.stdout.split())
    # Its parent first, from scratch; then the segment, from the parent's retrained final checkpoint.
    assert f"{last['parent']}: training again in" in said and f"from {last['parent']}" in said
    assert f"{last['run']}: exact" in said
    assert sorted(p.name for p in (tmp_path / "scratch").iterdir()) == sorted([last["parent"], last["run"]])


def lineage(sweep_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (sweep_dir / "pbt.jsonl").read_text().splitlines()]


def final_scores(sweep_dir: Path, lines: list[dict]) -> list[float]:
    last = max(line["generation"] for line in lines)
    return [json.loads((sweep_dir / line["run"] / "result.json").read_text())["eval_mean_return"]
            for line in lines if line["generation"] == last]


@pytest.mark.slow
def test_a_pbt_sweep_records_its_lineage_and_resumes_to_the_same_one(tmp_path, tiny_spec):
    data = pbt_spec(tiny_spec)
    whole = write_spec(tmp_path / "whole", {**data, "runs_dir": str(tmp_path / "whole" / "runs")})
    done = run_sweep("run", str(whole), "--workers", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    sweep_dir = tmp_path / "whole" / "runs" / "tiny"
    lines = lineage(sweep_dir)
    assert [(line["generation"], line["member"]) for line in lines] == [(g, m) for g in range(3) for m in range(2)]
    by_run = {line["run"]: line for line in lines}
    for line in lines[2:]:
        parent = by_run[line["parent"]]
        assert parent["generation"] == line["generation"] - 1
        assert parent["member"] == (line["member"] if line["copied_from"] is None else line["copied_from"])
        if line["copied_from"] is not None:
            assert line["donor_score"] > line["score"]
            for key, how in line["explored"].items():
                was = parent["hyperparams"][key]
                assert how == "resampled" or line["hyperparams"][key] == pytest.approx(
                    was * float(how[1:]), rel=1e-3) or line["hyperparams"][key] in (1e-4, 1e-2, 0.0, 0.1)
    assert any(line["copied_from"] is not None for line in lines), "with 2 members, the worse copies the better"
    copied = next(line for line in lines if line["copied_from"] is not None)
    # the copy starts from its donor's checkpoint and logs: its progress goes back to step 0
    progress = (sweep_dir / copied["run"] / "progress.csv").read_text().splitlines()
    donor_progress = (sweep_dir / copied["parent"] / "progress.csv").read_text().splitlines()
    assert progress[:len(donor_progress)] == donor_progress and len(progress) > len(donor_progress)

    # Ctrl-C once a copy's segment has begun, then `sweep run` again: the same decisions, the same scores.
    stopped = write_spec(tmp_path / "stopped", {**data, "runs_dir": str(tmp_path / "stopped" / "runs")})
    stopped_dir = tmp_path / "stopped" / "runs" / "tiny"
    for _ in range(3):
        proc = start_sweep(stopped, "--workers", "2")
        wait_for(lambda: (stopped_dir / "pbt.jsonl").exists() and len(lineage(stopped_dir)) >= 4
                 and (stopped_dir / lineage(stopped_dir)[2]["run"] / "status.json").exists(),
                 what="generation 1 started", timeout=300)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=300) == 130, launcher_output(stopped)
        if len(lineage(stopped_dir)) < 6:
            break
        # Generation 1's segments (128 steps each) ended before the launcher saw the stop, and it had decided
        # generation 2: this stop cut nothing short, so the sweep starts over and is stopped again.
        shutil.rmtree(stopped_dir)
    assert len(lineage(stopped_dir)) < 6
    cut = tmp_path / "cut" / "runs" / "tiny"
    shutil.copytree(stopped_dir, cut)  # for a launcher killed mid-generation, below
    assert lineage(stopped_dir) == lines[:len(lineage(stopped_dir))]
    again = run_sweep("run", str(stopped), "--workers", "2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert lineage(stopped_dir) == lines
    assert final_scores(stopped_dir, lines) == final_scores(sweep_dir, lines)

    # A launcher killed while it wrote generation 1's lines (the stopped folder with one of them kept, none of its
    # segments started): the rest of them, the same decisions.
    (cut / "pbt.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines[:3]))
    for line in lines[2:]:
        shutil.rmtree(cut / line["run"], ignore_errors=True)
    assert all((cut / line["run"] / "checkpoints" / "checkpoint.json").exists() for line in lines[:2])
    cut_spec = write_spec(tmp_path / "cut", {**data, "runs_dir": str(tmp_path / "cut" / "runs")})
    resumed = run_sweep("run", str(cut_spec), "--workers", "2")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert lineage(cut) == lines
    # a segment's checkpoints go once every segment that copied them has ended: the last generation's stay
    assert [(cut / line["run"] / "checkpoints").exists() for line in lines] == [False] * 4 + [True] * 2

    finished = run_sweep("run", str(whole), "--workers", "2")  # a population that is done trains nothing
    assert finished.returncode == 0 and "6 succeeded" in finished.stdout and "started" not in finished.stdout
    assert lineage(sweep_dir) == lines

    report = run_sweep("report", str(sweep_dir))
    assert report.returncode == 0, report.stderr
    assert "best member" in report.stdout and (sweep_dir / "pbt_curves.svg").exists()
    assert run_sweep("report", str(sweep_dir), "--format", "html").returncode == 0
    page = (sweep_dir / "report.html").read_text()
    assert "<h2>population-based training</h2>" in page and "best member" in page
    assert html.escape(pbtreport.CURVES_CAPTION) in page and "data:image/svg+xml;base64," in page
    replay = yaml.safe_load((sweep_dir / "pbt_best.yaml").read_text())["pbt"]
    assert replay["interval"] == 128 and len(replay["schedule"]) == 3
    assert replay["schedule"][-1] in [line["hyperparams"] for line in lines[4:]]
    # the replay spec is one `sweep run` takes: pasted in place of the search
    replayed = write_spec(tmp_path / "replay", {**data, "pbt": replay, "runs_dir": str(tmp_path / "replay" / "runs")})
    load(replayed)
