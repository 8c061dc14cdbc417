"""More steps for finished runs: a run planned with a larger total_timesteps continues the finished run of the
same content with fewer steps from its last checkpoint (plan/extension.py), ends as the run trained from scratch
to the new total would (`sweep verify`), and is priced by the steps it adds; a `lin_` schedule starts over."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from helpers.bounded import tree_digest
from helpers.commands import run_dirs, run_sweep, write_spec
from helpers.fake_sweep import make_run, result
from mjsweep.api.planning import price_planned
from mjsweep.engine.sweep import SweepPlan, decide
from mjsweep.plan import runs as planlib
from mjsweep.plan.extension import Extension, Finished, by_key, extension_of
from mjsweep.plan.planned import Action, Reason
from mjsweep.robots.variants import Variant
from mjsweep.spec.loading import parse
from mjsweep.spec.locator import SpecLocator
from mjsweep.sweepdir.csvfiles import short_last_row
from mjsweep.sweepdir.files import RunDir, SweepDir, write_model
from mjsweep.sweepdir.lineage import continuable
from mjsweep.sweepdir.models import CheckpointRecord, RunSpec, RunState, Timing

VARIANT = Variant("a", Path("/m/a.xml"), "aa" * 32)
OFF_POLICY = {"learning_starts": 100, "batch_size": 32, "buffer_size": 10000, "policy_kwargs": {"net_arch": [16]}}


def planned(total: int, seed: int = 0, **overrides) -> RunSpec:
    """The run of a one-variant spec with `total` steps, as `sweep run` plans it and spec.json stores it."""
    data = {"name": "s", "env": "Ant-v5", "variants": [{"name": "a", "xml": "a.xml"}], "seeds": [seed],
            "total_timesteps": total, "ppo": {"n_steps": 64}, **overrides}
    [run] = planlib.expand(parse(data, SpecLocator(Path("s.yaml"), None)), [VARIANT])
    return RunSpec.model_validate_json(run.model_dump_json())


def test_a_run_with_more_steps_continues_the_finished_run_whose_checkpoint_is_furthest():
    finished = by_key([Finished(planned(1000), 1000), Finished(planned(2000), 1536), Finished(planned(3000), 3000),
                       Finished(planned(8000), 8000)])
    assert extension_of(planned(4000), finished) == Extension(planned(3000).run_id, 3000)
    # a checkpoint that cannot be continued is passed over for an older one
    finished = by_key([Finished(planned(2000), 1536), Finished(planned(3000), "it kept no checkpoint")])
    assert extension_of(planned(4000), finished) == Extension(planned(2000).run_id, 1536)
    # another seed, another learning rate, normalization, algorithm: another run
    for other in (planned(4000, seed=1), planned(4000, ppo={"n_steps": 64, "learning_rate": 1e-3}),
                  planned(4000, normalize=True), planned(4000, algo="sac", ppo={}, sac=OFF_POLICY)):
        assert extension_of(other, finished) is None
    assert extension_of(planned(1000), finished) is None  # only fewer steps are continued


def test_off_policy_and_normalized_runs_are_matched_on_the_content_their_ids_hash():
    sac = {"algo": "sac", "ppo": {}, "sac": OFF_POLICY, "normalize": True}
    found = extension_of(planned(8192, **sac), by_key([Finished(planned(4096, **sac), 4096)]))
    assert found == Extension(planned(4096, **sac).run_id, 4096)
    # a spec.json whose content does not hash to its id (another version's hashing) is never matched
    tampered = planned(4096, **sac).model_copy(update={"content_hash": "0" * 64})
    assert extension_of(planned(8192, **sac), by_key([Finished(tampered, 4096)])) is None


def test_a_run_whose_training_depends_on_its_total_starts_over_and_says_why():
    lin = {"ppo": {"n_steps": 64, "learning_rate": "lin_3e-4"}}
    shorter = planned(4096, **lin)
    said = extension_of(planned(8192, **lin), by_key([Finished(shorter, 4096)]))
    assert said == (f"starts over: its ppo.learning_rate 'lin_3e-4' decays over total_timesteps, so the finished "
                    f"4,096-step run {shorter.run_id} is not its beginning")
    said = extension_of(planned(8192), by_key([Finished(planned(4096), "it kept no checkpoint")]))
    assert said == (f"starts over: the finished 4,096-step run {planned(4096).run_id} cannot be continued (it kept "
                    "no checkpoint)")


def finished_with_checkpoint(sweep: Path, run: RunSpec, at: int, fps: float) -> RunDir:
    """A succeeded run whose newest checkpoint, at `at` timesteps, has its files (exact state too)."""
    run_dir = make_run(sweep, run, RunState.SUCCEEDED, result=result(1.0, fps=fps, timesteps=run.total_timesteps,
                                                                     training_s=run.total_timesteps / fps))
    run_dir.checkpoints.mkdir(exist_ok=True)
    names = [f"model_{at}.zip", f"exact_{at}.pkl"]
    for name in names:
        (run_dir.checkpoints / name).write_bytes(b"x")
    write_model(run_dir.checkpoint_json, CheckpointRecord(timesteps=at, iteration=1, model_file=names[0],
                                                          exact_file=names[1], monitor_bytes=0, progress_bytes=0,
                                                          timing=Timing()))
    return run_dir


def test_a_finished_run_can_be_continued_only_from_a_whole_checkpoint_with_exact_state_and_its_best(tmp_path):
    run_dir = make_run(tmp_path, planned(4096), RunState.SUCCEEDED, result=result(1.0))
    assert continuable(run_dir) == "it kept no checkpoint"
    finished_with_checkpoint(tmp_path, planned(4096), 3072, fps=512.0)
    assert continuable(run_dir) == 3072
    record = run_dir.read_checkpoint()
    assert record is not None
    write_model(run_dir.checkpoint_json, record.model_copy(update={"best_timesteps": 2048}))
    assert continuable(run_dir) == "the best model its checkpoint saw (at 2,048 steps) is gone"
    run_dir.best.mkdir()
    run_dir.best_model(2048).write_bytes(b"x")
    assert continuable(run_dir) == 3072
    write_model(run_dir.checkpoint_json, record.model_copy(update={"exact_file": None}))
    assert continuable(run_dir) == "its checkpoint has no exact state (saved by an earlier version)"


def test_the_dry_run_prices_only_the_steps_past_the_checkpoint_at_the_finished_runs_speed(tmp_path):
    spec = parse({"name": "s", "env": "Ant-v5", "variants": [{"name": "a", "xml": "a.xml"}], "seeds": 2,
                  "total_timesteps": 8192, "ppo": {"n_steps": 64}}, SpecLocator(Path("s.yaml"), None))
    runs = [RunSpec.model_validate_json(r.model_dump_json()) for r in planlib.expand(spec, [VARIANT])]
    source = finished_with_checkpoint(tmp_path, planned(4096), 3072, fps=512.0)
    finished_with_checkpoint(tmp_path, planned(4096, seed=1), 4096, fps=512.0)
    (RunDir(tmp_path / planned(4096, seed=1).run_id).checkpoints / "exact_4096.pkl").unlink()
    plan = SweepPlan(spec, [], runs, SweepDir(tmp_path))
    decided = decide(plan)
    assert [(p.action, p.reason, p.note) for p in decided] == [
        (Action.EXTEND, Reason.LONGER, f"{source.run_id} from step 3,072"),
        (Action.START, Reason.NEW, f"starts over: the finished 4,096-step run {planned(4096, seed=1).run_id} cannot "
                                   "be continued (its checkpoint's exact_4096.pkl is missing)")]
    pricing, skipped = price_planned(plan, decided, 1, "local", None)
    assert (pricing.cost.runs, pricing.cost.env_steps, skipped) == (2, 8192 - 3072 + 8192, 0)
    assert pricing.cost.wall_s == pytest.approx((8192 - 3072 + 8192) / 512.0)  # the finished runs' speed


def test_a_finished_runs_short_last_progress_row_is_found_and_no_other():
    header = b"iteration,timesteps,wall_s,fps,ep_rew_mean,ep_len_mean,rollout_s,train_s\r\n"
    rows = [b"1,1000,1.0,1000.0,,,0.5,0.5\r\n", b"2,2000,2.0,1000.0,,,0.5,0.5\r\n", b"3,2048,2.1,1000.0,,,0.0,0.0\r\n"]
    data = header + b"".join(rows)
    assert short_last_row(data, 2048, 1000) == len(data) - len(rows[-1])
    assert short_last_row(data, 2000, 1000) is None  # not the row at the checkpoint's timesteps
    assert short_last_row(data, 2048, 1) is None  # PPO's rows: one per iteration, however long
    assert short_last_row(header + rows[0], 1000, 1000) is None  # a whole row
    assert short_last_row(header + b"1,96,0.1,960.0,,,0.1,0.0\r\n", 96, 1000) == len(header)
    assert short_last_row(header, 0, 1000) is None


def columns(path: Path, *names: str) -> list[tuple[str, ...]]:
    return [tuple(row[n] for n in names) for row in csv.DictReader(path.open())]


def checkpoints_at(run_dir: Path) -> list[int]:
    record = json.loads((run_dir / "checkpoints" / "checkpoint.json").read_text())
    return [*(c["timesteps"] for c in record["earlier"]), record["timesteps"]]


def extended_and_verified(tmp_path: Path, data: dict, shorter: int, longer: int) -> tuple[Path, Path]:
    """The sweep of `data` trained to `shorter` steps, then run again with `longer`: the extended run (checked to
    continue the finished one, which stays as it was) and the same run trained from scratch by `sweep verify`."""
    data = {**data, "total_timesteps": shorter}
    spec = write_spec(tmp_path, data)
    done = run_sweep("run", str(spec))
    assert done.returncode == 0, done.stdout + done.stderr
    sweep_dir = tmp_path / "runs" / "tiny"
    [finished] = run_dirs(sweep_dir)
    before = tree_digest(finished)
    at = checkpoints_at(finished)[-1]
    write_spec(tmp_path, {**data, "total_timesteps": longer})
    dry = run_sweep("run", str(spec), "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert f"extend ({finished.name} from step {at:,})" in " ".join(dry.stdout.split())
    assert "1 to extend" in dry.stdout and f"{longer - at:,} env steps" in dry.stdout
    more = run_sweep("run", str(spec))
    assert more.returncode == 0, more.stdout + more.stderr
    [extended] = [d for d in run_dirs(sweep_dir) if d != finished]
    assert f"extends     {extended.name}: continues {finished.name} from step {at:,}" in more.stdout
    assert f"resuming {extended.name} from {at} timesteps" in (extended / "log.txt").read_text()
    assert json.loads((extended / "result.json").read_text())["timesteps"] == longer
    assert tree_digest(finished) == before  # the finished shorter run stays as it was
    verified = run_sweep("verify", str(sweep_dir), extended.name, "--scratch", str(tmp_path / "scratch"))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"{extended.name}: exact" in verified.stdout
    return extended, tmp_path / "scratch" / extended.name


@pytest.mark.slow
def test_a_ppo_run_extended_from_4096_to_8192_steps_reproduces_the_run_trained_to_8192(tmp_path, tiny_spec):
    # checkpoints at 1,536 and 3,072: the extension repeats the steps from 3,072 to 4,096 as the fresh run takes them
    tiny_spec.update({"max_episode_steps": 90, "checkpoint_every": 1536, "normalize": True,
                      "eval": {"episodes": 1, "every": 1024}})
    extended, fresh = extended_and_verified(tmp_path, tiny_spec, 4096, 8192)
    # the same rows, evaluations, checkpoints and best model as the run trained from scratch
    assert columns(extended / "progress.csv", "iteration", "timesteps") == \
        columns(fresh / "progress.csv", "iteration", "timesteps")
    assert columns(extended / "evaluations.csv", "timesteps", "returns") == \
        columns(fresh / "evaluations.csv", "timesteps", "returns")
    # the same checkpoints; a succeeded run of the sweep keeps its final one only (RunDir.keep_final_checkpoint),
    # verify's retraining in its scratch folder all it made
    assert checkpoints_at(fresh) == [6144, 7680] and checkpoints_at(extended) == [7680]
    assert (extended / "best" / "best.json").read_text() == (fresh / "best" / "best.json").read_text()


@pytest.mark.slow
def test_a_sac_run_extended_from_4096_to_8192_steps_reproduces_the_run_trained_to_8192(tmp_path, tiny_spec):
    tiny_spec.update({"algo": "sac", "ppo": {}, "sac": {**OFF_POLICY, "train_freq": 4}, "max_episode_steps": 90,
                      "checkpoint_every": 1024, "normalize": True, "eval": {"episodes": 1, "every": 2048}})
    extended, fresh = extended_and_verified(tmp_path, tiny_spec, 4096, 8192)
    assert json.loads((extended / "result.json").read_text())["replay_buffer_resumed"] == 4096
    # a row per 1,000 timesteps, as the fresh run writes them: not the finished run's last row, at 4,096
    assert columns(extended / "progress.csv", "iteration", "timesteps") == \
        columns(fresh / "progress.csv", "iteration", "timesteps")
    assert columns(extended / "evaluations.csv", "timesteps", "returns") == \
        columns(fresh / "evaluations.csv", "timesteps", "returns")
    assert checkpoints_at(fresh) == [7168, 8192] and checkpoints_at(extended) == [8192]


@pytest.mark.slow
def test_a_run_with_a_lin_schedule_starts_over_and_the_dry_run_says_why(tmp_path, tiny_spec):
    tiny_spec["ppo"]["learning_rate"] = "lin_3e-4"
    spec = write_spec(tmp_path, {**tiny_spec, "checkpoint_every": 256})
    assert run_sweep("run", str(spec)).returncode == 0
    [finished] = run_dirs(tmp_path / "runs" / "tiny")
    write_spec(tmp_path, {**tiny_spec, "checkpoint_every": 256, "total_timesteps": 1024})
    dry = run_sweep("run", str(spec), "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    said = " ".join(dry.stdout.split())
    assert (f"start (starts over: its ppo.learning_rate 'lin_3e-4' decays over total_timesteps, so the finished "
            f"512-step run {finished.name} is not its beginning)") in said
    assert "0 to resume, 0 to skip" in said and "1,024 env steps" in said
    more = run_sweep("run", str(spec))
    assert more.returncode == 0, more.stdout + more.stderr
    [longer] = [d for d in run_dirs(tmp_path / "runs" / "tiny") if d != finished]
    assert "resuming" not in (longer / "log.txt").read_text()
    assert json.loads((longer / "result.json").read_text())["resumed_from"] is None
