"""A sweep folder read back as typed records, as a sequence of its runs: their curves, the report's groups and
comparisons, the best run by any metric, a search's trials, a population's lineage, the cross-evaluation."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from ..errors import InputError
from ..results import sweepreport
from ..results.compare import Comparison
from ..results.experiments import plan_rows
from ..results.report import GroupRow, value_columns
from ..results.rows import ResultRow, collect
from ..sweepdir.csvfiles import read_evaluations, read_progress_points
from ..sweepdir.files import SweepDir
from ..sweepdir.models import RunSpec
from ..sweepdir.trust import Trust

if TYPE_CHECKING:
    import pandas as pd

    from ..crosseval.pairs import Cell
    from ..results.physics_report import PhysicsReport
    from ..search.ranking import TrialRow
    from .lineage import Lineage
    from .policy import Policy


@dataclass(frozen=True)
class Run:
    """One run folder: what its spec.json, status.json and result.json say."""

    run_id: str
    group: str
    """The group its seeds are pooled in, as the report names it ("<group> [earlier spec <hash>]" for a run of
    an earlier spec, loaded with all_specs)."""
    variant: str
    grid: dict[str, Any]
    """Its value of each grid key: the grid's, a search's sampled values, a PBT member's explored ones."""
    edits: dict[str, Any]
    """The edit values its variant was generated from (an edit_grid point, a design trial's), label: value;
    empty for a variant used as is, and for runs written before spec.json kept them."""
    seed: int
    state: str
    """status.json's state: pending, running, succeeded, failed, interrupted or pruned ('unknown': unreadable)."""
    succeeded: bool
    final_return: float | None
    """The final evaluation's mean return; None unless the run succeeded."""
    fps: float | None
    timesteps: int | None
    wall_s: float | None
    training_s: float | None
    eval_s: float | None
    started_at: str | None
    ended_at: str | None
    attempts: int
    cause: str | None
    """Why a run that did not succeed ended, in one line."""
    algo: str | None
    experiment: str | None
    """RunSpec.experiment: the hash of what the run computes but its seed."""
    path: Path
    spec: RunSpec | None
    problems: tuple[str, ...]
    """Files of the run that could not be read, each with why."""
    best_return: float | None = None
    """The best periodic evaluation's mean return (eval.every); None without one, or unless the run succeeded."""
    cpu_s: float | None = None
    """CPU seconds the run's processes used (its cost); None in a result.json from before they were counted."""
    trust: tuple[str, ...] = field(default=(), repr=False)
    """The folders `load(..., trust=)` was told to trust."""

    def policy(self, best: bool = False, trust: Trust = ()) -> Policy:
        """The trained model ready to act, with its frozen normalization and an env factory for its variant;
        `best`: the best periodic evaluation's model (eval.every) where the run kept one. Its files are
        unpickled: UntrustedFolderError unless the sweep folder is the user's alone, or trusted (`trust`
        here or in load(), MJSWEEP_TRUST, ~/.config/mjsweep/trust; docs/trust.md)."""
        from .policy import Policy

        if not self.succeeded or self.spec is None:
            raise InputError(f"{self.run_id}: {self.state}, no trained model to load")
        return Policy(self.spec, self.path, best=best, trust=[*self.trust, *trust])


def _run(row: ResultRow, folder: SweepDir, trust: tuple[str, ...]) -> Run:
    result, status = row.result, row.status
    return Run(run_id=row.run_id, group=row.group, variant=row.variant, grid=dict(row.grid),
               edits=dict(row.edits), seed=row.seed,
               state=row.state, succeeded=row.ok, final_return=row.final_return,
               fps=result.fps if result else None, timesteps=result.timesteps if result else None,
               wall_s=result.wall_s if result else None, training_s=result.training_s if result else None,
               eval_s=result.eval_s if result else None, started_at=status.started_at if status else None,
               ended_at=status.ended_at if status else None, attempts=status.attempts if status else 0,
               cause=row.cause, algo=row.spec.algo if row.spec else None,
               experiment=row.spec.experiment if row.spec else None, path=folder.run(row.run_id).path,
               spec=row.spec, problems=row.problems,
               best_return=result.best_eval_mean_return if result is not None and row.ok else None,
               cpu_s=result.cpu_s if result else None, trust=trust)


@dataclass(frozen=True)
class CurvePoint:
    """A point of a run's learning curve. metric: "ep_rew_mean" (progress.csv, the training episodes' mean
    return) or "eval_mean_return" (evaluations.csv, a periodic evaluation's mean return)."""

    run_id: str
    group: str
    variant: str
    seed: int
    metric: str
    timesteps: int
    value: float


class Sweep(Sequence[Run]):
    """A sweep folder (<runs_dir>/<sweep name>), a sequence of its runs (len, index, iterate: `runs` as a
    list). By default its runs are the last plan's, as `sweep report` shows them; with all_specs, also earlier
    specs' runs, each experiment a group of its own. Reading it unpickles nothing; `trust` is handed to its
    runs' policy()."""

    def __init__(self, path: str | Path, all_specs: bool = False, trust: Trust = ()):
        self.path = Path(path)
        if not self.path.is_dir():
            raise InputError(f"{self.path}: no such sweep folder")
        self.folder = SweepDir(self.path)
        self.all_specs = all_specs
        # left_out: the line saying which runs of earlier specs are not in `runs`; None when none are.
        rows, self.left_out = plan_rows(self.folder, collect(self.folder), all_specs)
        if not rows:
            raise InputError(f"{self.path}: no run folders here (is it <runs_dir>/<sweep name>?)")
        trusted = tuple(str(p) for p in trust)
        self.runs: list[Run] = [_run(row, self.folder, trusted) for row in rows]
        self._reads: dict[str, sweepreport.SweepReport] = {}

    def __repr__(self) -> str:
        return f"Sweep({str(self.path)!r}, {len(self.runs)} runs)"

    def __len__(self) -> int:
        return len(self.runs)

    @overload
    def __getitem__(self, index: int) -> Run: ...

    @overload
    def __getitem__(self, index: slice) -> list[Run]: ...

    def __getitem__(self, index: int | slice) -> Run | list[Run]:
        return self.runs[index]

    def __iter__(self) -> Iterator[Run]:
        return iter(self.runs)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def groups(self) -> list[str]:
        """The groups, best first as the report ranks them."""
        return [g.group for g in self.report()]

    def report(self, rank: str = "final") -> list[GroupRow]:
        """The report's rows, a group of seeds each, best first: what `sweep report` prints. rank "best"
        ranks by each run's best periodic evaluation."""
        return self._read(rank).groups

    def compare(self, *names: str) -> list[Comparison]:
        """Every pair of groups compared over their seeds' final returns, or the two named (a group or a
        variant with one group), as `sweep report --compare` decides: with adaptive seeds, each pair's
        verdict is the sequential test's. Comparison.verdict() says it in words."""
        return self._read("final").compare(list(names))

    def best(self, name: str | None = None, *, metric: str | None = None, mode: str | None = None) -> Run:
        """The best succeeded run. Without a metric: the highest final return of a group (its name as the
        report gives it, or a variant with one group), without a name of the report's best group. With a
        metric: the run with its highest (mode "max", the default) or lowest ("min") value, of the group
        `name` or of every run. metric: a result's (final_return, best_return: the best periodic evaluation,
        cpu_s, fps, wall_s, training_s, eval_s, timesteps), a search objective's metric (eval_iqm, best_iqm,
        auc_iqm, info:<key>, cpu_seconds, cpu_hours, env_steps, mass, actuators, total_gear: one seed's
        value), or "objective", the sweep's search objective (mode: its direction unless given)."""
        if metric is None and mode is None:
            return self._best_final(name)
        from .metrics import reader

        value, maximize = reader(self.folder, metric or "final_return")
        if mode not in (None, "max", "min"):
            raise InputError(f"mode {mode!r}: expected max or min")
        highest = mode == "max" if mode is not None else maximize is not False
        runs = self.runs if name is None else [r for r in self.runs if r.group in self._groups_named(name)]
        scored = [(v, r) for r in runs if r.succeeded if (v := value(r)) is not None]
        if not scored:
            raise InputError(f"{name or self.name}: no succeeded run has a {metric or 'final_return'} value")
        return (max if highest else min)(scored, key=lambda item: item[0])[1]

    def _best_final(self, name: str | None) -> Run:
        """The succeeded run with the highest final return of a group, or of the report's best group."""
        groups = [g.group for g in self.report()]
        chosen = groups if name is None else self._groups_named(name)
        for group in chosen:
            done = [r for r in self.runs if r.group == group and r.final_return is not None]
            if done:
                return max(done, key=lambda r: r.final_return or 0.0)
        raise InputError(f"{name or self.name}: no run has succeeded yet")

    def _groups_named(self, name: str) -> list[str]:
        """The group of that name, or a variant's one group; InputError naming the groups otherwise."""
        groups = [g.group for g in self.report()]
        if name in groups:
            return [name]
        chosen = sorted({r.group for r in self.runs if r.variant == name})
        if len(chosen) != 1:
            raise InputError(f"{name!r}: {'no' if not chosen else 'more than one'} group of that name; "
                             f"the groups: {', '.join(groups)}")
        return chosen

    def trials(self) -> list[TrialRow]:
        """A search's trials, ranked as `sweep report` ranks them (complete ones best first, then pruned,
        running and failed): each with its record (study, number, params, state, value, runs), the seeds that
        counted and the objective's interval. InputError for a sweep that is not a search."""
        from ..search.ranking import trials_of

        found = trials_of(self.folder)
        if found is None:
            raise InputError(f"{self.path}: not a search (no trials.jsonl)")
        return found[0]

    def lineage(self) -> list[Lineage]:
        """A population-based training sweep's populations: members, segments, copies and the best member's
        schedule. InputError for a sweep that is not one."""
        from .lineage import lineages

        found = lineages(self.folder)
        if not found:
            raise InputError(f"{self.path}: not a population-based training sweep (no pbt.jsonl)")
        return found

    def cross_matrix(self) -> list[Cell]:
        """`sweep evaluate --cross`'s matrix: each trained group's mean return over seeds (with its 95%
        interval) on each variant, or why a pair has none. InputError before any cross-evaluation."""
        from ..crosseval.pairs import matrix, trained_runs

        cells = matrix(self.folder, trained_runs(self.folder)[0])
        if not cells:
            raise InputError(f"{self.path}: no cross-evaluation yet (sweep evaluate {self.path} --cross)")
        return cells

    def held_out(self) -> PhysicsReport:
        """eval.physics: each group's seeds on the held-out draws (mean, 10th percentile and fraction over the
        draws, summarized over seeds) and which group is more robust, as `sweep report` shows them. InputError
        before any run has a held-out evaluation."""
        from ..results import physics_report

        read = self._read("final")
        found = physics_report.read(self.folder, read.rows, [g.group for g in read.groups])
        if found is None:
            raise InputError(f"{self.path}: no held-out physics evaluation (eval.physics in its spec)")
        return found

    def to_dataframe(self) -> pd.DataFrame:
        """One row per run: its group, variant, grid values and edit values (a column each, typed as the
        values are), seed, state, final return, fps, times, algorithm and experiment hash. Needs pandas."""
        pandas = _pandas()
        records = []
        for r in self.runs:
            fixed = {"run_id": r.run_id, "group": r.group, "variant": r.variant}
            rest = {"seed": r.seed, "state": r.state, "final_return": r.final_return, "fps": r.fps,
                    "timesteps": r.timesteps, "wall_s": r.wall_s, "training_s": r.training_s, "eval_s": r.eval_s,
                    "started_at": r.started_at, "ended_at": r.ended_at, "attempts": r.attempts, "cause": r.cause,
                    "algo": r.algo, "experiment": r.experiment}
            records.append((fixed, r, rest))
        # A key named like a fixed column (algo) keeps both: the grid's as grid_<key>, an edit's as edit_<label>.
        taken = [*records[0][0], *records[0][2]]
        grid_names, edit_names = value_columns([r.grid for r in self.runs], [r.edits for r in self.runs], taken)
        return pandas.DataFrame.from_records([
            {**fixed, **{name: r.grid.get(k) for k, name in grid_names.items()},
             **{name: r.edits.get(k) for k, name in edit_names.items()}, **rest} for fixed, r, rest in records])

    def curve_points(self) -> list[CurvePoint]:
        """Every run's learning curve in long form: progress.csv's ep_rew_mean, and evaluations.csv's mean
        returns where the sweep evaluates periodically (eval.every)."""
        points = []
        for r in self.runs:
            run_dir = self.folder.run(r.run_id)
            for steps, value in read_progress_points(run_dir.progress_csv):
                points.append(CurvePoint(r.run_id, r.group, r.variant, r.seed, "ep_rew_mean", int(steps), value))
            for evaluation in read_evaluations(run_dir.evaluations_csv):
                points.append(CurvePoint(r.run_id, r.group, r.variant, r.seed, "eval_mean_return",
                                         evaluation.timesteps, evaluation.mean_return))
        return points

    def curves(self) -> pd.DataFrame:
        """curve_points() as a DataFrame (run_id, group, variant, seed, metric, timesteps, value). Needs pandas."""
        pandas = _pandas()
        columns = ["run_id", "group", "variant", "seed", "metric", "timesteps", "value"]
        return pandas.DataFrame([[getattr(p, c) for c in columns] for p in self.curve_points()], columns=columns)

    def _read(self, rank: str) -> sweepreport.SweepReport:
        """The report as the folder was when first asked for with this ranking, read once."""
        if rank not in self._reads:
            self._reads[rank] = sweepreport.read(self.folder, self.all_specs, rank)
        return self._reads[rank]


def load(path: str | Path, all_specs: bool = False, trust: Trust = ()) -> Sweep:
    """The sweep folder at `path` (<runs_dir>/<sweep name>). InputError when it is not one. It reads JSON and
    CSV only, whoever wrote it; `trust`: folders whose pickles its runs' policy() may load though another user
    owns or can write them (docs/trust.md)."""
    return Sweep(path, all_specs, trust)


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError("this needs pandas, which is not installed: pip install pandas") from None
    return pandas
