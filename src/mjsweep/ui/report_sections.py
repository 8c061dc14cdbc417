"""A report's sections (results/sections.py) as report.html's elements and as the terminal's tables."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table as RichTable

from ..results.sections import Block, Code, Figure, Items, Section, Table, Text


def to_html(sections: list[Section]) -> list[str]:
    """Each section as a heading and its blocks: paragraphs, lists, tables, code in <pre>, figures inline."""
    out = []
    for section in sections:
        out.append(f"<h{section.level}>{html.escape(section.title)}</h{section.level}>")
        out += [_html_block(block) for block in section.blocks]
    return out


def _html_block(block: Block) -> str:
    if isinstance(block, Text):
        return f"<p>{html.escape(block.text)}</p>"
    if isinstance(block, Items):
        return "<ul>" + "".join(f"<li>{html.escape(item)}</li>" for item in block.items) + "</ul>"
    if isinstance(block, Code):
        return (f'<figure class="code"><figcaption>{html.escape(block.caption)}</figcaption>'
                f"<pre>{html.escape(block.text.rstrip())}</pre></figure>")
    if isinstance(block, Figure):
        data = base64.b64encode(block.path.read_bytes()).decode("ascii")
        caption = html.escape(block.caption)
        return (f'<figure><img alt="{caption}" src="data:image/svg+xml;base64,{data}">'
                f"<figcaption>{caption}</figcaption></figure>")
    head = "".join(f"<th>{html.escape(c)}</th>" for c in block.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in block.rows)
    name = html.escape(block.name)
    return (f'<table class="{name}"><caption>{name}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
            "</table>")


def show(out: Console, sections: list[Section]) -> None:
    """Each section on the terminal: its title, sentences, rich tables, code as it is, a figure's path."""
    for section in sections:
        out.print(section.title, markup=False, highlight=False, style="bold")
        show_blocks(out, section.blocks, f"{section.title}: ")


def show_blocks(out: Console, blocks: Sequence[Block], titled: str = "") -> None:
    """Blocks on the terminal (a section's, or a dry run's): sentences, rich tables titled `titled` and their
    name, code as it is, a figure's path."""
    for block in blocks:
        if isinstance(block, Table):
            table = RichTable(title=f"{titled}{block.name}")
            for column in block.columns:
                table.add_column(column, overflow="fold")
            for row in block.rows:
                table.add_row(*row)
            out.print(table)
        elif isinstance(block, Code):
            out.print(f"{block.caption}:\n{block.text.rstrip()}", markup=False, highlight=False)
        else:
            for line in _lines(block):
                out.print(line, markup=False, highlight=False, soft_wrap=True)


def _lines(block: Text | Items | Figure) -> list[str]:
    if isinstance(block, Text):
        return [block.text]
    if isinstance(block, Items):
        return [f"- {item}" for item in block.items]
    return [f"figure: {block.path}"]
