"""RL Zoo's hyperparameter blocks in a spec: `ppo: {zoo: true}` reads them from the installed rl_zoo3
package (its hyperparams/ppo.yml), and a block pasted under `ppo` may hold keys that are the spec's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

# Keys of RL Zoo's hyperparameter files that are spec keys here.
ZOO_TOP_KEYS = {"n_envs": "n_envs", "normalize": "normalize", "n_timesteps": "total_timesteps"}


def zoo_hyperparameters(env_id: str) -> tuple[str, dict[str, Any]]:
    """RL Zoo's tuned PPO hyperparameters for env_id from the installed rl_zoo3 package (its ppo.yml), and
    the entry they come from: env_id itself, else the same env's highest other version (RL Zoo tunes
    Hopper-v4; Hopper-v5 takes those). ValueError naming what is missing."""
    import importlib.util

    package = importlib.util.find_spec("rl_zoo3")  # found, not imported: it imports much of the ML world
    if package is None or package.origin is None:
        raise ValueError("zoo: true needs the rl_zoo3 package (pip install 'mjsweep[zoo]' or rl_zoo3)")
    text = (Path(package.origin).parent / "hyperparams" / "ppo.yml").read_text(encoding="utf-8")
    entries = yaml.safe_load(text) or {}
    name = env_id.rsplit("-v", 1)[0]
    versions = sorted((int(key.rsplit("-v", 1)[1]), key) for key in entries
                      if isinstance(key, str) and key.rsplit("-v", 1)[0] == name and key.rsplit("-v", 1)[-1].isdigit())
    entry = env_id if env_id in entries else (versions[-1][1] if versions else None)
    if entry is None:
        raise ValueError(f"RL Zoo has no PPO hyperparameters for {env_id!r} (nor another version of it)")
    return entry, dict(entries[entry])


def zoo_keys_in_ppo(data: Any) -> Any:
    """The spec's data with RL Zoo's values under `ppo` where it says `zoo: true`, and with the n_envs,
    normalize and n_timesteps of a block pasted there moved out to the spec's own keys."""
    ppo = data.get("ppo") if isinstance(data, dict) else None
    if not isinstance(ppo, dict) or not {*ZOO_TOP_KEYS, "zoo"} & ppo.keys():
        return data
    data, ppo = dict(data), dict(ppo)
    from_zoo: set[str] = set()
    if ppo.pop("zoo", False) is True:
        # RL Zoo's values first; keys the spec writes (in ppo, or n_envs / normalize / total_timesteps)
        # override them.
        _, tuned = zoo_hyperparameters(str(data.get("env", "")))
        from_zoo = {k for k in tuned if k not in ppo}
        ppo = {**tuned, **ppo}
    for zoo_key, key in ZOO_TOP_KEYS.items():
        if zoo_key in ppo:
            if key in data and zoo_key in from_zoo:
                ppo.pop(zoo_key)
                continue
            if key in data:
                raise ValueError(f"ppo.{zoo_key} and {key} both given: keep one")
            data[key] = ppo.pop(zoo_key)
    data["ppo"] = ppo
    return data
