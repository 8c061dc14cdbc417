"""A spec file read: YAML -> a validated, resolved SweepSpec, or one SpecError naming file, line and key.

Everything a user can get wrong in the file is caught here, once: the YAML itself, pydantic's checks of the
model (spec/sweepspec.py), then the checks across keys (spec/crosschecks.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    ValidationError,
)

from ..errors import SpecError, shown
from .crosschecks import check_semantics
from .errortext import explain
from .limits import (
    MAX_SPEC_BYTES,
    TooBig,
    check_expanded_size,
    unusable,
)
from .locator import SpecLocator
from .sweepspec import MENAGERIE_PREFIX, ZOO_KEY_OF, AlgoOwnKeys, SweepSpec
from .zoo import ZooProblem, zoo_sections


def load(path: str | Path, max_runs: int | None = None, *, text: str | None = None,
         base: Path | None = None) -> SweepSpec:
    """Read, validate and resolve a spec file. Raises SpecError with one line naming file, line, key.
    max_runs overrides the spec's own limit on the runs it plans. text: the spec's YAML given, not read from
    `path` (then only the name errors give), its relative paths against `base` (default: the file's folder)."""
    path = Path(path)
    if text is None:
        text = _read_spec(path)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        # Before anything is built from it: the node graph holds an alias once, the data would not.
        check_expanded_size(root)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{where}: YAML syntax error: {shown(problem, 200)}") from None
    except TooBig as exc:
        raise SpecLocator(path, root).error(exc.at, str(exc)) from None
    except RecursionError:
        raise SpecError(f"{path}: the spec nests mappings and lists too deep to read") from None
    locator = SpecLocator(path, root)
    if not isinstance(data, dict):
        raise locator.error((), "the spec must be a YAML mapping of keys to values")
    spec = parse(data, locator, max_runs)
    return _resolve_paths(spec, base or path.parent)


def _read_spec(path: Path) -> str:
    """The spec's text, read no further than MAX_SPEC_BYTES."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise SpecError(f"{path}: cannot read spec: {exc.strerror or exc}") from None
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(f"{path}: the spec is over {MAX_SPEC_BYTES:,} bytes: is it the right file?")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: the spec is not UTF-8 text (byte {exc.start})") from None


def parse(data: dict[str, Any], locator: SpecLocator, max_runs: int | None = None) -> SweepSpec:
    """Validate already-loaded data; paths are left as written. max_runs overrides the spec's own."""
    if (found := unusable(data)) is not None:
        raise locator.error(*found)
    written = data
    try:
        # RL Zoo's values where a section says zoo: true; n_envs, normalize and n_timesteps in a section
        # mean the spec's own keys, or in a sweep of several algorithms that algorithm's runs' own.
        data, zoo_entries, own_keys = zoo_sections(data)
    except ZooProblem as exc:
        raise locator.error(exc.at, str(exc)) from None
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        # A misspelt key also shows up as a missing one; the unknown key is the one to report.
        # A value that may be true/false or a mapping (normalize) fails both ways: the way that fits
        # the value written is the one to report, and its key path drops pydantic's union tags.
        err: dict[str, Any] = min((dict(e) for e in exc.errors()),
                                  key=lambda e: (_wrong_union_member(e, data), e["type"] != "extra_forbidden"))
        loc = _as_written(tuple(part for part in err["loc"] if part not in UNION_TAGS), data)
        raise locator.error(loc, explain({**err, "loc": loc})) from None
    spec._locator = locator
    spec._own_keys = {algo: _own_keys(algo, values, written, locator) for algo, values in own_keys.items()}
    if spec.total_timesteps is None and not own_keys:
        raise locator.error(("total_timesteps",), "required key is missing")
    if spec.search is not None and "seeds" in data:
        raise locator.error(("seeds",), "a search trains search.seeds_per_trial seeds per trial: drop 'seeds'")
    if spec.pbt is not None and ("seeds" in data or spec.search is not None):
        raise locator.error(("seeds" if "seeds" in data else "search",), "pbt trains pbt.population members "
                            "(seeds 0, 1, ...) and searches nothing else: drop it")
    if spec.pbt is not None and spec.warm_start is not None:
        raise locator.error(("warm_start",), "a pbt population starts its members cold: drop warm_start")
    spec._zoo_entries = zoo_entries
    spec._max_runs = max_runs
    spec.check_run_count()
    check_semantics(spec, locator)
    return spec


def _own_keys(algo: str, values: dict[str, Any], written: dict[str, Any], locator: SpecLocator) -> AlgoOwnKeys:
    """An algorithm's own n_envs, normalize and total_timesteps, checked; an error names the section's key that
    gave the value, or its `zoo`."""
    try:
        return AlgoOwnKeys.model_validate(values)
    except ValidationError as exc:
        err: dict[str, Any] = min((dict(e) for e in exc.errors()), key=lambda e: _wrong_union_member(e, values))
        key, *inner = (part for part in err["loc"] if part not in UNION_TAGS)
        at = (algo, ZOO_KEY_OF[str(key)], *inner) if ZOO_KEY_OF[str(key)] in written.get(algo, {}) else (algo, "zoo")
        raise locator.error(at, explain({**err, "loc": at})) from None


def _as_written(loc: tuple[str | int, ...], data: dict[str, Any]) -> tuple[str | int, ...]:
    """A single objective is checked as the one item of a list: its key path names the mapping written."""
    search = data.get("search")
    if loc[:3] == ("search", "objective", 0) and isinstance(search, dict) and isinstance(search.get("objective"), dict):
        return loc[:2] + loc[3:]
    return loc


SCALAR_TAGS = ("bool", "int", "list[int]")
MODEL_TAGS = ("NormalizeSpec", "AdaptiveSeeds")
UNION_TAGS = SCALAR_TAGS + MODEL_TAGS


def _wrong_union_member(err: dict[str, Any], data: dict[str, Any]) -> bool:
    """An error of the union member the value was not written as: a mapping checked as a bool or a count,
    a list checked as a count, a number checked as a mapping."""
    loc = list(err["loc"])
    tag = next((i for i, part in enumerate(loc) if part in UNION_TAGS), None)
    if tag is None:
        return False
    written: Any = data
    for part in loc[:tag]:
        written = written[part] if isinstance(written, dict | list) and _has(written, part) else None
    if loc[tag] in MODEL_TAGS:
        return not isinstance(written, dict)
    return isinstance(written, dict) or isinstance(written, list) != (loc[tag] == "list[int]")


def _has(container: dict | list, key: str | int) -> bool:
    return key in container if isinstance(container, dict) else isinstance(key, int) and key < len(container)


def _resolve_paths(spec: SweepSpec, base: Path) -> SweepSpec:
    def resolve(p: Path) -> Path:
        if str(p).startswith(MENAGERIE_PREFIX):
            return p  # a robot by name: variants.resolve() finds its file
        return (base / p.expanduser()).resolve() if not p.expanduser().is_absolute() else p.expanduser()

    variants = [v.model_copy(update={k: resolve(getattr(v, k)) for k in ("xml", "base") if getattr(v, k)})
                for v in spec.variants]
    glob = str(resolve(Path(spec.xml_glob))) if spec.xml_glob else None
    resolved = spec.model_copy(update={"variants": variants, "xml_glob": glob,
                                       "runs_dir": resolve(spec.runs_dir)})
    resolved._locator = spec._locator
    resolved._warnings = list(spec._warnings)
    resolved._zoo_entries = spec._zoo_entries
    resolved._own_keys = spec._own_keys
    resolved._max_runs = spec._max_runs
    return resolved
