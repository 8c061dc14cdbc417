"""A group is one experiment: runs whose spec differs in anything but the seed are never seeds of one group.

Running a spec folder again after changing the budget, an algorithm setting, a model's XML or an env kwarg
gives new run ids beside the old runs. The last `sweep run` records the experiment of every group it
planned (plan.json); a report shows those runs and counts the others apart, or, asked to, shows each earlier
experiment as a group of its own. A folder from before plan.json takes each group's newest runs (by their
spec.json) as its current experiment.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..naming import counted
from ..sweepdir.files import SweepDir, read_model, read_or_none
from ..sweepdir.models import PlanRecord, RunSpec, evaluated_as, evaluation_words
from .rows import ResultRow


@dataclass(frozen=True)
class Split:
    current: list[ResultRow]
    """The runs of the current plan (and rows whose spec could not be read: their problems are shown)."""
    earlier: list[ResultRow]
    """Runs of an earlier spec: another experiment of a planned group, or a group no longer planned."""
    changes: dict[str, str]
    """group -> what differs between its earlier runs and its current ones, in words."""
    evaluated_otherwise: list[ResultRow] = field(default_factory=list)
    """Runs of the current plan whose final evaluation had other settings than their group's spec now gives
    (episodes, deterministic): never pooled with it (`sweep run` evaluates them again)."""

    def note(self) -> str | None:
        """One line for the report's warnings; None when every run is of the current plan."""
        lines = []
        if self.earlier:
            said = "; ".join(f"{group}: {change}" for group, change in self.changes.items())
            lines.append(f"{counted(len(self.earlier), 'run')} of an earlier spec left out"
                         f"{f' ({said})' if said else ''}")
        if self.evaluated_otherwise:
            said = "; ".join(sorted({f"{row.group}: {_evaluation_of(row)}" for row in self.evaluated_otherwise}))
            lines.append(f"{counted(len(self.evaluated_otherwise), 'run')} evaluated otherwise than the spec now "
                         f"says left out ({said}; sweep run evaluates them again)")
        if not lines:
            return None
        return "; ".join(lines) + "; --all-specs shows them as groups of their own"


def env_code_notes(rows: list[ResultRow]) -> list[str]:
    """A line for the report's warnings per group whose runs trained with different code of their custom env: a
    'package.module:Class' env is named, not hashed, in run ids, so its source file's hash (result.json) tells."""
    versions: dict[str, dict[str, list[str]]] = {}
    for row in rows:
        if row.result is not None and row.result.env_source_sha256 is not None:
            versions.setdefault(row.group, {}).setdefault(row.result.env_source_sha256, []).append(row.run_id)
    notes = []
    for group, runs in versions.items():
        if len(runs) > 1:
            env = next(r.spec.env for r in rows if r.group == group and r.spec is not None)
            said = "; ".join(", ".join(ids) for ids in runs.values())
            notes.append(f"{group}: its runs trained with {len(runs)} versions of {env}'s source file ({said}); "
                         "the report pools them as seeds of one experiment")
    return notes


def read_plan(folder: SweepDir) -> PlanRecord | None:
    """The last plan (plan.json); None for a search, a folder from before it, or a corrupt one."""
    return read_or_none(lambda: read_model(folder.plan_json, PlanRecord))


def current_experiments(folder: SweepDir, rows: list[ResultRow], record: PlanRecord | None) -> dict[str, str]:
    """group -> the experiment of the current plan: plan.json's (`record`), else each group's newest run's."""
    if record is not None:
        return record.experiments
    return {group: spec.experiment for group, spec in newest_specs(folder, rows).items()}


def newest_specs(folder: SweepDir, rows: list[ResultRow]) -> dict[str, RunSpec]:
    """group -> the spec.json its runs wrote last: what the group's latest `sweep run` planned."""
    newest: dict[str, tuple[int, RunSpec]] = {}
    for row in rows:
        if row.spec is None:
            continue
        try:
            written = folder.run(row.run_id).spec_json.stat().st_mtime_ns
        except OSError:
            continue
        if row.spec.group not in newest or written > newest[row.spec.group][0]:
            newest[row.spec.group] = (written, row.spec)
    return {group: spec for group, (_, spec) in newest.items()}


def split(folder: SweepDir, rows: list[ResultRow]) -> Split:
    record = read_plan(folder)
    experiments = current_experiments(folder, rows, record)
    # The plan's run ids too: they are content-addressed, so they match however a group's label was written
    # (plan.json files written before labels sorted the grid's keys have them in the spec's order).
    planned = set(record.runs) if record is not None else set()
    current: list[ResultRow] = []
    earlier: list[ResultRow] = []
    for row in rows:
        is_current = (row.spec is None or experiments.get(row.spec.group) == row.spec.experiment
                      or row.run_id in planned)
        (current if is_current else earlier).append(row)
    reference = {r.spec.group: r.spec for r in current if r.spec is not None}
    changes: dict[str, str] = {}
    for row in earlier:
        assert row.spec is not None
        group = row.spec.group
        if group not in changes:
            now = reference.get(group)
            changes[group] = differences(row.spec, now) if now is not None else "not in the current plan"
    current, otherwise = _evaluated_apart(folder, current)
    return Split(current, earlier, changes, otherwise)


def _evaluated_apart(folder: SweepDir, rows: list[ResultRow]) -> tuple[list[ResultRow], list[ResultRow]]:
    """The rows evaluated as their group's newest spec.json says, and those whose final evaluation had other
    settings: runs evaluated differently never pool."""
    newest = newest_specs(folder, rows)
    kept: list[ResultRow] = []
    apart_rows: list[ResultRow] = []
    for row in rows:
        reference = newest.get(row.spec.group) if row.spec is not None else None
        differs = (reference is not None and row.result is not None and row.result.complete
                   and not evaluated_as(reference, row.result))
        (apart_rows if differs else kept).append(row)
    return kept, apart_rows


def _evaluation_of(row: ResultRow) -> str:
    """How a run's final evaluation was made, in words: 'evaluated with 2 episodes, deterministic'."""
    assert row.result is not None
    return f"evaluated with {evaluation_words(row.result.eval_episodes, row.result.eval_deterministic)}"


def apart(split_rows: Split) -> list[ResultRow]:
    """Every run, each earlier experiment a group of its own: "<group> [earlier spec <experiment>]", and each
    other evaluation of the current one too: "<group> [evaluated with 2 episodes, deterministic]"."""
    labelled = [replace(row, label=f"{row.spec.group} [earlier spec {row.spec.experiment}]")
                for row in split_rows.earlier if row.spec is not None]
    labelled += [replace(row, label=f"{row.spec.group} [{_evaluation_of(row)}]")
                 for row in split_rows.evaluated_otherwise if row.spec is not None]
    return split_rows.current + labelled


def plan_rows(folder: SweepDir, rows: list[ResultRow], all_specs: bool = False) -> tuple[list[ResultRow], str | None]:
    """The last plan's runs and the line that says what was left out (None when nothing was), or with
    `all_specs` every run, each earlier experiment a group of its own."""
    split_rows = split(folder, rows)
    return (apart(split_rows), None) if all_specs else (split_rows.current, split_rows.note())


FIELDS = {"total_timesteps": "total_timesteps", "hyperparams": "algorithm settings", "xml_sha256": "XML content",
          "env_kwargs": "env_kwargs", "n_envs": "n_envs", "normalize": "normalize", "env": "env", "algo": "algo",
          "max_episode_steps": "max_episode_steps", "policy": "policy", "vec_env": "vec_env", "device": "device"}


def differences(old: RunSpec, new: RunSpec) -> str:
    """What an earlier run's spec has that the current one does not, in words: 'total_timesteps 256, now 384'."""
    a, b = old.experiment_content(), new.experiment_content()
    said = []
    for key, name in FIELDS.items():
        if a[key] == b[key]:
            continue
        if isinstance(a[key], dict | list) or key == "xml_sha256":
            said.append(f"{name} differ")
        else:
            said.append(f"{name} {a[key]}, now {b[key]}")
    if a.get("randomize") != b.get("randomize"):  # a key of randomized runs only
        said.append("randomized edits differ")
    return ", ".join(said) or "another experiment"
