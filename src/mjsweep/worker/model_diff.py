"""Two models' parameters and optimizer state compared exactly, for `sweep verify`: `python -m
mjsweep.worker.model_diff ZIP ZIP` prints the first difference, or nothing when they are the same (torch is
imported only in a process of its own)."""

from __future__ import annotations

import sys
from typing import Any


def first_difference(one: str, other: str) -> str | None:
    """Where two SB3 model zips first differ in what they train (the policy's parameters, the optimizers'
    state, SAC's entropy coefficient...), or None."""
    from stable_baselines3.common.save_util import load_from_zip_file

    from .loaded_policy import require_run_files

    require_run_files(one)  # the sweep's model (unpickled too); the other is this user's retraining
    _, first, _ = load_from_zip_file(one, device="cpu")
    _, second, _ = load_from_zip_file(other, device="cpu")
    return _difference(first, second, "")


def _difference(a: Any, b: Any, where: str) -> str | None:
    import torch

    if isinstance(a, dict) and isinstance(b, dict):
        for key in a.keys() | b.keys():
            if key not in a or key not in b:
                return f"{where}{key} is in one model only"
        for key in a:
            if (found := _difference(a[key], b[key], f"{where}{key}.")) is not None:
                return found
        return None
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return None if a.shape == b.shape and torch.equal(a, b) else where.rstrip(".")
    if isinstance(a, list | tuple) and isinstance(b, list | tuple) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if (found := _difference(x, y, f"{where}{i}.")) is not None:
                return found
        return None
    return None if a == b else where.rstrip(".")


def main(argv: list[str] | None = None) -> int:
    one, other = sys.argv[1:] if argv is None else argv
    found = first_difference(one, other)
    if found is not None:
        print(found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
