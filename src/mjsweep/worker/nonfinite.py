"""The first value of a training that is not finite, named in one line: which observation index, reward,
action or policy parameter, and at which step and episode.

The checks themselves are SB3's VecCheckNan around the training env (train_envs.py) and the parameter check
after each update (iterations.py); this module finds the value they flagged and words it. The line is the
last of the worker's log, so it is the run's error in status.json and in the live view.
"""

from __future__ import annotations

import numpy as np

SOURCES = {"observation": "the env", "reward": "the env", "action": "the policy"}
"""Who handed over each kind of value: what the user should look at first."""


class NonFiniteError(ValueError):
    """A NaN or an infinity where training needs a number; its message is the whole story, in one line."""


def first_non_finite(values: np.ndarray) -> tuple[tuple[int, ...], float] | None:
    """The index (C order) and value of the first entry that is NaN or infinite; None if none is."""
    bad = np.argwhere(~np.isfinite(values))
    if not len(bad):
        return None
    index = tuple(int(i) for i in bad[0])
    return index, float(values[index])


def subscript(index: tuple[int, ...]) -> str:
    """'[3]', '[2, 5]', or '' for a scalar."""
    return f"[{', '.join(str(i) for i in index)}]" if index else ""


def env_value_message(kind: str, name: str, value: float, step: int, episode: int, env: int | None = None,
                      at_reset: bool = False) -> str:
    """E.g. 'non-finite observation[3] = nan from the env at step 1,523 (episode 7)'.

    kind: observation, reward or action; name: the value with its index; step: the run's timesteps with this
    step's (all envs together); episode: the run's episodes in the order they started; env: which of several.
    """
    when = "at reset, step" if at_reset else "at step"
    where = f"episode {episode:,}" + (f", env {env}" if env is not None else "")
    return f"non-finite {name} = {value} from {SOURCES[kind]} {when} {step:,} ({where})"


def parameter_message(name: str, value: float, step: int, during: bool) -> str:
    """E.g. 'non-finite policy parameter action_net.weight[0, 3] = nan after the update at step 2,048'
    (name: 'policy parameter action_net.weight[0, 3]', or 'parameter log_ent_coef[0]' outside the policy)."""
    return f"non-finite {name} = {value} {'during' if during else 'after'} the update at step {step:,}"
