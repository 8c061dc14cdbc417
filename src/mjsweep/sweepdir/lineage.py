"""pbt.jsonl: population-based training's lineage, one line per member and generation (search/pbt.py appends
each generation's lines before any of its segments starts, and replays them on resume); a segment's folder
seeded with its parent's final checkpoint (as is the folder of a run that extends a finished one to more
steps: plan/extension.py); a segment's chain of parents back to generation 0."""

from __future__ import annotations

import shutil

from pydantic import Field

from .csvfiles import short_last_row
from .files import RunDir, SweepDir, read_or_none, write_model
from .journal import Journal
from .models import FileModel
from .trust import require


class SegmentRecord(FileModel):
    """One member's segment of one generation: what it trains with, and where it starts from."""

    population: str
    """The population's key: its variant and grid point (one population per pair)."""
    generation: int
    """From 0; generation g trains from g * interval to (g + 1) * interval env steps."""
    member: int
    """From 0; member i trains with seed i."""
    run: str
    """The segment's run id (its folder)."""
    hyperparams: dict[str, float]
    """The explored keys (<algo>.<kwarg>) as this segment trains with them."""
    parent: str | None = None
    """The run whose final checkpoint this segment resumes from; None in generation 0."""
    copied_from: int | None = None
    """The member whose checkpoint it copied (exploit); None: it continues its own."""
    previous: dict[str, float] = Field(default_factory=dict)
    """Its explored values in the generation before (before the perturbation)."""
    explored: dict[str, str] = Field(default_factory=dict)
    """How each value changed on a copy: "x1.25" (a factor) or "resampled"."""
    score: float | None = None
    """Its own previous segment's final evaluation (None: that segment failed, or generation 0)."""
    donor_score: float | None = None
    """The copied member's previous segment's final evaluation."""


def segments(folder: SweepDir) -> Journal[SegmentRecord]:
    """pbt.jsonl: every member's segment of every generation, each generation's lines before any of them starts."""
    return Journal(folder.pbt_jsonl, SegmentRecord)


def start_from(parent: RunDir, child: RunDir, *, keep_best: bool = False, row_steps: int | None = None) -> None:
    """The parent's final checkpoint and its logs up to it, copied into the child's folder: the child's first
    attempt resumes from them. checkpoint.json is written last, so a copy cut short is done again. keep_best:
    the best evaluation's model as the checkpoint saw it comes too (a run extended to more steps, whose best so
    far is its own); a PBT segment's best starts afresh. row_steps (a run extended to more steps): the parent's
    last progress row is left out where it was the short row of its last iteration, which the longer run never
    writes (its resume continues the row under way).
    UntrustedFolderError, before anything is copied, for a parent's file in a sweep folder no one trusted."""
    if child.checkpoint_json.exists():
        return  # copied already; the child's own checkpoints may have followed
    checkpoint = read_or_none(parent.read_checkpoint)
    if checkpoint is None:
        return  # nothing to copy: the child starts from 0 (its parent failed before any checkpoint)
    for name in checkpoint.files():  # the copy is this user's: whose the original is is judged here
        require(parent.checkpoints / name, parent.path.parent)
    child.checkpoints.mkdir(exist_ok=True)
    for name in checkpoint.files():
        shutil.copyfile(parent.checkpoints / name, child.checkpoints / name)
    update: dict = {"earlier": []} if keep_best else {"earlier": [], "best_timesteps": None}
    for source, target, size in ((parent.monitor_csv, child.monitor_csv, checkpoint.monitor_bytes),
                                 (parent.progress_csv, child.progress_csv, checkpoint.progress_bytes),
                                 (parent.evaluations_csv, child.evaluations_csv, checkpoint.evaluations_bytes)):
        if source.exists():
            with open(source, "rb") as fh:
                data = fh.read(size)
            if target == child.progress_csv and row_steps is not None \
                    and (cut := short_last_row(data, checkpoint.timesteps, row_steps)) is not None:
                data = data[:cut]
                update.update(progress_bytes=cut, iteration=checkpoint.iteration - 1)
            target.write_bytes(data)
    at = checkpoint.best_timesteps
    if keep_best and at is not None:  # the child's resume makes it its best (BestModel.rewind)
        child.best.mkdir(exist_ok=True)
        for source in (parent.best_model(at), parent.best_vecnormalize_at(at)):
            if source.exists():
                shutil.copyfile(source, child.best / source.name)
    write_model(child.checkpoint_json, checkpoint.model_copy(update=update))


def continuable(run: RunDir) -> int | str:
    """The timesteps of the run's newest checkpoint, which start_from(keep_best=True) copies for a resume that
    reproduces the run exactly, or why there is none such: no checkpoint, one saved before exact state was, a
    file gone, or the best model it saw gone."""
    checkpoint = read_or_none(run.read_checkpoint)
    if checkpoint is None:
        return "it kept no checkpoint"
    if checkpoint.exact_file is None:
        return "its checkpoint has no exact state (saved by an earlier version)"
    missing = [name for name in checkpoint.files() if not (run.checkpoints / name).exists()]
    if missing:
        return f"its checkpoint's {missing[0]} is missing"
    at = checkpoint.best_timesteps
    if at is not None and not run.best_model(at).exists():
        return f"the best model its checkpoint saw (at {at:,} steps) is gone"
    return checkpoint.timesteps


def segment_chain(run: RunDir) -> list[RunDir]:
    """The run's segments from generation 0 to itself, each resuming the one before (pbt.jsonl's parents, in
    the run's sweep folder); [run] for a run that is no PBT segment."""
    folder = SweepDir(run.path.parent)
    parents = {line.run: line.parent for line in segments(folder).lines()}
    chain = [run]
    while (parent := parents.get(chain[0].path.name)) is not None and len(chain) <= len(parents):
        chain.insert(0, folder.run(parent))
    return chain
