"""The spec's checks across keys, run once the model has validated each key on its own: variant names,
algorithms and their sections, grid keys, budgets, rollouts, a search's space and objectives."""

from __future__ import annotations

from typing import Any

from pydantic import (
    ValidationError,
)

from ..errors import shown
from .activations import ACTIVATIONS, activation_name
from .algos import (
    ALGO_NAMES,
    ALGOS,
    INTEGER_KWARGS,
    Algo,
    key_problem,
    missing_package,
    section_problem,
    value_problem,
)
from .editspec import PLACEHOLDER
from .errortext import explain
from .limits import (
    MAX_TIMESTEPS,
)
from .locator import SpecLocator, format_key
from .pbtspec import check as check_pbt
from .physicsspec import check_physics
from .randomspec import check_randomize
from .searchspace import EVAL_METRICS, MULTI_OBJECTIVE_METHODS, Dimension, SearchSpec
from .sweepspec import (
    GRID_PREFIXES,
    OTHER_PREFIXES,
    SEARCH_TOP_KEYS,
    NormalizeSpec,
    SweepSpec,
    VariantSpec,
    whole_number,
)


def check_semantics(spec: SweepSpec, loc: SpecLocator) -> None:
    if not spec.variants and not spec.xml_glob:
        raise loc.error(("variants",), "no variants: list some under 'variants' or set 'xml_glob'")
    seen: dict[str, int] = {}
    for i, variant in enumerate(spec.variants):
        if variant.name in seen:
            raise loc.error(("variants", i, "name"),
                            f"duplicate variant name {variant.name!r} (also variants[{seen[variant.name]}])")
        seen[variant.name] = i
        _check_edit_grid(variant, ("variants", i), loc)
        check_randomize(variant.randomize, ("variants", i), loc)
    if spec.eval.physics is not None:
        # a globbed file is nominal only
        glob: list[tuple[str, list[Any]]] = [("xml_glob's files", [])] if spec.xml_glob else []
        check_physics(spec.eval.physics, [(f"variant {v.name!r}", list(v.randomize)) for v in spec.variants] + glob,
                      loc)
    _check_algos(spec, loc)
    _check_own_timesteps(spec, loc)
    for key, values in spec.grid.items():
        if key != "algo":  # _check_algos checked it, before anything reads spec.algos
            _check_grid_key(key, values, spec.algos, loc)
    for name in spec.algos:
        _check_budget(spec, ALGOS[name], loc)
        if ALGOS[name].has_rollout:
            _check_rollout(spec, ALGOS[name], loc)
    if spec.search is not None:
        _check_search(spec, spec.search, loc)
    if spec.pbt is not None:
        check_pbt(spec.pbt, spec.algos, spec.hyperparameters(spec.algos[0]), spec.total_timesteps_of(spec.algos[0]),
                  spec.n_envs_of(spec.algos[0]), spec.grid, loc.error)
    if spec.warm_start is not None and spec.warm_start.nearest and \
            (spec.search is None or not any(key.startswith("edits.") for key in spec.search.space)):
        raise loc.error(("warm_start",), "nearest starts each design of a search from the nearest finished one: "
                                         "it needs a search: whose space has edits.<label> keys")


def _check_search(spec: SweepSpec, search: SearchSpec, loc: SpecLocator) -> None:
    """Every searched key is one a run can take, with values it accepts; pruning and the evaluation-based
    objectives need periodic evaluations."""
    labels = {label for v in spec.variants for label in v.edit_grid}
    for key, dim in search.space.items():
        at = ("search", "space", key)
        if key in spec.grid:
            raise loc.error(at, "this key is in the grid too: search it or grid it, not both")
        prefix = key.split(".")[0]
        if key.startswith("edits."):
            label = key[len("edits."):]
            if label not in labels:
                raise loc.error(at, f"no variant has the edit_grid label {label!r} "
                                    f"(labels: {', '.join(sorted(labels)) or 'none'})")
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in dim.numbers()):
                raise loc.error(at, "an edit value is a number")
        elif key in SEARCH_TOP_KEYS:
            if key == "normalize" and dim.choice is None:
                raise loc.error(at, "normalize is searched as a choice of true, false or VecNormalize mappings")
            if key == "total_timesteps" and not (dim.kind in ("int", "choice")
                                                 and all(0 < whole_number(v) <= MAX_TIMESTEPS for v in dim.numbers())):
                raise loc.error(at, "total_timesteps is searched as int or choice of positive integers up to "
                                    f"{MAX_TIMESTEPS:.0e}")
        elif prefix in ALGOS and len(key) > len(prefix) + 1:
            _check_searched_hyperparameter(ALGOS[prefix], key[len(prefix) + 1:], dim, spec.algos, at, loc)
        elif not (key.startswith("env_kwargs.") and len(key) > len("env_kwargs.")):
            raise loc.error(at, f"unknown search key: use ppo.<kwarg> (or {OTHER_PREFIXES}), env_kwargs.<kwarg>, "
                                "edits.<label>, normalize or total_timesteps")
        if search.method == "cmaes" and dim.choice is not None:
            raise loc.error(at, "cmaes samples numbers only: search this key with uniform, log_uniform or int, "
                                "or use method tpe")
    _check_objectives(spec, search, loc)


def _check_objectives(spec: SweepSpec, search: SearchSpec, loc: SpecLocator) -> None:
    """Each metric once; several objectives with a method that takes them and no pruning; the metrics of
    periodic evaluations and pruning with eval.every."""
    metrics = [o.metric for o in search.objective]
    for i, metric in enumerate(metrics):
        if metric in metrics[:i]:
            raise loc.error(_objective_at(search, i), f"{metric} is an objective twice")
    if search.multi and search.method not in MULTI_OBJECTIVE_METHODS:
        raise loc.error(("search", "method"), f"{search.method} optimizes one objective: use "
                                              f"{', '.join(MULTI_OBJECTIVE_METHODS)} for several")
    if search.multi and search.prune:
        raise loc.error(("search", "prune"), "pruning needs a single objective (Optuna prunes no "
                                             "multi-objective study): drop prune or keep one objective")
    needs_evals: list[tuple[str | int, ...]] = [("search", "prune")] if search.prune else []
    needs_evals += [_objective_at(search, i) for i, m in enumerate(metrics) if m in EVAL_METRICS]
    if needs_evals and spec.eval.every is None:
        raise loc.error(needs_evals[0], "needs periodic evaluations: set eval.every")


def _objective_at(search: SearchSpec, i: int) -> tuple[str | int, ...]:
    """Where objective i's metric is written: objective.metric for one mapping, objective[i].metric for a list."""
    return ("search", "objective", *((i,) if search.multi else ()), "metric")


def _check_searched_hyperparameter(algo: Algo, name: str, dim: Dimension, algos: list[str], at: tuple[str, ...],
                                   loc: SpecLocator) -> None:
    _check_trained(algo, algos, f"searches a {algo.label} hyperparameter", at, loc)
    if problem := key_problem(algo, name):
        raise loc.error(at, problem)
    if name in INTEGER_KWARGS and dim.kind not in ("int", "choice"):
        raise loc.error(at, f"{name} is an integer: search it with int or choice")
    for value in dim.numbers():
        if problem := value_problem(algo, name, value):
            raise loc.error(at, problem)


def _check_edit_grid(variant: VariantSpec, at: tuple[str | int, ...], loc: SpecLocator) -> None:
    """Every placeholder names an edit_grid label, every label is used, every axis has values."""
    used: set[str] = set()
    for j, edit in enumerate(variant.edits):
        for value in _leaves([getattr(edit.args, key, None) for key in ("value", "factor")]):
            if isinstance(value, str) and "${" in value:
                match = PLACEHOLDER.match(value)
                if not match or match.group(1) not in variant.edit_grid:
                    labels = ", ".join(variant.edit_grid) or "none"
                    raise loc.error((*at, "edits", j, edit.op), f"{shown(value)} is not a placeholder of this "
                                                                  f"variant's edit_grid (labels: {labels})")
                used.add(match.group(1))
    for label, values in variant.edit_grid.items():
        if not PLACEHOLDER.match("${" + label + "}"):
            raise loc.error((*at, "edit_grid", label), "a label is a letter or _ followed by letters, digits, _")
        if not values:
            raise loc.error((*at, "edit_grid", label), "an edit_grid axis needs at least one value")
        if label not in used:
            raise loc.error((*at, "edit_grid", label), f"no edit uses '${{{label}}}'")


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _check_section(algo: Algo, section: dict[str, Any], where: tuple[str, ...], loc: SpecLocator) -> None:
    for key, value in section.items():
        if problem := key_problem(algo, key):
            raise loc.error((*where, key), problem)
        if problem := value_problem(algo, key, value):
            raise loc.error((*where, key), problem)
        if key == "policy_kwargs" and isinstance(value, dict):
            act = value.get("activation_fn")
            if act is not None and (not isinstance(act, str) or activation_name(act) is None):
                raise loc.error((*where, key, "activation_fn"),
                                f"unknown activation {shown(act)} (known: {', '.join(ACTIVATIONS)})")


def _check_algos(spec: SweepSpec, loc: SpecLocator) -> None:
    """Each algorithm's section is checked against its own arguments; a section or grid key of an
    algorithm no run trains is a mistake, not something to ignore."""
    if "algo" in spec.grid:
        _check_grid_key("algo", spec.grid["algo"], [], loc)
        if "algo" in spec.model_fields_set:
            raise loc.error(("algo",), "algo and grid.algo both given: keep one")
    runs = spec.algos
    for name in runs:
        if problem := missing_package(name):
            raise loc.error(("grid", "algo") if "algo" in spec.grid else ("algo",), problem)
    for name in ALGO_NAMES:
        section = spec.hyperparameters(name)
        if section:
            _check_trained(ALGOS[name], runs, f"{ALGOS[name].label} hyperparameters", (name,), loc)
        _check_section(ALGOS[name], section, (name,), loc)
        gridded = {key[len(name) + 1:]: values for key, values in spec.grid.items() if key.startswith(f"{name}.")}
        if together := section_problem({**section, **gridded}):
            key = together[0]
            raise loc.error((name, key) if key in section else ("grid", f"{name}.{key}"), together[1])


def _check_own_timesteps(spec: SweepSpec, loc: SpecLocator) -> None:
    """Without the spec's total_timesteps, each algorithm of the sweep gives its own."""
    if spec.total_timesteps is not None:
        return
    lacking = [ALGOS[algo].label for algo in spec.algos if spec.own_keys(algo).total_timesteps is None]
    if lacking:
        raise loc.error(("total_timesteps",), f"required key is missing: the {', '.join(lacking)} runs have no "
                                              "n_timesteps of their own in their section")


def _check_trained(algo: Algo, algos: list[str], what: str, at: tuple[str, ...], loc: SpecLocator) -> None:
    """Hyperparameters of an algorithm no run trains are a mistake, not something to ignore."""
    if algo.name not in algos:
        raise loc.error(at, f"{what}, but no run trains {algo.label} (algo: {', '.join(algos)})")


def _check_grid_key(key: str, values: list[Any], algos: list[str], loc: SpecLocator) -> None:
    at = ("grid", key)
    if not values:
        raise loc.error(at, "a grid axis needs at least one value")
    if key == "algo":
        _check_grid_algos(values, at, loc)
    elif key == "total_timesteps":
        if not all(isinstance(whole_number(v), int) and not isinstance(v, bool) and 0 < whole_number(v) <= MAX_TIMESTEPS
                   for v in values):
            raise loc.error(at, f"total_timesteps values must be positive integers up to {MAX_TIMESTEPS:.0e}")
    elif key == "normalize":
        _check_grid_normalize(values, at, loc)
    else:
        _check_grid_kwargs(key, values, algos, at, loc)


def _check_grid_algos(values: list[Any], at: tuple[str, ...], loc: SpecLocator) -> None:
    for value in values:
        if value not in ALGO_NAMES:
            raise loc.error(at, f"unknown algorithm {shown(value)} (known: {', '.join(ALGO_NAMES)})")
    if len(set(values)) != len(values):
        raise loc.error(at, "an algorithm repeats")


def _check_grid_normalize(values: list[Any], at: tuple[str, ...], loc: SpecLocator) -> None:
    for value in values:
        try:
            NormalizeSpec.model_validate(value) if isinstance(value, dict) else _check_bool(value)
        except (ValidationError, ValueError) as exc:
            problem = _first_error(exc)
            raise loc.error(at, f"each value is true, false or a mapping of VecNormalize arguments: {problem}") \
                from None


def _check_grid_kwargs(key: str, values: list[Any], algos: list[str], at: tuple[str, ...], loc: SpecLocator) -> None:
    """A grid of an algorithm's keyword arguments (<algo>.<kwarg>) or of the env's (env_kwargs.<kwarg>)."""
    prefix = next((p for p in GRID_PREFIXES if key.startswith(p) and len(key) > len(p)), None)
    if prefix is None:
        raise loc.error(at, f"unknown grid key: use ppo.<kwarg> (or {OTHER_PREFIXES}), env_kwargs.<kwarg>, "
                            "algo, normalize or total_timesteps")
    if prefix == "env_kwargs.":
        return
    algo = ALGOS[prefix[:-1]]
    _check_trained(algo, algos, f"a grid of {algo.label} hyperparameters", at, loc)
    name = key[len(prefix):].split(".")[0]
    if wrong := key_problem(algo, name):
        raise loc.error(at, wrong)
    if name == key[len(prefix):]:
        for value in values:
            if wrong := value_problem(algo, name, value):
                raise loc.error(at, wrong)


def _check_bool(value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"got {shown(value)}")


def _first_error(exc: ValidationError | ValueError) -> str:
    if isinstance(exc, ValidationError):
        err: dict[str, Any] = dict(exc.errors()[0])
        return f"{format_key(tuple(err['loc']))}: {explain(err)}" if err["loc"] else explain(err)
    return str(exc)


def _values_of(spec: SweepSpec, algo: Algo, key: str) -> list[tuple[Any, tuple[str, ...]]]:
    """Every value one of the algorithm's keys takes in the sweep, with where it is written (the section
    itself where the class's default applies)."""
    grid_key = f"{algo.name}.{key}"
    if grid_key in spec.grid:
        return [(whole_number(v), ("grid", grid_key)) for v in spec.grid[grid_key]]
    section = spec.hyperparameters(algo.name)
    if key in section:
        return [(whole_number(section[key]), (algo.name, key))]
    return [(algo.defaults[key], (algo.name,))]


def _check_budget(spec: SweepSpec, algo: Algo, loc: SpecLocator) -> None:
    """Each env of a run takes at least one step, and a rollout the spec sets is within the run's timesteps:
    a larger one trains past the budget, and its buffer is allocated whole at the start (a default n_steps is
    the class's own choice, and stays allowed)."""
    if "total_timesteps" in spec.grid:
        least = min(whole_number(v) for v in spec.grid["total_timesteps"])
    else:
        least = spec.total_timesteps_of(algo.name)
    n_envs = spec.n_envs_of(algo.name)
    if n_envs > least:
        raise loc.error(("n_envs",), f"{n_envs:,} envs for {least:,} timesteps of {algo.label}: each env takes at "
                                     "least one step")
    if not algo.has_rollout:
        return
    for n_steps, at in _values_of(spec, algo, "n_steps"):
        if at != (algo.name,) and isinstance(n_steps, int) and n_steps * n_envs > least:
            raise loc.error(at, f"one rollout of n_steps {n_steps:,} * n_envs {n_envs:,} = {n_steps * n_envs:,} steps "
                                f"is more than the run's total_timesteps {least:,}")


def _check_rollout(spec: SweepSpec, algo: Algo, loc: SpecLocator) -> None:
    """What an on-policy algorithm's constructor or first update refuses, before launch. Normalized
    advantages need n_steps * n_envs > 1: PPO and TRPO assert it, A2C and RecurrentPPO train on NaN.
    A batch_size that leaves a part batch is a warning, as SB3 gives it; a part batch of one sample is
    an error where the algorithm's advantages come out NaN from it."""
    normalized = any(value for value, _ in _values_of(spec, algo, "normalize_advantage"))
    batch_sizes = _values_of(spec, algo, "batch_size") if "batch_size" in algo.kwargs else []
    n_envs = spec.n_envs_of(algo.name)
    for n_steps, at in _values_of(spec, algo, "n_steps"):
        rollout = n_steps * n_envs
        if normalized and rollout <= 1:
            raise loc.error(at, f"n_steps * n_envs must be > 1 to normalize advantages (got {n_steps} * "
                                f"{n_envs})")
        for batch_size, at_batch in batch_sizes:
            left = rollout % batch_size if batch_size is not None else 0  # None: the whole rollout
            sizes = f"(n_steps {n_steps} * n_envs {n_envs} = {rollout})"
            if left == 1 and normalized and algo.fails_on_batch_of_one:
                raise loc.error(at_batch, f"batch_size {batch_size} leaves a last batch of one sample {sizes}, "
                                          f"whose normalized advantages {algo.label} makes NaN: use a batch_size "
                                          "that divides the rollout, or normalize_advantage: false")
            if left:
                spec._warnings.append(
                    f"{loc.path}:{loc.line_of(at_batch)}: {format_key(at_batch)}: batch_size {batch_size} does not "
                    f"divide the rollout {sizes}: each epoch ends with a batch of {left}")
