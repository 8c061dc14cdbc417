"""`sweep report` as one object: a sweep folder read once (groups, comparisons, adaptive seeds' rounds, a
search's trials and confirmations, a population's members, the warnings) and rendered from it as report.csv,
report.md and JSON. The command line prints its table and writes report.html from the same object. What is
particular to a sweep's kind comes as sections (results/sections.py), which each format renders its own way.

The decision figures are drawn by whoever builds the report (`figures`: the ui's SVG figures), before
report.md is rendered, so that report.md never names a figure that is not there."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import InputError
from ..results import report as reportlib
from ..results import sweepreport
from ..results.experiments import env_code_notes
from ..sweepdir.files import SweepDir, write_text_atomic

if TYPE_CHECKING:
    from ..results.compare import Comparison, Matrix, Profiles, SequentialVerdict
    from ..results.physics_report import PhysicsReport
    from ..results.report import GroupRow
    from ..results.sections import Section
    from ..search.confirm import StudyConfirmation
    from ..search.ranking import TrialRow
    from ..spec.searchspace import SearchSpec


class Figures(Protocol):
    """The decision figures as drawn (ui/decision_figures.Decisions): the numbers and their Markdown."""

    @property
    def matrix(self) -> Matrix: ...

    @property
    def profiles(self) -> Profiles: ...

    @property
    def why_no_figures(self) -> str | None: ...

    @property
    def drawn(self) -> bool: ...

    @property
    def matrix_svg(self) -> str:
        """P(row > column) as an inline <svg> element for report.html; "" when not drawn."""

    @property
    def profile_svg(self) -> str:
        """The performance profiles as an inline <svg> element; "" when not drawn."""

    def seeds_sentence(self) -> str: ...

    def markdown(self, folder: SweepDir) -> str: ...


DrawFigures = Callable[[SweepDir, dict[str, list[float]], str, "dict[frozenset[str], SequentialVerdict] | None"],
                       Figures]


@dataclass(frozen=True)
class Report:
    read: sweepreport.SweepReport
    warnings: list[str]
    """The folder's warnings as `sweep status` says them, and the line on runs of earlier specs left out."""
    failed: list[tuple[str, str]]
    comparisons: list[Comparison] | None
    """With --compare: every pair, or the two named."""
    figures: Figures | None
    trials: tuple[list[TrialRow], SearchSpec] | None
    """A search's trials, ranked, and its search section; None for a grid."""
    pareto: Path | None
    """A multi-objective search's front, drawn to report_pareto.svg."""
    confirmed: list[StudyConfirmation] | None
    pbt: list[Section] = field(default_factory=list)
    """A PBT sweep's members, generations, copies, best schedule and replay spec; none for any other sweep."""
    segments: frozenset[str] = frozenset()
    """The runs that are PBT segments: a population's members, not groups of seeds."""
    physics: PhysicsReport | None = None
    """eval.physics: each group's seeds on the held-out draws, and which is more robust; None without."""

    @property
    def folder(self) -> SweepDir:
        return self.read.folder

    @property
    def groups(self) -> list[GroupRow]:
        """The groups of seeds, best first; a population's segments are none (its section shows them)."""
        if not self.segments:
            return self.read.groups
        kept = {row.group for row in self.read.rows if row.run_id not in self.segments}
        return [g for g in self.read.groups if g.group in kept]

    @property
    def no_groups(self) -> str | None:
        """What the report says in place of the groups' table where every run is a PBT segment."""
        if self.groups or not self.segments:
            return None
        return ("Every run is a segment of a population's member, not a seed of a group: the members, their "
                "generations and copies follow under population-based training.")

    def sections(self) -> list[Section]:
        """The sections of the sweep's kind, in the report's order: a search's trials (and warm against cold
        starts) and confirmations, adaptive seeds' rounds, a population's members."""
        out: list[Section] = []
        if self.trials is not None:
            from ..search.ranking import trials_sections

            out += trials_sections(*self.trials)
            if self.confirmed:
                from ..search.confirm import section as confirmed_section

                out.append(confirmed_section(self.confirmed, self.trials[1].metric))
        if self.read.rounds:
            from ..results.rounds_section import section as rounds_section

            out.append(rounds_section(self.read.rounds))
        if self.physics is not None:
            out.append(self.physics.section())
        return out + self.pbt

    @property
    def title(self) -> str:
        return f"sweep {self.folder.path.name}"

    def csv(self) -> str:
        return reportlib.to_csv(self.groups, self.physics.csv_columns() if self.physics is not None else None)

    def markdown(self) -> str:
        from ..results.sections import to_markdown as sections_markdown

        parts = [reportlib.to_markdown(self.groups, self.title, self.warnings, self.failed, self.no_groups)]
        if self.trials is not None:
            from ..search.ranking import to_markdown as trials_markdown

            parts.append(trials_markdown(*self.trials, self.pareto.name if self.pareto else None))
        if self.confirmed and self.trials is not None:
            from ..search.confirm import section as confirmed_section

            parts.append(sections_markdown([confirmed_section(self.confirmed, self.trials[1].metric)]))
        if self.comparisons:
            from ..results.compare import to_markdown as comparisons_markdown

            parts.append(comparisons_markdown(self.comparisons))
        if self.figures is not None:
            parts.append(self.figures.markdown(self.folder))
        if self.read.rounds:
            from ..results.rounds_section import section as rounds_section

            parts.append(sections_markdown([rounds_section(self.read.rounds)]))
        if self.physics is not None:
            parts.append(sections_markdown([self.physics.section()]))
        parts.append(sections_markdown(self.pbt))
        return "\n".join(part for part in parts if part)

    def json(self) -> str:
        problems = [p for r in self.read.rows for p in r.problems]
        figures = self.figures
        return reportlib.to_json(
            self.groups, self.warnings, problems,
            [c.to_json() for c in self.comparisons] if self.comparisons is not None else None,
            figures.matrix.to_json() if figures is not None else None,
            figures.profiles.to_json() if figures is not None else None,
            [r.to_file() for r in self.read.rounds] if self.read.rounds else None, self.failed, self._kind_json())

    def write_files(self) -> None:
        """report.csv and report.md in the sweep folder."""
        write_text_atomic(self.folder.report_csv, self.csv())
        write_text_atomic(self.folder.report_md, self.markdown())

    def _kind_json(self) -> dict[str, Any] | None:
        """A search's trials and confirmations, or a population's segments and best schedule; eval.physics's
        held-out evaluation beside either."""
        physics = {"held_out_physics": self.physics.to_json()} if self.physics is not None else {}
        kind = self._sweep_kind_json()
        return {**(kind or {}), **physics} or None

    def _sweep_kind_json(self) -> dict[str, Any] | None:
        if self.segments:
            from ..search.pbtreport import to_json as populations

            return {"populations": populations(self.folder)}
        if self.trials is None:
            return None
        from ..search.confirm import to_dicts as confirmed_dicts
        from ..search.ranking import to_dicts

        return {"trials": to_dicts(self.trials[0]),
                **({"confirmed": confirmed_dicts(self.confirmed)} if self.confirmed else {})}


def writable_sweep(folder: SweepDir, what: str) -> None:
    """InputError unless `folder` is a sweep folder a launcher made: a command that writes into it leaves any
    other folder as it found it."""
    if not folder.is_sweep():
        raise InputError(f"{folder.path}: not a sweep folder (no sweep.yaml, no index.jsonl, no run folder whose "
                         f"spec.json names it); {what} only into a sweep folder")


def build(folder: SweepDir, *, status_warnings: list[str], all_specs: bool = False, rank: str = "final",
          compare: bool = False, names: list[str] | None = None, figures: DrawFigures | None = None) -> Report:
    """The report of `folder`, read once. compare: every pair (or the two `names`) compared; figures: draws the
    decision figures (None: not drawn). InputError for a folder with no runs or one that is not a sweep's (it
    writes report.csv and report.md), a bad rank or names."""
    read = sweepreport.read(folder, all_specs, rank)
    writable_sweep(folder, "sweep report writes report.csv and report.md")
    if names and not compare:
        raise InputError(f"sweep report: {' '.join(names)}: group names go with --compare")
    from ..search import pbtreport

    segments = frozenset(pbtreport.segment_runs(folder))
    returns = {g: values for g, values in read.returns.items()  # a population's segments are no groups
               if not segments or any(r.group == g and r.run_id not in segments for r in read.rows)}
    if compare and not returns:
        raise InputError(f"sweep report --compare: {folder.path}: its runs are a population's segments, not groups "
                         "of seeds to compare; the report shows its members instead")
    comparisons = read.compare(names) if compare else None
    drawn = figures(folder, returns, f"sweep {folder.path.name}", read.sequential) if figures and returns else None
    from ..search import confirm, ranking

    trials = ranking.trials_of(folder)
    warnings = status_warnings + ([read.left_out] if read.left_out else []) + env_code_notes(read.rows)
    from ..results import physics_report

    physics = physics_report.read(folder, [r for r in read.rows if r.run_id not in segments],
                                  [g.group for g in read.groups])
    return Report(read, warnings, reportlib.failed_runs(read.rows),
                  comparisons, drawn, trials, _pareto_figure(folder, *trials) if trials is not None else None,
                  confirm.of_search(folder, trials), pbtreport.sections(folder), segments, physics)


def _pareto_figure(folder: SweepDir, rows: list[TrialRow], search: SearchSpec) -> Path | None:
    """A multi-objective search's Pareto front drawn to report_pareto.svg; None for one objective or before a
    trial is complete (a figure left from an earlier report, or an earlier version's report_pareto.png, goes)."""
    if not search.multi:
        return None
    from ..search.plots import plot_pareto

    folder.report_pareto_png.unlink(missing_ok=True)
    folder.report_pareto_svg.unlink(missing_ok=True)
    return folder.report_pareto_svg if plot_pareto(rows, search, folder.report_pareto_svg) else None
