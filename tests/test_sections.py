"""A report's section as data, rendered by each format its own way: report.md's Markdown, report.html's
elements (user text escaped, no Markdown), the terminal's tables."""

from __future__ import annotations

import base64
import io

from rich.console import Console

from mjsweep.results.sections import Code, Figure, Items, Section, Table, Text, to_markdown
from mjsweep.ui.report_sections import show, to_html

SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"/>'


def sections(tmp_path) -> list[Section]:
    figure = tmp_path / "curves.svg"
    figure.write_bytes(SVG)
    return [Section("population <walker|b>", (
        Text("members of a <population>"), Items(("one", "two")),
        Table(("member", "values"), (("0", "lr=1|2"),), "members"),
        Code("pbt:\n  population: 3\n", "replay spec"), Figure(figure, "the curves")), level=3)]


def test_markdown_has_headings_tables_fences_and_images(tmp_path):
    assert to_markdown(sections(tmp_path)).splitlines() == [
        "### Population <walker|b>", "", "members of a <population>", "", "- one", "- two", "",
        "| member | values |", "|---|---|", "| 0 | lr=1\\|2 |", "",
        "replay spec:", "", "```yaml", "pbt:", "  population: 3", "```", "", "![the curves](curves.svg)"]


def test_html_escapes_user_text_and_writes_no_markdown(tmp_path):
    page = "\n".join(to_html(sections(tmp_path)))
    assert "<h3>population &lt;walker|b&gt;</h3>" in page and "<p>members of a &lt;population&gt;</p>" in page
    assert "<ul><li>one</li><li>two</li></ul>" in page
    assert ('<table class="members"><caption>members</caption><thead><tr><th>member</th><th>values</th></tr>'
            "</thead><tbody><tr><td>0</td><td>lr=1|2</td></tr></tbody></table>") in page
    svg = base64.b64encode(SVG).decode("ascii")
    assert "<pre>pbt:\n  population: 3</pre>" in page and f'src="data:image/svg+xml;base64,{svg}"' in page
    assert not any(mark in page for mark in ("```", "![", "|---", "### "))


def test_the_terminal_shows_tables_and_code_as_text(tmp_path):
    out = io.StringIO()
    show(Console(file=out, width=100), sections(tmp_path))
    text = out.getvalue()
    assert "population <walker|b>: members" in " ".join(text.split()) and "lr=1|2" in text  # the title wraps
    assert "replay spec:\npbt:\n  population: 3" in text and "- two" in text
    assert f"figure: {tmp_path / 'curves.svg'}" in text and "```" not in text
