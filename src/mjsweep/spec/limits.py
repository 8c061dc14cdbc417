"""What a spec may ask for, checked before anything is expanded, hashed or written: its size with YAML's
aliases expanded, finite numbers, and the number of runs it plans.

A YAML alias costs a few bytes to write and repeats a whole subtree wherever it is read: nine aliases
nested nine deep are a billion leaves once dumped to sweep.yaml or hashed into run ids. The composed node
graph shares aliased nodes, so its expanded size is counted here once per node, without expanding it.
"""

from __future__ import annotations

import math
from typing import Any

import yaml

from ..errors import shown

MAX_SPEC_BYTES = 256 << 10
"""A spec file's size: a long RL Zoo block is a few KB, a list of 10,000 seeds 60 KB. PyYAML reads about
100 KB a second into a graph of ~1 KB a node, so this bounds a spec's read to a few seconds and ~150 MB."""
MAX_EXPANDED = 4 << 20
"""The spec's size with every alias expanded, in characters of its scalars plus 8 a node."""
MAX_DEPTH = 64
"""Nesting of the spec's mappings and lists."""
DEFAULT_MAX_RUNS = 10_000
"""Runs a spec may plan unless its max_runs (or `--max-runs`) says more."""
MAX_N_ENVS = 1024
"""Environments a run steps: each is a MuJoCo model and data in memory (or a process, with subproc)."""
MAX_COUNT = 2**31 - 1
"""Episodes, steps and other counts that torch and numpy take as C integers."""
MAX_CHECKPOINTS = 1000
"""Checkpoints kept per run: each is a model (and a replay buffer) on disk."""
MAX_TIMESTEPS = 10**12
"""Timesteps a run trains: years of simulation at any speed this machine reaches."""
MAX_INT = 2**63 - 1
"""The largest integer a spec may hold anywhere: numpy's and torch's C integers."""
MAX_SEED = 2**32 - 1
"""The largest seed numpy (and so stable-baselines3's set_random_seed) takes."""
_NODE = 8


class TooBig(ValueError):
    """The spec is over a limit: `at` is the key path of the part that is."""

    def __init__(self, at: tuple[str | int, ...], message: str):
        super().__init__(message)
        self.at = at


def check_expanded_size(root: yaml.Node | None) -> None:
    """Raise TooBig when the document, aliases expanded, is over MAX_EXPANDED or nested over MAX_DEPTH
    (or an alias holds itself). Linear in the nodes written, whatever the aliases promise."""
    if root is None:
        return
    sizes: dict[int, int] = {}
    if not isinstance(root, yaml.MappingNode):
        _size(root, sizes, set(), 0)
        return
    parts = []
    for key, value in root.value:
        try:
            parts.append((key.value, _size(value, sizes, set(), 1)))
        except TooBig as exc:
            raise TooBig((str(key.value),), str(exc)) from None
    total = sum(size for _, size in parts) + _NODE * len(parts)
    if total > MAX_EXPANDED:
        key, _ = max(parts, key=lambda part: part[1])
        raise TooBig((str(key),), f"the spec holds over {MAX_EXPANDED:,} characters (its YAML aliases expanded), "
                                  "most of them under this key: fewer values, or fewer aliases of them")


def _size(node: yaml.Node, sizes: dict[int, int], open_nodes: set[int], depth: int) -> int:
    """The node's expanded size, saturated just above MAX_EXPANDED; each node is counted once."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    if id(node) in open_nodes:
        raise TooBig((), "a YAML alias refers to a mapping or list that holds it")
    if depth > MAX_DEPTH:
        raise TooBig((), f"the spec nests mappings and lists over {MAX_DEPTH} deep")
    if isinstance(node, yaml.ScalarNode):
        size = _NODE + len(node.value)
    else:
        open_nodes.add(id(node))
        children = [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else node.value
        size = _NODE
        for child in children:
            size = min(size + _size(child, sizes, open_nodes, depth + 1), MAX_EXPANDED + 1)
        open_nodes.discard(id(node))
    sizes[id(node)] = size
    return size


def unusable(data: Any, at: tuple[str | int, ...] = ()) -> tuple[tuple[str | int, ...], str] | None:
    """The key path of the first value in loaded YAML data that no run can take, and why, else None: an
    infinity or NaN (JSON, so spec.json and the run ids, cannot hold one, and no argument takes one), an
    integer beyond 64 bits, or a string with a NUL byte (no path, name or argument holds one). `data` is
    within MAX_EXPANDED by now."""
    if isinstance(data, float) and not math.isfinite(data):
        return at, ("must be a finite number: no argument of a run takes an infinity or NaN, and spec.json could "
                    "not record it")
    if isinstance(data, int) and not isinstance(data, bool) and abs(data) > MAX_INT:
        return at, f"is beyond a 64-bit integer ({shown(data, 30)}): numpy, torch and the env take none"
    if isinstance(data, str) and "\0" in data:
        return at, "holds a NUL byte: no path, name or argument takes one"
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        if isinstance(key, str) and "\0" in key:
            return (*at, key), "holds a NUL byte: no key takes one"
        if (found := unusable(value, (*at, key))) is not None:
            return found
    return None
