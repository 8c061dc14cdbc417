"""pbt.jsonl: population-based training's lineage, one line per member and generation (search/pbt.py appends
each generation's lines before any of its segments starts, and replays them on resume)."""

from __future__ import annotations

from pydantic import Field

from .models import FileModel


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
