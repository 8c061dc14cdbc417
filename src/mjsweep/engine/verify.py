"""`sweep verify SWEEP_DIR [RUN ...]`: finished runs trained again from scratch (a PBT segment with the
segments it descends from), one at a time, in a scratch folder with the same spec.json, and compared with what
the sweep folder holds: monitor.csv episode by
episode, evaluations.csv row by row, and the final model's parameters and optimizer state. On the same
machine and libraries, on the CPU, a run reproduces exactly, however often it was stopped and resumed
(docs/reliability.md, "Exact resume"). Nothing is written into the sweep folder."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ..childproc import child_env
from ..errors import InputError
from ..launchers.spawn import spawn_worker, worker_command
from ..sweepdir.csvfiles import read_evaluation_cells, read_monitor_cells
from ..sweepdir.files import RunDir, SweepDir, read_model, read_or_none, write_model
from ..sweepdir.lineage import segment_chain, start_from
from ..sweepdir.models import RunSpec
from ..sweepdir.trust import Trust, granted, require_folder
from . import warmstart

STOP_GRACE_S = 10.0
"""From a Ctrl-C to the kill of a retraining: as long as `sweep run` gives its runs by default."""


@dataclass(frozen=True)
class Verdict:
    run_id: str
    difference: str | None
    """Where the retraining first differs from the run, in words; None: it reproduced exactly."""

    @property
    def line(self) -> str:
        return f"{self.run_id}: {'exact' if self.difference is None else 'differs: ' + self.difference}"


def chosen_runs(sweep_dir: Path, run_ids: list[str], sample: int | None) -> list[RunDir]:
    """The named runs, or `sample` of the finished ones drawn at random (all of them when fewer)."""
    folder = SweepDir(sweep_dir)
    finished = [run for run in folder.run_dirs() if run.has_complete_result()]
    if run_ids:
        known = {run.path.name: run for run in finished}
        missing = [r for r in run_ids if r not in known]
        if missing:
            raise InputError(f"{sweep_dir}: no finished run named {', '.join(missing)}")
        return [known[r] for r in run_ids]
    if not finished:
        raise InputError(f"{sweep_dir}: no finished run to verify")
    return sorted(random.sample(finished, min(sample or 1, len(finished))), key=lambda run: run.path.name)


def verify(runs: list[RunDir], scratch: Path, say: Callable[[str], None]) -> list[Verdict]:
    """Each run trained again in scratch/<run id>, then compared; a verdict each, said as it comes. A PBT
    segment is trained again with its whole lineage, each segment resuming the retrained one before it, as the
    sweep trained them (an ancestor two chosen segments share is trained once)."""
    verdicts = []
    retrained: dict[str, tuple[RunDir, int]] = {}
    for run in runs:
        parent: RunDir | None = None
        failed = None
        for segment in segment_chain(run):
            name = segment.path.name
            if name not in retrained:
                again = RunDir(scratch / name)
                say(f"{name}: training again in {again.path}" + (f", from {parent.path.name}" if parent else ""))
                retrained[name] = again, _train_again(segment, again, parent)
            again, code = retrained[name]
            if code:
                whose = "the retraining" if name == run.path.name else f"the retraining of its ancestor {name}"
                failed = f"{whose} exited with code {code} (see {again.log})"
                break
            parent = again
        difference = failed if failed is not None else first_difference(run, retrained[run.path.name][0])
        verdicts.append(Verdict(run.path.name, difference))
        say(verdicts[-1].line)
    return verdicts


def _train_again(run: RunDir, again: RunDir, parent: RunDir | None) -> int:
    """The run's spec trained in `again` (from the retrained parent's final checkpoint, a PBT segment's); its
    exit code."""
    again.path.mkdir(parents=True)
    shutil.copyfile(run.spec_json, again.spec_json)
    spec = read_or_none(lambda: read_model(run.spec_json, RunSpec))
    if spec is not None and (xml := run.model_xml(spec)) != Path(spec.xml):  # the sweep folder has moved since
        write_model(again.spec_json, spec.model_copy(update={"xml": str(xml)}))
    if parent is not None:
        start_from(parent, again)
    worker = spawn_worker(worker_command(again.path), again.path, again.log, child_env())
    try:
        return worker.wait()
    finally:  # a Ctrl-C: the retraining saves its checkpoint and ends, or is killed after the grace period
        worker.stop(STOP_GRACE_S)


def first_difference(run: RunDir, again: RunDir) -> str | None:
    """Where `again` first differs from `run`: an episode, an evaluation, a parameter; None if nowhere."""
    episodes, retrained = read_monitor_cells(run.monitor_csv), read_monitor_cells(again.monitor_csv)
    for k, (one, other) in enumerate(zip(episodes, retrained, strict=False), start=1):
        if one != other:
            return f"first at episode {k} (return {one[0]} vs {other[0]}, length {one[1]} vs {other[1]})"
    if len(episodes) != len(retrained):
        return f"{len(episodes)} episodes vs {len(retrained)}"
    evaluations, reevaluated = read_evaluation_cells(run.evaluations_csv), read_evaluation_cells(again.evaluations_csv)
    for row, again_row in zip(evaluations, reevaluated, strict=False):
        if row != again_row:
            return (f"the evaluation at {row.get('timesteps')} timesteps (mean return {row.get('mean_return')} vs "
                    f"{again_row.get('mean_return')})")
    if len(evaluations) != len(reevaluated):
        return f"{len(evaluations)} evaluations vs {len(reevaluated)}"
    compared = subprocess.run([sys.executable, "-m", "mjsweep.worker.model_diff", str(run.model_zip),
                               str(again.model_zip)], capture_output=True, text=True, env=child_env(),
                              stdin=subprocess.DEVNULL)
    if compared.returncode:
        return f"the final models could not be compared: {(compared.stderr.strip().splitlines() or [''])[-1]}"
    found = compared.stdout.strip()
    return f"parameter {found} differs" if found else None


def scratch_folder(given: Path | None) -> Path:
    """Where runs are trained again: the folder given (made if need be), else a new temporary one."""
    if given is None:
        return Path(tempfile.mkdtemp(prefix="mjsweep-verify-"))
    given.mkdir(parents=True, exist_ok=True)
    return given


def verify_sweep(sweep_dir: Path, run_ids: list[str], sample: int | None, scratch: Path | None,
                 say: Callable[[str], None], trust: Trust = ()) -> list[Verdict]:
    """`sweep verify`: the chosen finished runs trained again in a scratch folder outside the sweep folder (a
    temporary one, deleted at the end, unless one is given) and compared with their originals. Refuses
    (UntrustedFolderError) before anything is unpickled when the sweep folder, or a warm start's source the
    retrainings load, is not this user's alone and no one trusted it."""
    runs = chosen_runs(sweep_dir, run_ids, sample)
    trust = list(trust)
    require_folder(sweep_dir, trust)
    for source in sorted(_warm_sources(runs)):
        require_folder(source, trust)
    if scratch is not None:
        if scratch.resolve().is_relative_to(sweep_dir.resolve()):
            raise InputError(f"{scratch}: the scratch folder must lie outside the sweep folder")
        taken = list(dict.fromkeys(segment.path.name for run in runs for segment in segment_chain(run)
                                   if (scratch / segment.path.name).exists()))
        if taken:
            raise InputError(f"{scratch}: already holds {', '.join(taken)}; give another --scratch")
    folder = scratch_folder(scratch)
    try:
        with granted(trust):  # the retrainings and the comparisons check again
            return verify(runs, folder, say)
    finally:
        if scratch is None:
            shutil.rmtree(folder, ignore_errors=True)


def _warm_sources(runs: list[RunDir]) -> set[Path]:
    """The source run folders the retrainings of `runs` (and of their PBT ancestors) start from."""
    sources = set()
    for run in runs:
        for segment in segment_chain(run):
            spec = read_or_none(partial(read_model, segment.spec_json, RunSpec))
            if (folder := warmstart.source_folder(spec)) is not None:
                sources.add(folder)
    return sources
