"""What `sweep run` will do with each run, and why: decided by sweep.decide, shown by the plan table and
the live view, acted on by sweep.execute."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..sweepdir.models import RunSpec
from .extension import Extension


class Action(str, Enum):
    SKIP = "skip"        # succeeded before with the same content
    RESUME = "resume"    # has a checkpoint to continue from
    START = "start"      # never ran, or failed before saving a checkpoint
    EXTEND = "extend"    # continues a finished run of the same content with fewer steps (plan/extension.py)
    EVALUATE = "evaluate"  # succeeded, but evaluated otherwise: its final model is evaluated again, no training


class Reason(str, Enum):
    """Why: what the run's folder held."""

    NEW = "new"                    # no status yet
    SUCCEEDED = "succeeded"        # a status that says so and a valid result
    EVALUATED_OTHERWISE = "evaluated-otherwise"  # succeeded with other evaluation settings than the spec's now
    ENDED = "ended"                # an earlier attempt ended without a result to keep
    LEFT_RUNNING = "left-running"  # marked running by a launcher that is gone: its worker may live on
    CORRUPT = "corrupt"            # status.json or result.json cannot be read
    LONGER = "longer"              # never ran; a finished run of the same content but fewer steps can go on


@dataclass(frozen=True)
class PlannedRun:
    run: RunSpec
    action: Action
    note: str = ""
    """For people: the reason in words (the plan table, warnings)."""
    reason: Reason = Reason.NEW
    extends: Extension | None = None
    """With EXTEND: the finished run continued, and from which step."""
