"""The spec's `warm_start:` key: which finished run a sweep's runs start from instead of from scratch.

Pure data and the checks that need nothing but the values written; engine/warmstart.py finds the run on disk
and compares its spaces with the sweep's envs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

DEFAULT_COLD_SHARE = 0.25


class WarmStartSpec(BaseModel):
    """One of:

    - `{from: runs/smoke/<run_id>}`: a run folder (relative to the spec file, as runs_dir is);
    - `{from: <run_id>, sweep: runs/smoke}`: a run of a sweep folder, by its id;
    - `{sweep: runs/smoke, variant: walker, best: true}`: the variant's succeeded run with the best final
      evaluation in that sweep folder;
    - `nearest` (or `{nearest: true, cold_share: 0.25}`), in a design search: each new design starts from the
      finished trial nearest in the searched edit values, but a share of the trials stays cold.

    `replay_buffer: true` also loads the source's replay buffer (off-policy algorithms: SAC, TD3, ...).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, serialize_by_alias=True)

    source: str | None = Field(None, alias="from")
    """A run folder, or with `sweep` a run id."""
    sweep: Path | None = None
    """The sweep folder `from` (a run id) or `variant` is looked up in."""
    variant: str | None = None
    """With `sweep` and `best: true`: the variant whose best run is the source."""
    best: bool = False
    replay_buffer: bool = False
    """Load the source's replay buffer too (its last checkpoint's); off-policy algorithms only."""
    nearest: bool = False
    """In a design search: start each trial from the finished trial nearest in the searched edits."""
    cold_share: float = Field(DEFAULT_COLD_SHARE, ge=0.0, le=1.0)
    """With `nearest`: the share of trials that start cold (trials.jsonl records which)."""

    @model_validator(mode="before")
    @classmethod
    def _nearest_word(cls, value: Any) -> Any:
        return {"nearest": True} if value == "nearest" else value

    @model_validator(mode="after")
    def _one_source(self) -> WarmStartSpec:
        if self.nearest:
            if self.source or self.sweep or self.variant or self.best:
                raise ValueError("nearest picks its own source: give no from, sweep, variant or best with it")
            return self
        if "cold_share" in self.model_fields_set:
            raise ValueError("cold_share goes with nearest only")
        if self.source is not None:
            if self.variant is not None or self.best:
                raise ValueError("give either from (a run folder, or a run id with sweep) or sweep, variant and "
                                 "best: true, not both")
            return self
        if self.sweep is None or self.variant is None or not self.best:
            raise ValueError("name the source run: {from: <run folder>}, {from: <run id>, sweep: <sweep folder>} "
                             "or {sweep: <sweep folder>, variant: <name>, best: true}")
        return self
