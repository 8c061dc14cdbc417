"""The activation functions a spec may name for policy_kwargs.activation_fn.

SB3 takes a torch.nn class there; YAML names it, in these words or as RL Zoo writes it (nn.ReLU, ReLU).
Names only: the spec is checked without importing torch, and the worker looks the class up in torch.nn.
"""

from __future__ import annotations

ACTIVATION_CLASSES = {"tanh": "Tanh", "relu": "ReLU", "elu": "ELU", "leaky_relu": "LeakyReLU",
                      "gelu": "GELU", "silu": "SiLU"}
"""Each activation's name -> its class in torch.nn."""
ACTIVATIONS = tuple(ACTIVATION_CLASSES)
_BY_CLASS = {cls.lower(): name for name, cls in ACTIVATION_CLASSES.items()}


def activation_name(written: str) -> str | None:
    """The activation a spec names ('relu', 'nn.ReLU', 'torch.nn.ReLU' -> 'relu'); None if unknown."""
    if written in ACTIVATIONS:
        return written
    return _BY_CLASS.get(written.rsplit(".", 1)[-1].lower())
