"""RL Zoo's hyperparameter blocks in a spec: `<algo>: {zoo: true}` reads them from the installed rl_zoo3
package (its hyperparams/<algo>.yml), and a block pasted under an algorithm's section may hold keys that are
the spec's own (n_envs, normalize, n_timesteps): the spec's for a sweep of one algorithm, that algorithm's
runs' own in a sweep of several.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .algos import ALGO_NAMES, NOT_APPLIED, label_of

# Keys of RL Zoo's hyperparameter files that are spec keys here, and RL Zoo's values where an entry has none.
ZOO_TOP_KEYS = {"n_envs": "n_envs", "normalize": "normalize", "n_timesteps": "total_timesteps"}
ZOO_TOP_DEFAULTS = {"n_envs": 1, "normalize": False}
# rl_zoo3's name for an algorithm (its --algo and hyperparams/<name>.yml) where it is not mjsweep's.
ZOO_NAMES = {"recurrent_ppo": "ppo_lstm"}


class ZooProblem(ValueError):
    """A zoo block that cannot be used, and the spec key to name in the error."""

    def __init__(self, at: tuple[str, ...], message: str):
        super().__init__(message)
        self.at = at


def zoo_name(algo: str) -> str:
    """The algorithm's name in rl_zoo3: `python -m rl_zoo3.train --algo NAME`, hyperparams/NAME.yml."""
    return ZOO_NAMES.get(algo, algo)


def zoo_hyperparameters(algo: str, env_id: str) -> tuple[str, dict[str, Any]]:
    """RL Zoo's tuned hyperparameters of `algo` for env_id from the installed rl_zoo3 package, and the entry
    they come from: env_id itself, else the same env's highest other version (RL Zoo tunes Hopper-v4;
    Hopper-v5 takes those). ValueError naming what is missing."""
    import importlib.util

    package = importlib.util.find_spec("rl_zoo3")  # found, not imported: it imports much of the ML world
    if package is None or package.origin is None:
        raise ValueError("zoo: true needs the rl_zoo3 package (pip install 'mjsweep[zoo]' or rl_zoo3)")
    path = Path(package.origin).parent / "hyperparams" / f"{zoo_name(algo)}.yml"
    entries = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    name = env_id.rsplit("-v", 1)[0]
    versions = sorted((int(key.rsplit("-v", 1)[1]), key) for key in entries
                      if isinstance(key, str) and key.rsplit("-v", 1)[0] == name and key.rsplit("-v", 1)[-1].isdigit())
    entry = env_id if env_id in entries else (versions[-1][1] if versions else None)
    if entry is None:
        raise ValueError(f"RL Zoo has no {label_of(algo)} hyperparameters for {env_id!r} (nor another version "
                         f"of it) in {path.name}")
    return entry, dict(entries[entry])


def zoo_sections(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str], dict[str, dict[str, Any]]]:
    """The spec's data with RL Zoo's values in each trained algorithm's section that says `zoo: true`, and the
    n_envs, normalize and n_timesteps of such a section or of a block pasted there taken out of it; the RL Zoo
    entry each `zoo: true` section took (algorithm -> env id); and, in a sweep of several algorithms, the spec
    keys each section gives its own algorithm's runs (algorithm -> spec key -> value). In a sweep of one
    algorithm its runs are the sweep's: they become the spec's own keys. Keys the spec writes itself override
    RL Zoo's for every run. ZooProblem if a block cannot be used."""
    env = data.get("env")
    if not isinstance(env, str) or not env:
        return data, {}, {}  # the spec's check of `env` says what is wrong
    data = dict(data)
    entries: dict[str, str] = {}
    written = {key for key in ZOO_TOP_KEYS.values() if key in data}
    trained = _trained_algos(data)
    own: dict[str, dict[str, Any]] = {}
    for algo in ALGO_NAMES:
        section = data.get(algo)
        if algo not in trained or not isinstance(section, dict) or not {*ZOO_TOP_KEYS, "zoo"} & section.keys():
            continue  # a section of an algorithm no run trains is left as written: the spec's check refuses it
        section, from_zoo = _with_zoo(algo, env, dict(section), entries)
        for zoo_key, key in ZOO_TOP_KEYS.items():
            if zoo_key not in section:
                continue
            value = section.pop(zoo_key)
            if key in written:
                if zoo_key in from_zoo:
                    continue  # the spec's own key overrides RL Zoo's
                raise ZooProblem((algo, zoo_key), f"{algo}.{zoo_key} and {key} both given: keep one")
            own.setdefault(algo, {})[key] = value
        data[algo] = section
    if len(trained) == 1:
        for values in own.values():
            data.update(values)
        own = {}
    return data, entries, own


def _trained_algos(data: dict[str, Any]) -> set[str]:
    """The algorithms the spec's runs train, as written (`grid.algo`, else `algo`); the spec's checks refuse
    what is wrong with them."""
    grid = data.get("grid")
    listed = grid.get("algo") if isinstance(grid, dict) else None
    if isinstance(listed, list):
        return {algo for algo in listed if isinstance(algo, str)}
    return {data.get("algo", "ppo")} if isinstance(data.get("algo", "ppo"), str) else set()


def _with_zoo(algo: str, env: str, section: dict[str, Any], entries: dict[str, str]
              ) -> tuple[dict[str, Any], set[str]]:
    """The section with RL Zoo's values under the keys it writes when it says `zoo: true`, and the keys that
    came from RL Zoo."""
    zoo = section.pop("zoo", False)
    if not isinstance(zoo, bool):
        raise ZooProblem((algo, "zoo"), f"zoo is true or false (got {zoo!r})")
    if not zoo:
        return section, set()
    try:
        entry, tuned = zoo_hyperparameters(algo, env)
    except ValueError as exc:
        raise ZooProblem((algo, "zoo"), str(exc)) from None
    for key in tuned:
        if key in NOT_APPLIED:
            raise ZooProblem((algo, "zoo"), f"RL Zoo's {zoo_name(algo)}.yml entry for {entry} sets {key}: "
                                            f"{NOT_APPLIED[key]}")
    entries[algo] = entry
    # RL Zoo's defaults where its entry has no n_envs or normalize: what its trainer takes, over the spec's.
    tuned = {**ZOO_TOP_DEFAULTS, **tuned}
    return {**tuned, **section}, {key for key in tuned if key not in section}
