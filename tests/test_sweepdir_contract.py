"""The sweep folder's contract (mjsweep.sweepdir): every file's model on one schema scheme, one tolerant
reader per CSV, and no file name spelled outside the package."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import mjsweep
from mjsweep.results.report import eval_auc
from mjsweep.search.journal import replay
from mjsweep.sweepdir.csvfiles import (
    CrossMatrixRow,
    EvaluationRow,
    ProgressRow,
    csv_header,
    csv_line,
    csv_text,
    read_evaluations,
    read_monitor_episodes,
    read_progress_points,
)
from mjsweep.sweepdir.files import IN_RUN, RunDir, SweepDir, read_model, read_or_none, write_model
from mjsweep.sweepdir.files import append_line as append
from mjsweep.sweepdir.index import ENDED_STATES, IndexEntry
from mjsweep.sweepdir.models import SCHEMA, CrossResult, DisplayState, RunSpec, RunState, TrialRecord, TrialState

FIXTURES = Path(__file__).parent / "fixtures"
SCHEMA2 = FIXTURES / "schema2_sweep"


def test_spec_json_without_a_schema_is_version_1_and_is_written_with_the_current_one():
    old = next((FIXTURES / "schema1_sweep").glob("*/spec.json")).read_bytes()
    spec = RunSpec.from_json(old)
    assert spec.schema_version == 1 and spec.hyperparams == {"batch_size": 64, "n_epochs": 1, "n_steps": 128}
    written = spec.to_file()
    assert written["schema"] == SCHEMA and "ppo" not in written and written["hyperparams"] == spec.hyperparams
    assert RunSpec.from_file(written).model_copy(update={"schema_version": 1}) == spec


def test_trial_lines_of_the_old_counter_replay_and_new_lines_carry_the_shared_version(tmp_path):
    trials = tmp_path / "trials.jsonl"
    trials.write_bytes((SCHEMA2 / "trials.jsonl").read_bytes())
    records = replay(trials)
    assert [r.schema_version for r in records] == [1] * len(records) and records
    done = records[0].model_copy(update={"state": TrialState.FAILED, "note": "x"})
    append(trials, done)
    assert json.loads(trials.read_text().splitlines()[-1])["schema"] == SCHEMA
    assert next(r for r in replay(trials) if r.key == done.key).state is TrialState.FAILED
    assert isinstance(done, TrialRecord)


def test_a_cross_result_writes_only_the_keys_of_its_kind(tmp_path):
    evaluated = CrossResult(episodes=2, mean=1.5, std=0.5, returns=[1.0, 2.0], lengths=[10, 10])
    skipped = CrossResult(episodes=2, skipped="action space (3,) differs from the policy's (2,)")
    write_model(tmp_path / "a.json", evaluated)
    write_model(tmp_path / "b.json", skipped)
    assert set(json.loads((tmp_path / "a.json").read_text())) == {"schema", "episodes", "mean", "std", "returns",
                                                                  "lengths"}
    assert set(json.loads((tmp_path / "b.json").read_text())) == {"schema", "episodes", "skipped"}
    assert read_model(tmp_path / "b.json", CrossResult) == skipped
    old = next((SCHEMA2 / "cross").glob("*/*.json"))
    result = read_model(old, CrossResult)
    assert result is not None and result.schema_version == 1 and result.mean is not None and result.skipped is None


def test_the_evaluations_reader_skips_a_bad_row_and_reads_no_file_as_no_rows(tmp_path):
    path = tmp_path / "evaluations.csv"
    path.write_text(csv_header(EvaluationRow) + "100,2.0,0.0,2.0,50,1.0\n"
                    "200,not-a-number,0,,,\n" "250\n" "300,6.0,1.0,5.0 7.0,50 50,3.0\n")
    assert [(e.timesteps, e.mean_return) for e in read_evaluations(path)] == [(100, 2.0), (300, 6.0)]
    assert eval_auc(path) == 4.0  # the bad rows no longer void the run's area under its curve
    assert read_evaluations(tmp_path / "missing.csv") == [] and eval_auc(tmp_path / "missing.csv") is None


def test_every_csv_is_written_through_its_row_type_in_the_format_older_versions_wrote(tmp_path):
    progress = ProgressRow(2, 256, 2.0, 128.0, None, None, 0.5, 0.25)
    assert csv_header(ProgressRow) == "iteration,timesteps,wall_s,fps,ep_rew_mean,ep_len_mean,rollout_s,train_s\r\n"
    assert csv_line(progress) == "2,256,2.0,128.0,,,0.5,0.25\r\n"
    evaluation = EvaluationRow(300, 6.0, 1.0, (5.0, 7.0), (50, 50), 3.0)
    assert csv_line(evaluation) == "300,6.0,1.0,5.0 7.0,50 50,3.000\n"
    (tmp_path / "evaluations.csv").write_text(csv_text(EvaluationRow, [evaluation]))
    assert [(e.timesteps, e.mean_return) for e in read_evaluations(tmp_path / "evaluations.csv")] == [(300, 6.0)]
    # A name with a comma or a quote is quoted as csv quotes it, and numbers keep six significant digits.
    cross = CrossMatrixRow('a,b "c"', "d", 3, 1.23456789, None, 2.0, "")
    assert csv_text(CrossMatrixRow, [cross]) == ('train,test,seeds,mean,ci95_low,ci95_high,skipped\n'
                                                 '"a,b ""c""",d,3,1.23457,,2,\n')


def test_the_progress_and_monitor_readers_keep_the_rows_that_have_their_values(tmp_path):
    progress = tmp_path / "progress.csv"
    progress.write_text("iteration,timesteps,wall_s,fps,ep_rew_mean,ep_len_mean,rollout_s,train_s\n"
                        "1,128,1.0,128,,,0.5,0.5\n2,256,2.0,128,-1.5,100,0.5,0.5\n3,384,3.0,128,x,100,0.5,0.5\n")
    assert read_progress_points(progress) == [(256.0, -1.5)]
    monitor = tmp_path / "monitor.csv"
    monitor.write_text('#{"t_start": 0, "env_id": "x"}\nr,l,t\n1.5,100,0.1\n,,\n2.5,50,0.2\n')
    assert read_monitor_episodes(monitor) == [(1.5, 100.0), (2.5, 50.0)]


def test_no_file_of_the_sweep_folder_is_named_outside_the_contract():
    sweep = SweepDir(Path("s"))
    paths = [getattr(IN_RUN, attr) for attr, value in vars(type(IN_RUN)).items() if isinstance(value, property)]
    paths += [getattr(sweep, attr) for attr, value in vars(SweepDir).items() if isinstance(value, property)]
    names = {p.name for p in paths if isinstance(p, Path)}
    files = {n for n in names if "." in n}
    assert {"spec.json", "status.json", "progress.csv", "trials.jsonl", "matrix.csv"} <= files, "the names are read"
    package = Path(mjsweep.__file__).parent
    found = []
    for path in package.rglob("*.py"):
        if "sweepdir" in path.relative_to(package).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and any(node.value == n or node.value.endswith("/" + n) for n in files):
                found.append(f"{path.relative_to(package)}:{node.lineno}: {node.value!r}")
    assert found == []


def test_every_run_state_shows_as_itself_and_an_index_line_reads_back_as_a_display_state():
    assert {DisplayState.of(state).value for state in RunState} <= {s.value for s in DisplayState}
    line = {"run_id": "r", "variant": "v", "grid": {}, "seed": 0, "state": "succeeded"}
    entry = IndexEntry.model_validate(line)
    assert entry.state is DisplayState.SUCCEEDED and entry.state in ENDED_STATES
    assert json.loads(entry.model_dump_json())["state"] == "succeeded"
    assert f"{DisplayState.STALE}" == "stale"  # what the status table prints


def test_a_corrupt_file_reads_as_no_file_and_says_what_is_wrong_where_the_caller_keeps_problems(tmp_path):
    run = RunDir(tmp_path)
    run.status_json.write_text("{not json", encoding="utf-8")
    problems: list[str] = []
    assert read_or_none(run.read_status) is None
    assert read_or_none(run.read_status, problems) is None and len(problems) == 1
    assert str(run.status_json) in problems[0] and "not valid JSON" in problems[0]
    assert read_or_none(run.read_result, problems) is None and len(problems) == 1  # missing: no problem
    run.resume_json.write_text("[]", encoding="utf-8")
    assert run.fell_back() == f"{run.resume_json}: expected a JSON object"
