"""A report's section as data: a title and its blocks (sentences, lists, tables, code, figures), which each
format renders its own way (report.md here, report.html and the terminal in ui/report_sections.py), so that no
format pastes another's syntax."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Items:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Code:
    """Text to paste as it is (a spec's YAML), with the line that says what it is."""

    text: str
    caption: str


@dataclass(frozen=True)
class Table:
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    name: str
    """What it holds, one word: report.html's class of the table, the terminal table's title."""


@dataclass(frozen=True)
class Figure:
    """A figure drawn to an SVG file beside report.md."""

    path: Path
    caption: str


Block = Text | Items | Code | Table | Figure


@dataclass(frozen=True)
class Section:
    title: str
    """As report.html heads it ("confirmed on fresh seeds"); report.md's heading starts with a capital."""
    blocks: tuple[Block, ...]
    level: int = 2
    """2 for a section, 3 for a part of the one before it (a population of a PBT sweep)."""


def to_markdown(sections: list[Section]) -> str:
    """The sections as report.md's Markdown."""
    out = []
    for section in sections:
        out += ["#" * section.level + " " + section.title[:1].upper() + section.title[1:], ""]
        for block in section.blocks:
            out += _markdown_block(block) + [""]
    return "\n".join(out)


def _markdown_block(block: Block) -> list[str]:
    if isinstance(block, Text):
        return [block.text]
    if isinstance(block, Items):
        return [f"- {item}" for item in block.items]
    if isinstance(block, Code):
        return [block.caption + ":", "", "```yaml", block.text.rstrip(), "```"]
    if isinstance(block, Figure):
        return [f"![{block.caption}]({block.path.name})"]
    lines = ["| " + " | ".join(block.columns) + " |", "|---" * len(block.columns) + "|"]
    return lines + ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in block.rows]
