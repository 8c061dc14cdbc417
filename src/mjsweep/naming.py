"""How values read in names: run ids, groups and the names of generated variants; counts in sentences; and
durations as a user writes them (--timeout, --report-every, MJSWEEP_REPORT_EVERY).

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


def parse_duration(text: str) -> float:
    """'90m', '2h', '1h30m', '45s' or plain seconds -> seconds."""
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)([dhms])", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError("not a duration like 90m, 2h, 1h30m or 45s")
    scale = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    return sum(float(n) * scale[u] for n, u in parts)


def parse_interval(text: str) -> float | None:
    """--report-every: a duration, or None for 0 and off (never)."""
    return None if text in ("0", "off") else parse_duration(text) or None
