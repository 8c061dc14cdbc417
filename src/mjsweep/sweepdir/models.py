"""The typed contents of the JSON files in a sweep folder, each written with its schema version.

Reads are tolerant, so that a folder written by an older or newer version stays readable: a file without
a `schema` key predates versioning (version 1), and keys a model does not know are ignored. The JSON key
names are those earlier versions wrote.
"""

from __future__ import annotations

import hashlib
import json
from enum import Enum, StrEnum
from typing import Any, Literal, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from ..naming import format_value

SCHEMA = 3
"""The version written now. 1: files written before they carried a `schema` key (same keys otherwise). 3: spec.json's
`xml` names the model in the sweep's snapshot, and result.json's `xml_sha256` hashes what the worker loaded; a
seeds.jsonl round's pairs are tested by the Brunner-Munzel statistic (`method`, a pair's `t`, boundaries of |T|);
in rounds of version 2 and before, by the rank test's D."""

M = TypeVar("M", bound="FileModel")


class FileModel(BaseModel):
    """One JSON file's object. `schema_version` is written and read as `schema`."""

    model_config = ConfigDict(frozen=True, extra="ignore", validate_by_name=True, validate_by_alias=True,
                              serialize_by_alias=True)

    schema_version: int = Field(default=SCHEMA, alias="schema")

    @classmethod
    def from_file(cls: type[M], data: dict[str, Any]) -> M:
        """The model of an object read from a file; ValidationError if it is not one."""
        return cls.model_validate(data)._versioned()

    @classmethod
    def from_json(cls: type[M], text: str | bytes) -> M:
        """The model of a JSON text, parsed and checked in one pass; ValidationError if it is not one."""
        return cls.model_validate_json(text)._versioned()

    def _versioned(self: M) -> M:
        # The field's default is for records made in code: in a file, a missing version means 1.
        return self if "schema_version" in self.model_fields_set else self.model_copy(update={"schema_version": 1})

    def to_file(self) -> dict[str, Any]:
        """The object to write, with the current schema version whatever version was read."""
        return {**self.model_dump(mode="json"), "schema": SCHEMA}


class EarlierEvaluation(BaseModel):
    """A final evaluation a run had before it was evaluated again with other settings (result.json's
    earlier_evaluations): what it measured and how."""

    model_config = ConfigDict(frozen=True)

    eval_mean_return: float | None = None
    eval_std_return: float | None = None
    eval_episodes: int | None = None
    eval_deterministic: bool | None = None
    eval_s: float | None = None
    eval_info: dict[str, float] | None = None


class RunResult(FileModel):
    """result.json: what the worker measured once its training and evaluation were done."""

    run_id: str | None = None
    algo: str | None = None
    """The stable-baselines3 algorithm trained (ppo, sac, td3, a2c); None in files written before the key (PPO)."""
    eval_mean_return: float | None = None
    eval_std_return: float | None = None
    eval_episodes: int | None = None
    eval_deterministic: bool | None = None
    """Whether the final evaluation took the policy's mean action; None in files written before the key."""
    earlier_evaluations: list[EarlierEvaluation] = Field(default_factory=list)
    """Final evaluations with other settings, oldest first, that a re-evaluation replaced (the evaluation
    settings of spec.json changed after the run had finished: worker/reevaluation.py)."""
    timesteps: int | None = None
    wall_s: float | None = None
    """Seconds from the first env step to the end: training, saving and evaluation, over all attempts."""
    fps: float | None = None
    """Env steps per second of training (rollout + update); see training_fps for files of any version."""
    rollout_s: float | None = None
    train_s: float | None = None
    """Seconds of updates (rollout_s: of collecting rollouts), over all attempts."""
    training_s: float | None = None
    """rollout_s + train_s: the seconds fps counts. Absent in files written when fps counted wall time."""
    eval_s: float | None = None
    """Seconds of the final evaluation."""
    periodic_eval_s: float | None = None
    """Seconds of the periodic evaluations (eval.every), over all attempts; counted in neither fps nor eval_s."""
    cpu_s: float | None = None
    """CPU seconds (user + system) the worker's processes spent, children included, summed over attempts
    (each attempt's until its last checkpoint, the last one's whole): the run's cost (the search metrics
    cpu_seconds and cpu_hours). None in files written before the key."""
    evaluations: int | None = None
    """Rows of evaluations.csv (periodic evaluations); None without eval.every."""
    best_eval_mean_return: float | None = None
    """The best periodic evaluation's mean return (its model: best_model.zip), and its timesteps."""
    best_eval_timesteps: int | None = None
    eval_info: dict[str, float] | None = None
    """The final evaluation's mean over episodes of each info key spec.json's eval_info names (each episode's
    value from its last step's info); a key some episode's info lacked is left out."""
    save_s: float | None = None
    """Seconds writing checkpoints and the final model, over all attempts."""
    checkpoint_save_s: float | None = None
    """Seconds the last checkpoint took to write, and its files' bytes (an off-policy run's replay buffer
    among them: replay_buffer_bytes)."""
    checkpoint_bytes: int | None = None
    replay_buffer_bytes: int | None = None
    replay_buffer_size: int | None = None
    """Transitions in the replay buffer at the end of training (off-policy runs)."""
    replay_buffer_resumed: int | None = None
    """Transitions in the replay buffer this attempt resumed with (off-policy runs that resumed)."""
    early_fps: float | None = None
    """progress.csv's early fps and last ep_rew_mean, so that `sweep status` need not open that file."""
    ep_rew_mean: float | None = None
    attempt_wall_s: float | None = None
    startup_s: float | None = None
    resumed_from: int | None = None
    """The checkpoint's timesteps this attempt resumed from; None: it started from 0."""
    fell_back_because: str | None = None
    """Set when an attempt of the run could not resume from its newest checkpoint (a damaged file): which
    checkpoint it resumed from instead, or that it started over, and why (resume.json's text)."""
    device: str | None = None
    cuda_visible_devices: str | None = None
    torch_threads: int | None = None
    torch_interop_threads: int | None = None
    started_by: str | None = None
    """How the worker's process began: "exec" (a fresh interpreter) or "template" (forked, imports done)."""
    warm_start: WarmSource | None = None
    """The finished run this one started from (spec.json's); None: from scratch."""
    xml_sha256: str | None = None
    """The hash of the model files this attempt loaded (robots/modelfiles.loaded_sha256); files of schema 2 and
    before copied spec.json's."""
    env_source_sha256: str | None = None
    """The sha256 of the source file of a custom env ('package.module:Class') this attempt trained with."""
    peak_rss_mb: float | None = None
    host: str | None = None
    node: str | None = None
    versions: dict[str, str] = Field(default_factory=dict)

    @property
    def training_fps(self) -> float | None:
        """Env steps per second of training in a result.json of any version: files without training_s
        were written when fps also counted saving and the final evaluation, so theirs is recomputed from
        rollout_s + train_s where they have those, and old and new runs compare."""
        if self.training_s is None and self.timesteps and (self.rollout_s or 0) + (self.train_s or 0) > 0:
            return round(self.timesteps / ((self.rollout_s or 0) + (self.train_s or 0)), 1)
        return self.fps

    @property
    def complete(self) -> bool:
        """The worker got to the end: its final evaluation is here."""
        return self.eval_mean_return is not None


class Timing(BaseModel):
    """Seconds a run has spent so far, summed over its attempts."""

    model_config = ConfigDict(frozen=True)

    wall_s: float = 0.0
    """From the start of training: training, checkpoints, and at the end the final save and evaluation."""
    rollout_s: float = 0.0
    """Collecting rollouts: env steps and the policy's forward pass."""
    train_s: float = 0.0
    """Updates: PPO epochs, SAC / TD3 gradient steps (forward, backward, optimizer)."""
    save_s: float = 0.0
    """Writing checkpoints; absent from checkpoint.json files of earlier versions."""
    eval_s: float = 0.0
    """Periodic evaluations (eval.every)."""
    cpu_s: float = 0.0
    """CPU seconds (user + system) of the worker's process and its children; absent from checkpoint.json
    files of earlier versions."""

    @property
    def training_s(self) -> float:
        """Rollout + update: the seconds a run's fps counts."""
        return self.rollout_s + self.train_s


class CheckpointRecord(FileModel):
    """checkpoints/checkpoint.json: a saved model and where the logs stood when it was saved."""

    timesteps: int
    iteration: int
    model_file: str
    """The model's file name in checkpoints/."""
    monitor_bytes: int
    progress_bytes: int
    timing: Timing
    evaluations_bytes: int = 0
    """evaluations.csv's size when the checkpoint was taken."""
    vecnormalize_file: str | None = None
    """The normalization statistics saved with the model (a file in checkpoints/), for a normalized run."""
    best_timesteps: int | None = None
    """The best evaluation's timesteps when the checkpoint was taken (eval.every; None: none yet). A resume
    brings that best model back if a later, dropped evaluation replaced it. Absent in older files."""
    replay_buffer_file: str | None = None
    """The replay buffer saved with the model (a file in checkpoints/), for an off-policy run (SAC, TD3)."""
    replay_buffer_size: int | None = None
    """Transitions that buffer holds."""
    replay_buffer_bytes: int | None = None
    exact_file: str | None = None
    """What else the next steps depend on (the envs' physics mid-episode, the random generators, the episode
    counters: worker/exact.py), for an exact resume; None in checkpoints of earlier versions, which resume
    re-seeded."""
    bytes: int | None = None
    """Size of the checkpoint's files together (model, statistics, buffer)."""
    save_s: float | None = None
    """Seconds writing this checkpoint's files."""
    sha256: dict[str, str] = {}
    """Each of the checkpoint's files (by name) and its sha256, which a resume verifies before loading it.
    Empty in files written before the key: their checkpoint is loaded unverified."""
    earlier: list[CheckpointRecord] = []
    """The older checkpoints kept beside this one (the spec's checkpoints_kept), oldest first, each with an
    empty `earlier`: a resume falls back to them, newest first, when this one is damaged. This record's own
    fields stay the newest checkpoint's, as in files written before the key."""

    def files(self) -> list[str]:
        """Names of this checkpoint's files in checkpoints/."""
        return [n for n in (self.model_file, self.vecnormalize_file, self.replay_buffer_file, self.exact_file)
                if n is not None]

    def kept(self) -> list[CheckpointRecord]:
        """Every checkpoint this record keeps, oldest first, each as a record of its own: with the ones
        older than it as its `earlier`, as checkpoint.json would name it alone."""
        chain = [*self.earlier, self]
        return [c.model_copy(update={"earlier": chain[:i]}) for i, c in enumerate(chain)]


class ResumeRecord(FileModel):
    """resume.json: the last attempt of a run that could not resume from its newest checkpoint (the worker
    writes it; `sweep status`, the live view and result.json's fell_back_because show it)."""

    newest: int | None
    """The newest checkpoint's timesteps (None: checkpoint.json itself could not be read)."""
    resumed_from: int | None
    """The older checkpoint the attempt resumed from; None: it started over from 0 timesteps."""
    because: list[str]
    """Why each checkpoint was passed over, newest first."""

    @property
    def text(self) -> str:
        """One line: what the attempt did instead, and why."""
        did = (f"resumed from the checkpoint at {self.resumed_from} timesteps" if self.resumed_from is not None
               else "started over from 0 timesteps, its logs cleared")
        return f"{did}, no later checkpoint being usable: {'; '.join(self.because)}"


class BestRecord(FileModel):
    """best/best.json: the best periodic evaluation so far and its model (and statistics) in best/."""

    timesteps: int
    mean_return: float
    model_file: str
    vecnormalize_file: str | None = None


class VariantRecord(BaseModel):
    """One variant of the sweep and its compiled model's statistics."""

    name: str
    xml: str
    """The XML as the spec names it (a generated variant: its base)."""
    sha256: str
    bodies: int
    joints: int
    actuators: int
    total_mass: float
    obs_shape: tuple[int, ...] = ()
    """The env's observation and action shapes from the pre-launch probe; () when it was skipped."""
    act_shape: tuple[int, ...] = ()


class SweepVariants(FileModel):
    """<sweep>/variants.json: every variant, written when the sweep starts, so that `sweep report` need not
    compile the models again."""

    variants: list[VariantRecord]


class RunState(str, Enum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    PRUNED = "pruned"  # a search stopped its trial as behind the others: an end, never a failure


class DisplayState(StrEnum):
    """A run's state as status, the live view, the index and reports show it: status.json's RunState, or what
    a reader derives from a run's files."""

    PENDING = "pending"          # also a run without status.json yet
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    PRUNED = "pruned"
    STALE = "stale"              # status.json says running, but its launcher or process is gone
    UNKNOWN = "unknown"          # a run file could not be read

    @classmethod
    def of(cls, state: RunState) -> DisplayState:
        return cls(state.value)


class FailureClass(str, Enum):
    ERROR = "error"              # the worker raised: deterministic, not retried
    KILLED = "killed"            # died from a signal it did not ask for (kill -9, scancel, a cluster's limit)
    OUT_OF_MEMORY = "out-of-memory"  # killed for its memory: the OOM killer, SLURM, Ray (files before: killed)
    TIMEOUT = "timeout"          # stopped by --timeout
    INTERRUPTED = "interrupted"  # stopped by Ctrl-C / SIGTERM on the launcher
    LOST = "lost"                # its launcher or node went away while it ran


class RunStatus(FileModel):
    """status.json: what the launcher knows about one run."""

    state: RunState = RunState.PENDING
    attempts: int = 0
    returncode: int | None = None
    failure: FailureClass | None = None
    pid: int | None = None
    host: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    error_tail: str | None = None
    """Last lines of log.txt when the run failed; since `cause` exists, followed by the cause as its last line."""
    cause: str | None = None
    """Why the run ended as it did, in one line (killed by the OOM killer with its peak and limit, by which
    signal, timed out, exited without a result, the error line); None in files written before the key: their
    error_tail's last line says what was known."""
    peak_rss_mb: float | None = None
    """The largest resident set (RSS) of the run's processes: every page they map, those shared with other
    processes too (a forked run's template, shared libraries)."""
    peak_uss_mb: float | None = None
    """The largest unique set (USS) of a local run's processes: the pages no other process shares, what one
    more run like it adds (the memory admission's measure). None for Ray and SLURM runs and in files
    written before it was measured: the admission then counts peak_rss_mb."""
    fell_back: str | None = None
    """Why the run did not resume from its newest checkpoint, and from which it did (resume.json's line),
    once it ended; None when it never fell back."""


def evaluated_as(spec: RunSpec, result: RunResult) -> bool:
    """Whether the result's final evaluation has the run's evaluation settings (episodes, deterministic): runs
    evaluated otherwise never pool. A setting a file written before it was recorded counts as the same."""
    return (result.eval_episodes in (None, spec.eval_episodes)
            and result.eval_deterministic in (None, spec.eval_deterministic))


def evaluation_words(episodes: int | None, deterministic: bool | None) -> str:
    """An evaluation's settings as the plan and the report say them: '5 episodes, deterministic'."""
    count = "? episodes" if episodes is None else f"{episodes} episode{'' if episodes == 1 else 's'}"
    return count if deterministic is None else f"{count}, {'deterministic' if deterministic else 'sampled'}"


def succeeded(status: RunStatus | None, result: RunResult | None) -> bool:
    """The one rule for a run that is done: its launcher saw it succeed and its result is complete."""
    return status is not None and status.state is RunState.SUCCEEDED and result is not None and result.complete


class WandbSpec(BaseModel):
    """The spec's tracking.wandb section, copied into each run's spec.json: each run logs its progress rows and
    final result to a W&B run of its own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    project: str = Field(min_length=1)
    mode: Literal["offline", "online"] = "offline"
    """offline: written to <run dir>/wandb/ only (`wandb sync` uploads it later); online: needs a login."""
    entity: str | None = None
    """The W&B team or user; default: the login's."""
    tags: list[str] = []
    """Tags added to every run, beside its variant and seed."""


class WarmSource(BaseModel):
    """The finished run a warm run starts from (spec.json and result.json's warm_start): its policy and
    normalization statistics (and its replay buffer where asked) are loaded before the first step."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    run_dir: str
    """The source's folder, absolute."""
    run_id: str
    """Part of the warm run's id: warm runs of different sources, or a warm and a cold run, never pool."""
    timesteps: int | None = None
    """The env steps the source trained."""
    eval_mean_return: float | None = None
    """The source's final evaluation."""
    replay_buffer: bool = False
    """Its last checkpoint's replay buffer is loaded too (off-policy algorithms)."""
    nearest: bool = False
    """Picked by a design search as the finished design nearest in the searched edits."""

    def identity(self) -> dict[str, Any]:
        """What of the source decides what the warm run computes (its folder may move)."""
        return {"run_id": self.run_id, "replay_buffer": self.replay_buffer}


class RunSpec(FileModel):
    """spec.json: everything the worker needs for one run (plan.runs.expand makes it). Files written before
    it carried a `schema` key are version 1."""

    run_id: str
    sweep: str
    variant: str
    grid: dict[str, Any]
    """This run's value for each grid key (empty without a grid)."""
    edits: dict[str, Any] = Field(default_factory=dict)
    """The edit_grid point (or a design search's edit values) its variant was generated from, label: value;
    empty for a variant used as is, and in spec.json files written before the key. Not in content_hash: the
    edited model's hash (xml_sha256) is."""
    seed: int
    env: str
    xml: str
    """The XML the worker loads: its model's in the sweep folder's snapshot (robots/snapshot.py); in files of
    schema 2 and before, the user's file or a generated variant's variant.xml in the run's folder."""
    xml_sha256: str
    env_kwargs: dict[str, Any]
    max_episode_steps: int | None
    policy: str
    algo: str = "ppo"
    """The stable-baselines3 algorithm (algos.ALGOS); spec.json files written before the key train PPO."""
    hyperparams: dict[str, Any] = Field(validation_alias=AliasChoices("hyperparams", "ppo"))
    """The algorithm's keyword arguments as the spec gives them (RL Zoo spellings: schedules, noise);
    spec.json files written before `algo` call them `ppo`."""
    total_timesteps: int
    n_envs: int
    vec_env: str = "dummy"
    checkpoint_every: int
    checkpoint_every_s: float | None = 300.0
    """Seconds between checkpoints (whichever comes first with checkpoint_every); not in content_hash,
    as checkpoint_every is not: when a run saves does not change what it computes."""
    checkpoints_kept: int = 2
    """Checkpoints kept, the newest and the ones a resume falls back to when it is damaged; not in
    content_hash either. spec.json files written before the key resume as they did, with 2 from then on."""
    checkpoint_at_end: bool = False
    """Also checkpoint where training ends: a PBT segment, which the member's next segment (or a copy's) resumes
    from. Not in content_hash: when a run saves does not change what it computes."""
    eval_episodes: int
    eval_deterministic: bool
    eval_every: int | None = None
    """Timesteps between periodic evaluations; None: the final one only. Not in content_hash: an
    evaluation runs on its own env and random state, so training computes the same with or without."""
    eval_info: list[str] = Field(default_factory=list)
    """Keys of the env's info that the final evaluation averages over its episodes (a search's `info:`
    objectives); out of content_hash, as eval_every is."""
    content_hash: str
    cpus: int = 1
    """CPU slots the run takes from the scheduler's cap (processes or threads it uses)."""
    device: str = "cpu"
    """torch device of the run; "cuda" runs take a GPU slot."""
    tensorboard: bool = False
    """Log to <run dir>/tensorboard. Kept out of content_hash: logging does not change what a run computes."""
    normalize: dict[str, Any] | None = None
    """VecNormalize's keyword arguments, every one written out; None: no normalization. In content_hash
    when set (a run without it keeps the id it had before the key existed)."""
    wandb: WandbSpec | None = None
    """Log to Weights & Biases (worker/tracking.py); out of content_hash as tensorboard is."""
    warm_start: WarmSource | None = None
    """The finished run this one starts from; None: from scratch. Its identity is in content_hash."""
    randomize: list[dict[str, Any]] = Field(default_factory=list)
    """The variant's randomized edits as the spec writes them (spec/randomspec.py), drawn at each reset of the
    training envs (draws.jsonl); empty: the nominal model only. In content_hash and the experiment when set, so a
    randomized run never pools with a nominal one (a nominal run keeps the id it had before the key existed)."""
    physics_eval: dict[str, Any] | None = None
    """eval.physics resolved for this run's variant: {draws, seed, threshold, randomize} (its final policy plays one
    episode on each held-out draw: physics_eval.json); None: no such evaluation. Out of content_hash, as eval_every
    is: an evaluation does not change what a run computes."""

    @property
    def group(self) -> str:
        """Runs that differ only by seed share a group: the unit a report aggregates over. The grid's keys go
        in sorted order, as spec.json stores them, so a plan's group is the group read back from its runs."""
        return " ".join([self.variant, *(f"{k}={format_value(v)}" for k, v in sorted(self.grid.items()))])

    def experiment_content(self) -> dict[str, Any]:
        """What decides what the run computes, but the seed: runs of one experiment have equal contents."""
        return {"env": self.env, "xml_sha256": self.xml_sha256, "env_kwargs": self.env_kwargs,
                "max_episode_steps": self.max_episode_steps, "policy": self.policy, "algo": self.algo,
                "hyperparams": self.hyperparams, "total_timesteps": self.total_timesteps, "n_envs": self.n_envs,
                "vec_env": self.vec_env, "device": self.device, "normalize": self.normalize,
                # only when set: cold runs keep the experiment they had before warm starts existed
                **({"warm_start": self.warm_start.identity()} if self.warm_start else {}),
                **({"randomize": self.randomize} if self.randomize else {})}

    @property
    def experiment(self) -> str:
        """A short hash of experiment_content: seeds of one group pool only when it is equal."""
        text = json.dumps(self.experiment_content(), sort_keys=True, default=repr)
        return hashlib.sha256(text.encode()).hexdigest()[:8]


class PlanRecord(FileModel):
    """plan.json: the experiment of every group the last `sweep run` planned, so that a report shows that
    plan's runs and keeps runs of earlier specs apart. Folders from before it have none."""

    experiments: dict[str, str]
    """group -> RunSpec.experiment of its runs in the plan."""
    runs: list[str] = Field(default_factory=list)
    """The plan's run ids (with adaptive seeds, every seed up to max): what `sweep status` shows."""


class TrialState(str, Enum):
    RUNNING = "running"    # asked; some of its seeds have not ended
    COMPLETE = "complete"  # every seed ended, at least one succeeded: it has its objective
    PRUNED = "pruned"      # stopped as behind the other trials of its study
    FAILED = "failed"      # no seed succeeded, or its robot could not be built


class TrialRecord(FileModel):
    """A line of trials.jsonl: a trial's whole state after a change (search/journal.py appends and replays).
    Lines written before the sweep folder shared one schema scheme carry their own counter, 1: the same keys."""

    study: str
    """The study's key: the variant family and grid point it searches (one study per pair)."""
    number: int
    """The trial's number within its study, from 0."""
    params: dict[str, Any]
    runs: list[str]
    """Its runs' ids, one per seed."""
    state: TrialState
    value: float | None = None
    """The objective (complete), or the evaluation it was judged on (pruned); a multi-objective search's
    first objective."""
    values: list[float] | None = None
    """Every objective's value in the spec's order (a complete trial of a multi-objective search); None for a
    single objective and in lines written before multi-objective searches."""
    seeds_ok: int = 0
    note: str = ""
    start: Literal["warm", "cold"] | None = None
    """With warm_start: nearest, whether the trial's runs started from a finished trial (warm_from) or from
    scratch (the cold share, or no finished trial to start from); None in other searches."""
    warm_from: int | None = None
    """The number of the trial of the same study whose runs a warm trial's runs started from."""

    @property
    def key(self) -> tuple[str, int]:
        return self.study, self.number

    @property
    def objectives(self) -> list[float] | None:
        """Every objective's value, for a single objective as for several; None without a value."""
        if self.values is not None:
            return self.values
        return [self.value] if self.value is not None else None




class ConfirmRecord(FileModel):
    """A line of confirm.jsonl: one of a search's best trials trained again on seeds no trial used
    (search.confirm), on record before any of its runs starts; the last line of a trial wins."""

    study: str
    number: int
    """The trial's number in its study."""
    params: dict[str, Any]
    tuned: float | None
    """The trial's objective on its search seeds, as the search ranked it."""
    seeds: list[int]
    """The fresh seeds: none of them trained any trial of the study."""
    runs: list[str]
    state: TrialState
    value: float | None = None
    """The objective's IQM over the fresh seeds that gave one."""
    seeds_ok: int = 0
    note: str = ""

    @property
    def key(self) -> tuple[str, int]:
        return self.study, self.number


class SeedVerdict(str, Enum):
    BEST = "best"            # the group every other is compared with: highest mean final return in play
    SEPARATED = "separated"  # the sequential test separates it from the best
    EQUAL = "equal"          # found equal to the best within `equal_within`: no more seeds
    OPEN = "open"            # not decided yet: one more seed this round
    AT_MAX = "at max"        # not decided, but it has trained its `max` seeds
    STOPPED = "stopped"      # left the contenders in an earlier round; its seeds stay as they are
    NO_RETURN = "no return"  # none of its seeds gave a final return (all failed): no more seeds


class SeedGroup(BaseModel):
    """One group's state in a round of adaptive seeds."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    group: str
    seeds: int
    """Seeds it had before this round's decision."""
    returns: int
    """How many of them gave a final return."""
    mean: float | None = None
    p: float | None = None
    """P(best > this group); None for the best group, or with fewer than 2 returns."""
    low: float | None = None
    high: float | None = None
    """The bootstrap interval of p, in rounds decided before the sequential test (schema 1 of this file)."""
    verdict: SeedVerdict
    add: bool = False
    """It gets one more seed."""


class SeedPair(BaseModel):
    """One pair's group-sequential test as it stood at a round (results/seeding.py): enough to recheck it by
    hand from the returns of the seeds named."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    a: str
    b: str
    looks: list[list[int]]
    """The returns each group had at each of this pair's looks: [[n_a, n_b], ...]."""
    u: float
    """Mann-Whitney U of a over b at the last look (a tie counts one half)."""
    d: float
    """|2U - n_a n_b| at the last look: the statistic the boundaries bound in rounds of the rank test (no `t`)."""
    t: float | None = None
    """The Brunner-Munzel statistic T of a over b at the last look; its |T| is what the boundaries bound. None in
    rounds decided by the rank test (schema 2 and before)."""
    boundaries: list[float | None]
    """The boundary at each look at `level`, of |T| (of D without `t`); None: nothing could cross there."""
    level: float
    """The error this pair was last tested at: alpha / (pairs not yet separated), Holm's step."""
    separated: bool
    equal: bool = False

    @property
    def statistic(self) -> float:
        """What the boundaries bound at the last look: |T|, or D in rounds of the rank test."""
        return self.d if self.t is None else abs(self.t)


class DrawRecord(FileModel):
    """A line of a run's draws.jsonl: the values one episode of one training env drew for the variant's
    randomized edits (robots/randomized_env.py). A resumed run may write an episode's line again, with the same
    values (a draw is a function of the run's seed, the env and the episode alone)."""

    env: int
    episode: int
    """The env's episode, from 0."""
    values: dict[str, float]
    """Where the spec wrote each distribution (randomize[0].mass.factor): the value drawn."""


class PhysicsEval(FileModel):
    """physics_eval.json: a finished run's final policy on each held-out draw of eval.physics, one episode each
    (worker/physics_eval.py). Written before result.json; a run whose spec.json's physics_eval differs from
    `settings` is evaluated again, without training."""

    settings: dict[str, Any]
    """spec.json's physics_eval it was evaluated with: {draws, seed, threshold, randomize}."""
    deterministic: bool
    values: list[dict[str, float]]
    """Draw i's values, by where the spec wrote each distribution (as draws.jsonl names them)."""
    returns: list[float]
    """The return of the episode on draw i, i from 0."""
    lengths: list[int]
    eval_s: float

    def matches(self, spec: RunSpec) -> bool:
        """Whether this is the evaluation spec.json asks for. The threshold counts too: the report reads it from
        here, as spec.json is written again only for runs that run."""
        return self.settings == spec.physics_eval and self.deterministic == spec.eval_deterministic


def physics_evaluated(spec: RunSpec, evaluation: PhysicsEval | None) -> bool:
    """Whether the run has the held-out evaluation its spec.json asks for (or asks for none)."""
    return spec.physics_eval is None or (evaluation is not None and evaluation.matches(spec))


class SeedRound(FileModel):
    """A line of seeds.jsonl: one decision of adaptive seeds (results/seeding.py), on record before any seed
    it adds starts, so that a resumed sweep continues from the seeds it granted."""

    round: int
    """1 for the decision after every group's `min` seeds, then one more each round."""
    best: str | None
    confidence: float
    groups: list[SeedGroup]
    test: str | None = None
    """The test the decision rests on, in words; None in rounds decided before the sequential test."""
    method: str | None = None
    """The sequential test's name: "bounded Brunner-Munzel" ("Brunner-Munzel": the same test before its variance
    was floored, 2026-11-28); None in rounds decided by the exact rank test (schema 2 and before) or before any
    sequential test."""
    pairs: list[SeedPair] = Field(default_factory=list)
    """Every pair's sequential test at this round (empty in rounds decided before it)."""
    equal_within: float | None = None

    @property
    def done(self) -> bool:
        """No group gets a seed: the best is separated from every other, or the open ones are at max."""
        return not any(g.add for g in self.groups)

    def granted(self) -> dict[str, int]:
        """Seeds each group has once this round's seeds are added."""
        return {g.group: g.seeds + int(g.add) for g in self.groups}

    def seeds(self) -> dict[str, int]:
        """Seeds each group had when this round was decided: the round's look."""
        return {g.group: g.seeds for g in self.groups}


class CrossResult(FileModel):
    """cross/<run id>/<variant>.json: one trained policy evaluated on one variant (`sweep evaluate --cross`),
    or why it was not (spaces that differ). Files written before the shared scheme carry their own counter, 1."""

    episodes: int
    mean: float | None = None
    std: float | None = None
    returns: list[float] | None = None
    lengths: list[int] | None = None
    skipped: str | None = None
    physics: dict[str, Any] | None = None
    """On a variant's held-out physics (<variant>@held-out.json): the eval.physics settings of that variant's
    runs it was evaluated with, one episode per draw; None on the variant's nominal model."""

    def to_file(self) -> dict[str, Any]:
        """Only the keys that say something: an evaluation's numbers, or a skip's reason."""
        return {**self.model_dump(mode="json", exclude_none=True), "schema": SCHEMA}
