"""A report's section as data, rendered by each format its own way: report.md's Markdown, report.html's
elements (user text escaped, no Markdown), the terminal's tables."""

from __future__ import annotations

import io

from rich.console import Console

from mjsweep.results.sections import Code, Figure, Items, Section, Table, Text, to_markdown
from mjsweep.ui.report_sections import show, to_html

PNG = bytes.fromhex("89504e470d0a1a0a")


def sections(tmp_path) -> list[Section]:
    figure = tmp_path / "curves.png"
    figure.write_bytes(PNG)
    return [Section("population <walker|b>", (
        Text("members of a <population>"), Items(("one", "two")),
        Table(("member", "values"), (("0", "lr=1|2"),), "members"),
        Code("pbt:\n  population: 3\n", "replay spec"), Figure(figure, "the curves")), level=3)]


def test_markdown_has_headings_tables_fences_and_images(tmp_path):
    assert to_markdown(sections(tmp_path)).splitlines() == [
        "### Population <walker|b>", "", "members of a <population>", "", "- one", "- two", "",
        "| member | values |", "|---|---|", "| 0 | lr=1\\|2 |", "",
        "replay spec:", "", "```yaml", "pbt:", "  population: 3", "```", "", "![the curves](curves.png)"]


def test_html_escapes_user_text_and_writes_no_markdown(tmp_path):
    page = "\n".join(to_html(sections(tmp_path)))
    assert "<h3>population &lt;walker|b&gt;</h3>" in page and "<p>members of a &lt;population&gt;</p>" in page
    assert "<ul><li>one</li><li>two</li></ul>" in page
    assert ('<table class="members"><caption>members</caption><thead><tr><th>member</th><th>values</th></tr>'
            "</thead><tbody><tr><td>0</td><td>lr=1|2</td></tr></tbody></table>") in page
    assert "<pre>pbt:\n  population: 3</pre>" in page and 'src="data:image/png;base64,iVBORw0KGgo="' in page
    assert not any(mark in page for mark in ("```", "![", "|---", "### "))


def test_the_terminal_shows_tables_and_code_as_text(tmp_path):
    out = io.StringIO()
    show(Console(file=out, width=100), sections(tmp_path))
    text = out.getvalue()
    assert "population <walker|b>: members" in " ".join(text.split()) and "lr=1|2" in text  # the title wraps
    assert "replay spec:\npbt:\n  population: 3" in text and "- two" in text
    assert f"figure: {tmp_path / 'curves.png'}" in text and "```" not in text
