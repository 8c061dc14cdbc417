"""How values read in names: run ids, groups and the names of generated variants; and counts in sentences.

Its own module so that plan/runs.py (run ids) and robots/edits.py (variant names) share it without importing
each other.
"""

from __future__ import annotations

import re
from typing import Any


def format_value(value: Any) -> str:
    """A grid or edit value as it reads in run ids and variant names: 0.0003, 64x64, a-1+b-2."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "x".join(format_value(v) for v in value)
    if isinstance(value, dict):
        return "+".join(f"{k}-{format_value(v)}" for k, v in value.items())
    return str(value)


def sanitize(text: str) -> str:
    """Every character a file name should not hold becomes '-'."""
    return re.sub(r"[^A-Za-z0-9._=+-]", "-", text)


def counted(count: int, noun: str) -> str:
    """A count and its noun as a sentence says it: '1 run', '2 runs'."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
