"""The typed models of a sweep folder's JSON files: versions, tolerant reads, the success rule."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from helpers.commands import write_spec
from helpers.fake_sweep import make_run, result, run_spec
from helpers.models import TINY_XML
from mjsweep.engine.sweep import Action, _decide_one, prepare, variants_record
from mjsweep.results.rows import read_row
from mjsweep.results.runview import view_of
from mjsweep.sweepdir import index as runindex
from mjsweep.sweepdir.files import CorruptFileError, RunDir, SweepDir, write_model
from mjsweep.sweepdir.index import IndexEntry
from mjsweep.sweepdir.models import (
    SCHEMA,
    CheckpointRecord,
    RunResult,
    RunSpec,
    RunState,
    RunStatus,
    SweepVariants,
    Timing,
    VariantRecord,
    succeeded,
)
from mjsweep.ui.cli import app

RESULT = RunResult(run_id="v_s0", eval_mean_return=1.5, eval_std_return=0.5, timesteps=512, fps=900.0,
                   early_fps=950.0, torch_threads=1, versions={"python": "3.11"})
CHECKPOINT = CheckpointRecord(timesteps=256, iteration=2, model_file="model_256.zip", monitor_bytes=10,
                              progress_bytes=20, timing=Timing(wall_s=1.0, rollout_s=0.6, train_s=0.4))
STATUS = RunStatus(state=RunState.FAILED, attempts=2, returncode=1, error_tail="Traceback")
ENTRY = IndexEntry(run_id="v_s0", variant="v", grid={"ppo.gamma": 0.9}, seed=0, state="succeeded", attempts=1,
                   timesteps=512, total_timesteps=512, fps=900.0, final_return=1.5, problems=("a problem",))
VARIANTS = SweepVariants(variants=[VariantRecord(name="v", xml="/x.xml", sha256="ab", bodies=3, joints=4,
                                                 actuators=2, total_mass=1.25, obs_shape=(17,), act_shape=(6,))])


@pytest.mark.parametrize("record", [RESULT, CHECKPOINT, STATUS, ENTRY, VARIANTS], ids=lambda r: type(r).__name__)
def test_each_file_model_round_trips_through_its_file(tmp_path, record):
    path = tmp_path / "file.json"
    write_model(path, record)
    data = json.loads(path.read_text())
    assert data["schema"] == SCHEMA and "schema_version" not in data
    assert type(record).from_file(data) == record


def test_a_file_without_schema_is_version_1_and_unknown_keys_are_ignored(tmp_path):
    run = RunDir(tmp_path)
    run.result_json.write_text(json.dumps({"eval_mean_return": 2.0, "fps": 10.0, "from_a_later_version": [1]}))
    loaded = run.read_result()
    assert (loaded.schema_version, loaded.eval_mean_return, loaded.fps) == (1, 2.0, 10.0)
    run.status_json.write_text(json.dumps({"state": "succeeded", "attempts": 1, "new_key": True}))
    assert (run.read_status().schema_version, run.read_status().state) == (1, RunState.SUCCEEDED)
    run.checkpoints.mkdir()
    run.checkpoint_json.write_text(json.dumps({**CHECKPOINT.model_dump(mode="json"), "extra": 1}
                                              | {"schema": 7}))
    assert run.read_checkpoint().model_copy(update={"schema_version": SCHEMA}) == CHECKPOINT
    write_model(run.result_json, loaded)  # a rewrite carries the current version
    assert json.loads(run.result_json.read_text())["schema"] == SCHEMA


def test_a_file_of_the_wrong_shape_is_corrupt(tmp_path):
    run = RunDir(tmp_path)
    run.result_json.write_text(json.dumps({"eval_mean_return": "high"}))
    with pytest.raises(CorruptFileError, match="result.json"):
        run.read_result()


def test_the_index_trusts_only_lines_it_fully_understands(tmp_path):
    index = tmp_path / "index.jsonl"

    def read_back(line: dict) -> IndexEntry | None:
        index.write_text(json.dumps(line) + "\n")
        return runindex.ended_entries(index)["v_s0"]

    line = ENTRY.to_file()
    assert read_back(line) == ENTRY
    old = read_back({k: v for k, v in line.items() if k != "schema"})  # written before versions: still read
    assert (old.schema_version, old.final_return) == (1, 1.5)
    assert read_back({**line, "new_column": 1}) is None  # the run's files are read instead
    assert read_back({**line, "schema": SCHEMA + 1}) is None
    assert read_back({"run_id": "v_s0", "state": "succeeded"}) is None
    assert view_of(ENTRY).problems == ("a problem",)


@pytest.mark.parametrize("state, result_data, expected", [
    (RunState.SUCCEEDED, {"eval_mean_return": 0.0}, True),
    (RunState.SUCCEEDED, {"fps": 1.0}, False),  # ended without its final evaluation
    (RunState.SUCCEEDED, None, False),
    (RunState.FAILED, {"eval_mean_return": 1.0}, False),
    (None, {"eval_mean_return": 1.0}, False),
])
def test_one_rule_says_a_run_succeeded(tmp_path, state, result_data, expected):
    status = RunStatus(state=state) if state else None
    loaded = RunResult.from_file(result_data) if result_data is not None else None
    assert succeeded(status, loaded) is expected
    spec = run_spec("v", 0)
    run = make_run(tmp_path, spec, state, result=result_data)
    if result_data is None:
        run.result_json.unlink(missing_ok=True)
    assert read_row(run).ok is expected
    assert (_decide_one(spec, run).action is Action.SKIP) is expected
    assert run.has_complete_result() is (result_data is not None and "eval_mean_return" in result_data)


def test_variants_json_is_what_report_reads_instead_of_compiling(tmp_path):
    spec = write_spec(tmp_path, {"name": "v", "env": "HalfCheetah-v5", "max_episode_steps": 50,
                                 "variants": [{"name": "walker", "xml": str(TINY_XML)}], "total_timesteps": 256,
                                 "runs_dir": "runs"})
    record = variants_record(prepare(spec))
    (walker,) = record.variants
    assert (walker.name, walker.xml) == ("walker", str(TINY_XML))
    assert walker.bodies > 0 and walker.obs_shape and walker.act_shape  # compiled, and from the env probe

    sweep = SweepDir(tmp_path / "runs" / "v")
    make_run(sweep.path, run_spec("walker", 0, xml=str(tmp_path / "gone.xml")), RunState.SUCCEEDED,
             result=result(1.0))
    made_up = record.model_copy(update={"variants": [walker.model_copy(update={"bodies": 99, "total_mass": 7.0})]})
    write_model(sweep.variants_json, made_up)
    out = CliRunner().invoke(app, ["report", str(sweep.path), "--format", "json"])
    assert out.exit_code == 0, out.output
    (group,) = json.loads(out.stdout)["groups"]
    assert (group["model"]["bodies"], group["model"]["total_mass"]) == (99, 7.0)  # not compiled: its XML is gone


def test_tensorboard_travels_in_spec_json_outside_the_content_hash(tmp_path):
    base = {"name": "tb", "env": "HalfCheetah-v5", "variants": [{"name": "walker", "xml": str(TINY_XML)}],
            "total_timesteps": 256, "runs_dir": "runs"}
    plain = prepare(write_spec(tmp_path, base, "plain.yaml"), check_envs=False).runs
    logged = prepare(write_spec(tmp_path, {**base, "tensorboard": True}, "logged.yaml"), check_envs=False).runs
    assert [r.run_id for r in logged] == [r.run_id for r in plain]
    assert [r.tensorboard for r in logged] == [True] and [r.tensorboard for r in plain] == [False]
    older = {k: v for k, v in logged[0].model_dump(mode="json").items() if k != "tensorboard"}
    assert RunSpec.model_validate_json(json.dumps(older)).tensorboard is False  # a spec.json from before
