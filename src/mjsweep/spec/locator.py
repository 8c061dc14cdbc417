"""Where a key of the spec was written: its file and line, for errors that name file, line and key.

Later stages (variants, envs) report their own errors through the same `SpecLocator`, so a missing XML or an
env that rejects a keyword also points at its line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from ..errors import SpecError


@dataclass(frozen=True)
class SpecLocator:
    """Maps a key path such as ('variants', 1, 'xml') to the file and line it was written at."""

    path: Path
    root: yaml.Node | None

    def line_of(self, loc: tuple[str | int, ...]) -> int | None:
        node, line = self.root, None
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                match = next(((k, v) for k, v in node.value if k.value == part), None)
                if match is None:
                    break
                line, node = match[0].start_mark.line + 1, match[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
                if part >= len(node.value):
                    break
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                break
        if line is None and self.root is not None:
            line = self.root.start_mark.line + 1
        return line

    def error(self, loc: tuple[str | int, ...], message: str) -> SpecError:
        line = self.line_of(loc)
        where = f"{self.path}:{line}" if line else str(self.path)
        key = format_key(loc)
        return SpecError(f"{where}: {key}: {message}" if key else f"{where}: {message}")


def format_key(loc: tuple[str | int, ...]) -> str:
    """('variants', 1, 'xml') -> 'variants[1].xml'."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
