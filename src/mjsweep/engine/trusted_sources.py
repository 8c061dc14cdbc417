"""What a `sweep run` will unpickle, judged before the lock is taken and before any run starts: the sweep folder
(runs resumed from their checkpoints, PBT's segments copying their parents', `warm_start: nearest`'s designs)
and a warm start's source run folder (sweepdir/trust.py). A new sweep folder holds nothing to judge."""

from __future__ import annotations

from pathlib import Path

from ..sweepdir.trust import Trust, require_folder
from . import warmstart
from .sweep import SweepPlan


def require_trusted_sources(plan: SweepPlan, trust: Trust = ()) -> None:
    """UntrustedFolderError (exit 2, nothing written) for a folder the sweep would unpickle from that is not
    this user's alone and that no one trusted."""
    trust = list(trust)
    require_folder(plan.sweep_dir.path, trust)
    # The source prepare() found (found again: a search's runs are not planned yet); nearest's lie in the folder.
    source = warmstart.resolve(plan.spec)
    if source is not None:
        require_folder(Path(source.run_dir), trust)
