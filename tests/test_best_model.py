"""best_model.zip and best_vecnormalize.pkl always come from one evaluation, and from the run's own
timeline: a kill at any moment, or a resume that drops later evaluations, never mixes them up."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from mjsweep.sweepdir.files import RunDir
from mjsweep.sweepdir.models import Timing
from mjsweep.worker.checkpoints import BestModel, Checkpointer


class Saves:
    """Stands in for a model or VecNormalize: save(path) writes a tag naming what was saved."""

    def __init__(self, tag: str, num_timesteps: int = 0):
        self.tag, self.num_timesteps = tag, num_timesteps

    def save(self, path: str) -> None:
        Path(path).write_text(self.tag)


def evaluations(run: RunDir, *rows: tuple[int, float]) -> None:
    lines = ["timesteps,mean_return,std_return,returns,lengths,wall_s"]
    lines += [f"{t},{mean},0.0,{mean},100,1.0" for t, mean in rows]
    run.evaluations_csv.write_text("\n".join(lines) + "\n")


def top_pair(run: RunDir) -> tuple[str, str]:
    return run.best_model_zip.read_text(), run.best_vecnormalize.read_text()


def new_best(best: BestModel, timesteps: int, mean: float, keep: Iterable[int | None] = ()) -> None:
    best.save(Saves(f"model {timesteps}"), Saves(f"stats {timesteps}"), timesteps, mean, keep)


def test_a_new_best_replaces_the_pair_only_once_it_is_whole(tmp_path):
    run = RunDir(tmp_path)
    best = BestModel(run)
    new_best(best, 100, 1.0)
    assert top_pair(run) == ("model 100", "stats 100") and best.current().timesteps == 100
    # Killed after the next model and statistics were written, before best.json named them.
    run.best_model(200).write_text("model 200")
    run.best_vecnormalize_at(200).write_text("stats 200")
    best.publish()
    assert top_pair(run) == ("model 100", "stats 100")
    # Killed after best.json, before the top copies: the next start finishes the copy.
    new_best(best, 200, 2.0)
    run.best_model_zip.unlink()  # (a hard link to best/model_200.zip: replace it, do not write into it)
    run.best_model_zip.write_text("model 100")
    best.publish()
    assert top_pair(run) == ("model 200", "stats 200")
    assert sorted(p.name for p in run.best_files()) == ["model_200.zip", "vecnormalize_200.pkl"]


def test_a_resume_brings_back_the_best_its_checkpoint_saw(tmp_path):
    run = RunDir(tmp_path)
    checkpointer = Checkpointer(run, every=100)
    evaluations(run, (100, 5.0))
    new_best(checkpointer.best, 100, 5.0)
    checkpointer.save(Saves("ckpt", num_timesteps=100), 1, Timing(), (0, 0, 0), None)
    assert run.read_checkpoint().best_timesteps == 100
    # A better evaluation after the checkpoint; the checkpoint's best pair stays on disk.
    new_best(checkpointer.best, 200, 9.0, keep=checkpointer.kept_best())
    assert top_pair(run) == ("model 200", "stats 200") and run.best_model(100).exists()

    # The run is killed and resumes from the checkpoint: evaluations.csv loses the row at 200.
    evaluations(run, (100, 5.0))
    checkpointer.best.rewind(run.read_checkpoint())
    assert top_pair(run) == ("model 100", "stats 100")
    current = checkpointer.best.current()
    assert (current.timesteps, current.mean_return) == (100, 5.0)
    assert not run.best_model(200).exists()


def test_a_checkpoint_before_any_evaluation_rewinds_to_no_best(tmp_path):
    run = RunDir(tmp_path)
    checkpointer = Checkpointer(run, every=100)
    checkpointer.save(Saves("ckpt", num_timesteps=100), 1, Timing(), (0, 0, 0), None)
    new_best(checkpointer.best, 200, 1.0, keep=checkpointer.kept_best())
    evaluations(run)
    checkpointer.best.rewind(run.read_checkpoint())
    assert checkpointer.best.current() is None
    assert not run.best_model_zip.exists() and not run.best_vecnormalize.exists() and not run.best_files()


def test_a_later_checkpoint_lets_older_pairs_go_once_no_kept_checkpoint_needs_them(tmp_path):
    run = RunDir(tmp_path)
    checkpointer = Checkpointer(run, every=100)  # two kept: the newest and the one a resume falls back to
    new_best(checkpointer.best, 100, 1.0)
    checkpointer.save(Saves("ckpt", num_timesteps=100), 1, Timing(), (0, 0, 0), None)
    new_best(checkpointer.best, 200, 2.0, keep=checkpointer.kept_best())
    assert run.best_model(100).exists()
    checkpointer.save(Saves("ckpt", num_timesteps=300), 3, Timing(), (0, 0, 0), None)
    assert run.best_model(100).exists()  # the best of the checkpoint at 100, still kept
    checkpointer.save(Saves("ckpt", num_timesteps=400), 4, Timing(), (0, 0, 0), None)
    assert sorted(p.name for p in run.best_files()) == ["model_200.zip", "vecnormalize_200.pkl"]


def test_a_fall_back_to_an_older_checkpoint_brings_back_its_best(tmp_path):
    run = RunDir(tmp_path)
    checkpointer = Checkpointer(run, every=100)
    evaluations(run, (100, 5.0))
    new_best(checkpointer.best, 100, 5.0)
    checkpointer.save(Saves("ckpt", num_timesteps=100), 1, Timing(), (0, 0, 0), None)
    new_best(checkpointer.best, 200, 9.0, keep=checkpointer.kept_best())
    checkpointer.save(Saves("ckpt", num_timesteps=200), 2, Timing(), (0, 0, 0), None)
    new_best(checkpointer.best, 300, 10.0, keep=checkpointer.kept_best())
    # The checkpoint at 200 is damaged: the resume falls back to the one at 100, and to its best.
    older, newer = run.read_checkpoint().kept()
    assert (older.timesteps, older.best_timesteps, newer.best_timesteps) == (100, 100, 200)
    evaluations(run, (100, 5.0))
    checkpointer.best.rewind(older)
    assert top_pair(run) == ("model 100", "stats 100") and checkpointer.best.current().mean_return == 5.0


def test_older_checkpoints_leave_the_best_as_it_is(tmp_path):
    from mjsweep.sweepdir.models import CheckpointRecord

    run = RunDir(tmp_path)
    run.best_model_zip.write_text("model from an older version")
    old = CheckpointRecord.model_validate({"timesteps": 100, "iteration": 1, "model_file": "model_100.zip",
                                           "monitor_bytes": 0, "progress_bytes": 0, "timing": {}})
    BestModel(run).rewind(old)
    assert run.best_model_zip.read_text() == "model from an older version"
