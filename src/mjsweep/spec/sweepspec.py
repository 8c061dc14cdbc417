"""The sweep spec: YAML -> a validated, frozen SweepSpec.

Everything a user can get wrong in the file is caught here, once, with an error that names the file,
the line and the key. Later stages (variants, envs) report their own errors through the same
`SpecLocator`, so a missing XML or an env that rejects a keyword also points at its line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..errors import SpecError, shown
from ..sweepdir.models import WandbSpec
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
from .editspec import PLACEHOLDER, EditSpec
from .limits import (
    DEFAULT_MAX_RUNS,
    MAX_CHECKPOINTS,
    MAX_COUNT,
    MAX_N_ENVS,
    MAX_SEED,
    MAX_SPEC_BYTES,
    MAX_TIMESTEPS,
    TooBig,
    check_expanded_size,
    unusable,
)
from .literals import zoo_expression, zoo_text
from .pbtspec import PbtSpec
from .pbtspec import check as check_pbt
from .searchspace import EVAL_METRICS, MULTI_OBJECTIVE_METHODS, Dimension, SearchSpec
from .warmstart import WarmStartSpec
from .zoo import ZOO_TOP_KEYS, ZooProblem, zoo_sections

MENAGERIE_PREFIX = "menagerie:"
GRID_PREFIXES = (*(f"{name}." for name in ALGO_NAMES), "env_kwargs.")
_OTHER_PREFIXES = ", ".join(f"{name}." for name in ALGO_NAMES[1:])
SEARCH_TOP_KEYS = ("total_timesteps", "normalize")

# A section's key for each of the spec's keys it may set (RL Zoo's spelling).
ZOO_KEY_OF = {key: zoo_key for zoo_key, key in ZOO_TOP_KEYS.items()}

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=+-]*$")


MAX_NAME = 200
"""A sweep's name is a folder's, a variant's a picture's and a video's file name: one holds 255 bytes."""


def check_safe_name(name: str) -> str:
    if not _SAFE_NAME.match(name) or ".." in name:
        raise ValueError(
            f"unsafe name {shown(name)}: use letters, digits and . _ = + - (no path separators, no '..')"
        )
    if len(name) > MAX_NAME:
        raise ValueError(f"a name is at most {MAX_NAME} characters (got {len(name)}: {shown(name, 40)})")
    return name


SafeName = Annotated[str, AfterValidator(check_safe_name)]


def whole_number(value: Any) -> Any:
    """1e6, 1.0e6 and "1e6" (YAML 1.1 reads an exponent without a dot as a string) -> 1000000 when
    whole; anything else is left for the type check to refuse."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            value = float(value.replace("_", ""))
        except ValueError:
            return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


WholeInt = Annotated[int, BeforeValidator(whole_number)]


def whole_hyperparameter(key: str, value: Any) -> Any:
    """A hyperparameter as the checks and SB3 take it: counts whole (1e6 -> 1000000), train_freq's too."""
    if key in INTEGER_KWARGS or key == "total_timesteps":
        return whole_number(value)
    if key == "train_freq":
        return [whole_number(value[0]), *value[1:]] if isinstance(value, list) and value else whole_number(value)
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NormalizeSpec(_Strict):
    """stable-baselines3 VecNormalize arguments (RL Zoo's `normalize`)."""

    norm_obs: bool = True
    norm_reward: bool = True
    clip_obs: float = Field(10.0, gt=0)
    clip_reward: float = Field(10.0, gt=0)
    gamma: float | None = Field(None, gt=0, le=1)
    """Discount of the reward normalization's return estimate; default: the run's PPO gamma."""
    epsilon: float = Field(1e-8, gt=0)


NormalizeValue = Annotated[bool | NormalizeSpec, BeforeValidator(zoo_text)]
"""`normalize: true` (VecNormalize's defaults), `false`, or a mapping of VecNormalize arguments."""


def normalize_kwargs(value: NormalizeValue | dict[str, Any] | None, ppo_gamma: float) -> dict[str, Any] | None:
    """VecNormalize's keyword arguments for a `normalize` value, or None when it is off. Every argument is
    written out (gamma defaults to the run's PPO gamma), so spec.json and the content hash hold them all."""
    if value is None or value is False:
        return None
    resolved = NormalizeSpec() if value is True else NormalizeSpec.model_validate(value)
    kwargs = resolved.model_dump()
    if kwargs["gamma"] is None:
        kwargs["gamma"] = ppo_gamma
    return kwargs


class VariantSpec(_Strict):
    name: SafeName
    """Unique name; the run family's folder names start with it."""
    xml: Path | None = None
    """The MuJoCo XML; relative to the spec file's folder; or 'menagerie:NAME[/ENTRY]'."""
    base: Path | None = None
    """Instead of xml: the XML that 'edits' change; relative to the spec file's folder, or a Menagerie name."""
    edits: list[EditSpec] = []
    """Applied in order to 'base' with MuJoCo's MjSpec."""
    edit_grid: dict[str, list[Any]] = {}
    """label -> values; one variant per combination, named '<name>_<label>=<value>...'."""
    env_kwargs: dict[str, Any] = {}
    """Merged over the sweep's env_kwargs for this variant only."""
    normalize: NormalizeValue | None = None
    """This variant's normalization; default: the sweep's `normalize`."""

    @model_validator(mode="after")
    def _source(self) -> VariantSpec:
        if (self.xml is None) == (self.base is None):
            raise ValueError("give exactly one of 'xml' (a file as is) and 'base' (a file plus 'edits')")
        if self.xml is not None and (self.edits or self.edit_grid):
            raise ValueError("'edits' and 'edit_grid' apply to 'base', not 'xml'")
        return self


class EvalSpec(_Strict):
    every: WholeInt | None = Field(None, gt=0)
    """Also evaluate each time training passes a multiple of this many timesteps: a row of
    evaluations.csv each, and best_model.zip kept for the best. Default: only the final evaluation."""
    episodes: WholeInt = Field(10, ge=1, le=MAX_COUNT)
    """Episodes of each evaluation (the final one: eval_mean_return / eval_std_return in result.json)."""
    deterministic: bool = True
    """Evaluate the policy's mean action rather than sampling."""


class SlurmSpec(_Strict):
    """Per-run resources for `--backend slurm` (each run is one task of the sweep's job array)."""

    partition: str | None = None
    time: str | None = None
    """Time limit per run, in sbatch's format: "90", "2:00:00", "1-12:00:00"."""
    mem: str | None = None
    """Memory per run, e.g. "4G"."""
    cpus_per_task: int | None = Field(None, ge=1)
    """Default: the run's CPU slots (cpus_per_run)."""
    gres: str | None = None
    """Generic resources, e.g. "gpu:1" for device: cuda."""
    extra: list[str] = []
    """More sbatch options, one per item, e.g. "--account=rl" or "--qos=low"."""

    @field_validator("extra")
    @classmethod
    def _options(cls, extra: list[str]) -> list[str]:
        for line in extra:
            if not line.startswith("--") or "\n" in line:
                raise ValueError(f"{shown(line)}: each item is one sbatch option such as '--account=rl'")
        return extra


class TrackingSpec(_Strict):
    wandb: WandbSpec | None = None


class AdaptiveSeeds(_Strict):
    """`seeds: {min: 3, max: 10, until: separated}`: every group (variant x grid point) trains `min` seeds,
    then one more seed a round goes to the groups not yet separated from the best one by a group-sequential
    test that holds the family-wise error over every look and pair (docs/statistics.md)."""

    min: int = Field(ge=2)
    """Seeds every group trains first: a comparison needs at least 2 on each side."""
    max: int
    """Seeds a group trains at most."""
    until: Literal["separated"] = "separated"
    """When to stop adding: once the best group is separated from every other."""
    confidence: float = Field(0.95, gt=0.5, lt=1)
    """1 - the chance, over every look and every pair, of separating any two groups that do not differ."""
    equal_within: float | None = Field(None, gt=0, allow_inf_nan=False)
    """A margin of final return: a group whose shift against the best is shown to lie within it gets no more
    seeds ("equal")."""

    @field_validator("max")
    @classmethod
    def _max_at_least_min(cls, value: int, info: ValidationInfo) -> int:
        if "min" in info.data and value < info.data["min"]:
            raise ValueError(f"max ({value}) is below min ({info.data['min']})")
        return value


class AlgoOwnKeys(_Strict):
    """What an algorithm's section sets of the spec's n_envs, normalize and total_timesteps (RL Zoo's with
    zoo: true, or written there) in a sweep of several algorithms: that algorithm's runs take them."""

    n_envs: WholeInt | None = Field(None, ge=1, le=MAX_N_ENVS)
    normalize: NormalizeValue | None = None
    total_timesteps: WholeInt | None = Field(None, gt=0, le=MAX_TIMESTEPS)


class SweepSpec(_Strict):
    name: SafeName
    """Sweep name; runs go to <runs_dir>/<name>/."""
    env: str = Field(min_length=1)
    """A Gymnasium id whose constructor takes xml_file, or 'package.module:Class'."""
    env_kwargs: dict[str, Any] = {}
    """Passed to every variant's env."""
    max_episode_steps: int | None = Field(None, ge=1, le=MAX_COUNT)
    """Time limit per episode; default: the Gymnasium registration's."""
    variants: list[VariantSpec] = []
    """Explicit XML variants."""
    xml_glob: str | None = None
    """One more variant per matching file, named by the file's stem."""
    seeds: int | list[int] | AdaptiveSeeds = Field(1)
    """A count n (seeds 0..n-1), an explicit list, or adaptive seeds (0..max-1, as many as the answer needs)."""
    total_timesteps: WholeInt | None = Field(None, gt=0, le=MAX_TIMESTEPS)
    """Environment steps per run (1e6 is read as 1000000). Required, unless each algorithm of a sweep of several
    gives its own in its section (RL Zoo's n_timesteps)."""
    algo: Literal["ppo", "sac", "td3", "a2c", "tqc", "crossq", "trpo", "recurrent_ppo"] = "ppo"
    """The algorithm every run trains (a grid key too: `grid: {algo: [ppo, sac]}`); tqc, crossq, trpo and
    recurrent_ppo need sb3-contrib (the `contrib` extra)."""
    ppo: dict[str, Any] = {}
    """Fixed stable-baselines3 PPO keyword arguments; 'policy' defaults to MlpPolicy."""
    sac: dict[str, Any] = {}
    """SAC's keyword arguments, for the runs that train SAC (RL Zoo's noise_type / noise_std too)."""
    td3: dict[str, Any] = {}
    """TD3's keyword arguments, for the runs that train TD3 (RL Zoo's noise_type / noise_std too)."""
    a2c: dict[str, Any] = {}
    """A2C's keyword arguments, for the runs that train A2C."""
    tqc: dict[str, Any] = {}
    """sb3-contrib TQC's keyword arguments, for the runs that train TQC (noise_type / noise_std too)."""
    crossq: dict[str, Any] = {}
    """sb3-contrib CrossQ's keyword arguments, for the runs that train CrossQ (noise_type / noise_std too)."""
    trpo: dict[str, Any] = {}
    """sb3-contrib TRPO's keyword arguments, for the runs that train TRPO."""
    recurrent_ppo: dict[str, Any] = {}
    """sb3-contrib RecurrentPPO's keyword arguments; 'policy' defaults to MlpLstmPolicy."""
    grid: dict[str, list[Any]] = {}
    """Cartesian product over dotted keys: <algo>.<kwarg> (ppo.gamma, sac.tau), env_kwargs.<kwarg>,
    total_timesteps, normalize, algo."""
    n_envs: WholeInt = Field(1, ge=1, le=MAX_N_ENVS)
    """Environments per run; in a sweep of several algorithms, an algorithm's section may give its runs' own."""
    normalize: NormalizeValue = False
    """Observation and reward normalization (VecNormalize): true, or a mapping of its arguments; in a sweep of
    several algorithms, an algorithm's section may give its runs' own."""
    vec_env: Literal["dummy", "subproc"] = "dummy"
    """dummy: the n_envs environments step in turn in the run's one process; subproc: one process
    each (SubprocVecEnv, in the run's process group), and the run takes n_envs CPU slots."""
    cpus_per_run: int | None = Field(None, ge=1, le=MAX_N_ENVS)
    """CPU slots each run takes from the --workers cap. Default: derived from how a run executes
    (1: its n_envs environments step in its one process, on one torch thread)."""
    device: Literal["cpu", "cuda"] = "cpu"
    """Where PPO runs. "cuda" gives each run a GPU slot (CUDA_VISIBLE_DEVICES); "cpu" runs see no GPU."""
    runs_per_gpu: int = Field(1, ge=1, le=MAX_N_ENVS)
    """GPU slots per GPU: how many cuda runs may share one GPU."""
    eval: EvalSpec = EvalSpec()
    slurm: SlurmSpec = SlurmSpec()
    """sbatch resources for `--backend slurm`; ignored by the other backends."""
    checkpoint_every: WholeInt = Field(50_000, gt=0)
    """Timesteps between checkpoints; an interrupted run resumes from the last one. Default: 50,000, and
    100,000 for the off-policy algorithms (SAC, TD3, TQC, CrossQ: their checkpoints also write the replay
    buffer)."""
    checkpoint_every_s: float | None = Field(300.0, gt=0)
    """Also checkpoint once this many seconds have passed since the last checkpoint (or the start of
    training), whichever comes first; null: by timesteps only. Default: 300, and 900 for the off-policy algorithms.
    Not part of the run ids."""
    checkpoints_kept: WholeInt = Field(2, ge=1, le=MAX_CHECKPOINTS)
    """Checkpoints kept per run, each with its files' checksums: a resume that finds the newest damaged (a
    failing disk, a copy cut short) falls back to the one before. 1: only the newest. Not part of the run ids."""
    runs_dir: Path = Path("runs")
    """Where sweeps are written; relative to the spec file's folder."""
    tensorboard: bool = False
    """Also log each run's training to <run dir>/tensorboard/ (needs the tensorboard package)."""
    tracking: TrackingSpec = TrackingSpec()
    """Experiment tracking (W&B); never part of the run ids."""
    warn_only: list[Literal["short_episodes", "unhealthy_start", "penetration", "constant_obs"]] = []
    """Degenerate-env checks of the pre-launch probe that only warn instead of refusing the sweep."""
    search: SearchSpec | None = None
    """A search beyond the grid (docs/search.md): trials sampled from a space, each trained with several seeds."""
    warm_start: WarmStartSpec | None = None
    """Start every run from a finished run's policy and normalization (docs/training.md, "Warm starts")."""
    pbt: PbtSpec | None = None
    """Population-based training (docs/search.md, spec/pbtspec.py): a population per variant and grid point."""
    max_runs: int = Field(DEFAULT_MAX_RUNS, ge=1)
    """The most runs the spec may plan (variants x grid points x seeds, or trials x seeds): a larger plan is
    refused before anything is expanded, naming its count. `sweep run --max-runs` overrides it. Not part of the
    run ids."""

    _locator: SpecLocator | None = PrivateAttr(None)
    _warnings: list[str] = PrivateAttr(default_factory=list)
    _zoo_entries: dict[str, str] = PrivateAttr(default_factory=dict)
    _own_keys: dict[str, AlgoOwnKeys] = PrivateAttr(default_factory=dict)
    _max_runs: int | None = PrivateAttr(None)
    """`--max-runs`, over the spec's max_runs."""

    @field_validator("seeds")
    @classmethod
    def _check_seeds(cls, seeds: int | list[int] | AdaptiveSeeds) -> int | list[int] | AdaptiveSeeds:
        if isinstance(seeds, int) and seeds < 1:
            raise ValueError("a seed count must be at least 1")
        if isinstance(seeds, list):
            if not seeds:
                raise ValueError("the seed list is empty")
            if len(set(seeds)) != len(seeds):
                raise ValueError("seeds repeat")
            if min(seeds) < 0:
                raise ValueError("seeds must be non-negative")
        # numpy's seeding, which stable-baselines3's set_random_seed calls, takes 0 .. 2**32 - 1.
        largest = max(seeds) if isinstance(seeds, list) else seeds - 1 if isinstance(seeds, int) else seeds.max - 1
        if largest > MAX_SEED:
            raise ValueError(f"a seed is at most 2**32 - 1 = {MAX_SEED} (numpy's range; got {shown(largest)})")
        return seeds

    @field_validator(*ALGO_NAMES)
    @classmethod
    def _whole_section_counts(cls, section: dict[str, Any]) -> dict[str, Any]:
        if isinstance(section.get("policy_kwargs"), str):
            section = {**section, "policy_kwargs": zoo_expression(section["policy_kwargs"])}
        return {k: whole_hyperparameter(k, v) for k, v in section.items()}

    @field_validator("grid")
    @classmethod
    def _whole_grid_counts(cls, grid: dict[str, list[Any]]) -> dict[str, list[Any]]:
        return {k: [whole_hyperparameter(k.rsplit(".", 1)[-1], v) for v in values]
                if isinstance(values, list) and (k == "total_timesteps" or k.split(".")[0] in ALGO_NAMES) else values
                for k, values in grid.items()}

    @property
    def algos(self) -> list[str]:
        """The algorithms the sweep's runs train, in the spec's order."""
        return list(dict.fromkeys(self.grid["algo"])) if "algo" in self.grid else [self.algo]

    def own_keys(self, algo: str) -> AlgoOwnKeys:
        """What the algorithm's section sets of n_envs, normalize and total_timesteps for its runs alone (in a
        sweep of several algorithms; none in a sweep of one, whose runs take the spec's)."""
        return self._own_keys.get(algo, AlgoOwnKeys())

    def n_envs_of(self, algo: str) -> int:
        """The n_envs of the algorithm's runs: its section's own, else the spec's."""
        own = self.own_keys(algo).n_envs
        return self.n_envs if own is None else own

    def normalize_of(self, algo: str) -> bool | NormalizeSpec:
        """The normalize of the algorithm's runs (before a variant's or a grid point's): as n_envs_of."""
        own = self.own_keys(algo).normalize
        return self.normalize if own is None else own

    def total_timesteps_of(self, algo: str) -> int:
        """The total_timesteps of the algorithm's runs (before a grid point's): as n_envs_of."""
        own = self.own_keys(algo).total_timesteps
        steps = self.total_timesteps if own is None else own
        assert steps is not None, "parse() refuses a spec where an algorithm's runs have no total_timesteps"
        return steps

    def resolved(self) -> dict[str, Any]:
        """The spec as sweep.yaml records it: every key, and each algorithm's own n_envs, normalize and
        n_timesteps in its section, as a spec writes them there."""
        data = self.model_dump(mode="json")
        for algo, own in self._own_keys.items():
            written = own.model_dump(mode="json", exclude_none=True)
            data[algo] = {**data[algo], **{ZOO_KEY_OF[key]: value for key, value in written.items()}}
        return data

    def hyperparameters(self, algo: str) -> dict[str, Any]:
        """The spec's section of keyword arguments for one algorithm (`ppo:`, `sac:`, ...)."""
        section: dict[str, Any] = getattr(self, algo)
        return section

    def run_count(self, variants: int | None = None) -> tuple[int, list[tuple[str, int, tuple[str | int, ...]]]]:
        """How many runs the spec plans, counted without expanding anything (`variants`: how many the
        variants resolved to; default: the spec's own, an xml_glob as one), and its factors: (what, count,
        the key that sets it)."""
        if variants is None:
            counts = self._variant_counts()
            variants = sum(counts) + (1 if self.xml_glob else 0)
            widest = max(range(len(counts)), key=counts.__getitem__, default=None)
            at_variants: tuple[str | int, ...] = ("variants",) if widest is None or counts[widest] == 1 else (
                "variants", widest, "edit_grid")
        else:
            at_variants = ("xml_glob",) if self.xml_glob else ("variants",)
        widest_axis = max(self.grid, key=lambda key: len(self.grid[key]), default=None)
        factors = [("variants", variants, at_variants),
                   ("grid points", self._grid_points(), ("grid", widest_axis) if widest_axis else ("grid",))]
        if self.search is not None:  # a study per variant and grid point
            factors += [("trials", self.search.trials, ("search", "trials")),
                        ("seeds", self.search.seeds_per_trial, ("search", "seeds_per_trial"))]
        else:
            factors += [("seeds", self._seed_count(), ("seeds",))]
        return math.prod(count for _, count, _ in factors), factors

    def _variant_counts(self) -> list[int]:
        """The variants each entry of `variants` makes: one, or its edit grid's points."""
        return [math.prod(len(values) for values in v.edit_grid.values()) for v in self.variants]

    def listed_variants(self) -> int:
        """The variants the spec lists (edit grids expanded), without those of its xml_glob."""
        return sum(self._variant_counts())

    def _grid_points(self) -> int:
        """The grid's points once each algorithm's runs drop the other algorithms' keys (plan/runs.py)."""
        if "algo" not in self.grid:
            return math.prod(len(values) for values in self.grid.values())
        shared = math.prod(len(v) for k, v in self.grid.items() if k != "algo" and k.split(".")[0] not in ALGO_NAMES)
        # Checked later: a value that is not an algorithm's name counts as one with no keys of its own.
        algos = [algo if isinstance(algo, str) else repr(algo) for algo in self.grid["algo"]]
        return sum(shared * math.prod(len(v) for k, v in self.grid.items() if k.startswith(f"{algo}."))
                   for algo in dict.fromkeys(algos))

    def _seed_count(self) -> int:
        if isinstance(self.seeds, AdaptiveSeeds):
            return self.seeds.max
        return self.seeds if isinstance(self.seeds, int) else len(self.seeds)

    def check_run_count(self, variants: int | None = None) -> None:
        """SpecError when the spec plans more runs than its limit (`--max-runs`, else max_runs), naming the count
        and the key of its largest factor; before anything expands them."""
        limit = self.max_runs if self._max_runs is None else self._max_runs
        total, factors = self.run_count(variants)
        if total <= limit:
            return
        _, _, at = max(factors, key=lambda factor: factor[1])
        product = " x ".join(f"{what} {count:,}" for what, count, _ in factors)
        raise self.locator.error(at, f"the spec plans {total:,} runs ({product}), over the limit of {limit:,}: "
                                     "plan fewer, or raise max_runs (or --max-runs) if you mean it")

    @property
    def seed_list(self) -> list[int]:
        """Every seed a run may train: with adaptive seeds, 0..max-1 (the first `min` start)."""
        if isinstance(self.seeds, AdaptiveSeeds):
            return list(range(self.seeds.max))
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)

    @property
    def adaptive_seeds(self) -> AdaptiveSeeds | None:
        return self.seeds if isinstance(self.seeds, AdaptiveSeeds) else None

    @property
    def zoo_entries(self) -> dict[str, str]:
        """The RL Zoo entry (env id) each `<algo>: {zoo: true}` took its hyperparameters from, by algorithm."""
        return dict(self._zoo_entries)

    @property
    def warnings(self) -> list[str]:
        """Findings that do not stop the sweep (e.g. a batch_size that does not divide the rollout)."""
        return list(self._warnings)

    @property
    def locator(self) -> SpecLocator:
        """Where each key of this spec was written, for error messages of later stages."""
        return self._locator or SpecLocator(Path("<spec>"), None)


@dataclass(frozen=True)
class SpecLocator:
    """Maps a key path such as ('variants', 1, 'xml') to the file and line it was written at."""

    path: Path
    root: yaml.Node | None

    def line_of(self, loc: tuple[str | int, ...]) -> int | None:
        node, line = self.root, None
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                match = next(((k, v) for k, v in node.value if k.value == part), None)
                if match is None:
                    break
                line, node = match[0].start_mark.line + 1, match[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
                if part >= len(node.value):
                    break
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                break
        if line is None and self.root is not None:
            line = self.root.start_mark.line + 1
        return line

    def error(self, loc: tuple[str | int, ...], message: str) -> SpecError:
        line = self.line_of(loc)
        where = f"{self.path}:{line}" if line else str(self.path)
        key = format_key(loc)
        return SpecError(f"{where}: {key}: {message}" if key else f"{where}: {message}")


def format_key(loc: tuple[str | int, ...]) -> str:
    """('variants', 1, 'xml') -> 'variants[1].xml'."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def load(path: str | Path, max_runs: int | None = None) -> SweepSpec:
    """Read, validate and resolve a spec file. Raises SpecError with one line naming file, line, key.
    max_runs overrides the spec's own limit on the runs it plans."""
    path = Path(path)
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
    return _resolve_paths(spec, path.parent)


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
        raise locator.error(loc, _explain({**err, "loc": loc})) from None
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
    _check_semantics(spec, locator)
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
        raise locator.error(at, _explain({**err, "loc": at})) from None


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


def _explain(err: dict[str, Any]) -> str:
    kind, loc = err["type"], err["loc"]
    if kind == "extra_forbidden":
        return f"unknown key (allowed: {', '.join(_model_at(loc).model_fields)})"
    if kind == "missing":
        return "required key is missing"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    return f"{msg} (got {shown(err['input'])})" if "input" in err and kind != "value_error" else msg


def _model_at(loc: tuple[str | int, ...]) -> type[BaseModel]:
    """The model whose key is the last part of loc, found by walking the field annotations."""
    model: type[BaseModel] = SweepSpec
    for part in loc[:-1]:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        inner = _inner_model(field.annotation) if field else None
        if inner is not None:
            model = inner
    return model


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        if found := _inner_model(arg):
            return found
    return None


def _check_semantics(spec: SweepSpec, loc: SpecLocator) -> None:
    if not spec.variants and not spec.xml_glob:
        raise loc.error(("variants",), "no variants: list some under 'variants' or set 'xml_glob'")
    seen: dict[str, int] = {}
    for i, variant in enumerate(spec.variants):
        if variant.name in seen:
            raise loc.error(("variants", i, "name"),
                            f"duplicate variant name {variant.name!r} (also variants[{seen[variant.name]}])")
        seen[variant.name] = i
        _check_edit_grid(variant, ("variants", i), loc)
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
            raise loc.error(at, f"unknown search key: use ppo.<kwarg> (or {_OTHER_PREFIXES}), env_kwargs.<kwarg>, "
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
        for value in values:
            if value not in ALGO_NAMES:
                raise loc.error(at, f"unknown algorithm {shown(value)} (known: {', '.join(ALGO_NAMES)})")
        if len(set(values)) != len(values):
            raise loc.error(at, "an algorithm repeats")
        return
    if key == "total_timesteps":
        if not all(isinstance(whole_number(v), int) and not isinstance(v, bool) and 0 < whole_number(v) <= MAX_TIMESTEPS
                   for v in values):
            raise loc.error(at, f"total_timesteps values must be positive integers up to {MAX_TIMESTEPS:.0e}")
        return
    if key == "normalize":
        for value in values:
            try:
                NormalizeSpec.model_validate(value) if isinstance(value, dict) else _check_bool(value)
            except (ValidationError, ValueError) as exc:
                problem = _first_error(exc)
                raise loc.error(at, f"each value is true, false or a mapping of VecNormalize arguments: {problem}") \
                    from None
        return
    prefix = next((p for p in GRID_PREFIXES if key.startswith(p) and len(key) > len(p)), None)
    if prefix is None:
        raise loc.error(at, f"unknown grid key: use ppo.<kwarg> (or {_OTHER_PREFIXES}), env_kwargs.<kwarg>, "
                            "algo, normalize or total_timesteps")
    if prefix != "env_kwargs.":
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
        return f"{format_key(tuple(err['loc']))}: {_explain(err)}" if err["loc"] else _explain(err)
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
