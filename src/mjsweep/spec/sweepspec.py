"""The sweep spec's model: a validated, frozen SweepSpec and its sections (pydantic, extra="forbid").

Reading the YAML and reporting errors at their line is spec/loading.py's (with spec/locator.py); the checks
that read several keys at once are spec/crosschecks.py's.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..errors import shown
from ..sweepdir.models import WandbSpec
from .algos import (
    ALGO_NAMES,
    INTEGER_KWARGS,
    AlgoName,
)
from .editspec import EditSpec
from .limits import (
    DEFAULT_MAX_RUNS,
    MAX_CHECKPOINTS,
    MAX_COUNT,
    MAX_N_ENVS,
    MAX_SEED,
    MAX_TIMESTEPS,
)
from .literals import zoo_expression, zoo_text
from .locator import SpecLocator
from .pbtspec import PbtSpec
from .physicsspec import PhysicsEvalSpec
from .randomspec import RandomizedEdit
from .searchspace import SearchSpec
from .warmstartspec import WarmStartSpec
from .zoo import ZOO_TOP_KEYS

MENAGERIE_PREFIX = "menagerie:"
GRID_PREFIXES = (*(f"{name}." for name in ALGO_NAMES), "env_kwargs.")
OTHER_PREFIXES = ", ".join(f"{name}." for name in ALGO_NAMES[1:])
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
    randomize: list[RandomizedEdit] = []
    """Edits (after 'edits') whose value or factor is drawn from a distribution, afresh per episode or per env."""
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
    physics: PhysicsEvalSpec | None = None
    """Also evaluate each run's final policy on held-out physics: one episode per draw (spec/physicsspec.py)."""


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
    algo: AlgoName = "ppo"
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
        elif self.pbt is not None:  # a population per variant and grid point, each member a run per segment
            segments = self.pbt.generations(self.total_timesteps_of(self.algos[0]))
            factors += [("members", self.pbt.population, ("pbt", "population")),
                        ("segments each", max(1, segments), ("pbt", "interval"))]
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
