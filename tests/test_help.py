"""Every command's --help reads as written: the real `sweep CMD --help` of each command, checked for help text
that vanished (typer reads help as Rich markup, where "[default: x]" is a tag: "Runs at once ."), sentences
broken mid-line, punctuation after a space and "1 runs"."""

from __future__ import annotations

import re

import pytest
import typer.main

from helpers.commands import run_sweep
from mjsweep.ui.cli import app

GROUP = typer.main.get_command(app)  # typer's own click: typed loosely here
COMMANDS = sorted(GROUP.commands)  # type: ignore[attr-defined]
BOX = "│╭╮╰╯─"
# A word and a count that disagree: "1 runs", "1 seeds".
PLURAL_AFTER_ONE = re.compile(r"(?<![\d.,])\b1 (?:run|seed|trial|group|variant|episode|step|evaluation|look)s\b")
# A space before punctuation, as a vanished phrase leaves it ("at once ."); "..." is an ellipsis.
SPACE_BEFORE_PUNCTUATION = re.compile(r"\s[.,;:](?![.\w])")


def rendered(command: list[str], columns: int) -> str:
    proc = run_sweep(*command, "--help", env={"COLUMNS": str(columns)})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def flat(text: str) -> str:
    """The help without its boxes, its whitespace collapsed: a wrapped sentence reads whole again."""
    return " ".join(text.translate({ord(c): " " for c in BOX}).split())


def declared(command) -> list[str]:
    """Each help text as the source wrote it, whitespace collapsed and markup escapes removed."""
    texts = [p.help for p in command.params if getattr(p, "help", None)]
    if command.help:
        texts += command.help.split("\n\n")
    return [" ".join(t.replace("\\[", "[").split()) for t in texts]


def broken_lines(text: str) -> list[str]:
    """Lines in a panel that end early though the next line's first word would have fit: a line break the
    source left in a help text. Typer puts "[default: x]" on a line of its own, by design."""
    lines = [line[1:-1] for line in text.splitlines() if line.startswith("│") and line.endswith("│")]
    broken = []
    for this, after in zip(lines, lines[1:], strict=False):
        cells = list(re.finditer(r"(?:^|\s{2,})(\S)", this.rstrip()))
        words = after.split()
        # The next line goes on with this line's last cell when its text starts in that cell's column.
        if not cells or not words or words[0].startswith("[") or \
                len(after) - len(after.lstrip()) != cells[-1].start(1):
            continue
        free = len(this) - len(this.rstrip())
        if free - 2 > len(words[0]):
            broken.append(f"{this.strip()} / {after.strip()}")
    return broken


@pytest.mark.parametrize("command", [[], *[[c] for c in COMMANDS]], ids=lambda c: " ".join(c) or "sweep")
def test_every_help_text_shows_whole_and_reads_correctly(command):
    wide = flat(rendered(command, 200))
    narrow = rendered(command, 100)
    node = GROUP.commands[command[0]] if command else GROUP  # type: ignore[attr-defined]
    for text in declared(node):
        assert text in wide, f"{text!r} is not shown whole in: {wide}"
    if not command:  # the command list shows each command's first paragraph
        for sub in GROUP.commands.values():  # type: ignore[attr-defined]
            assert " ".join((sub.help or "").split("\n\n")[0].split()) in wide
    assert not SPACE_BEFORE_PUNCTUATION.findall(wide), wide
    assert not PLURAL_AFTER_ONE.findall(wide), wide
    assert broken_lines(narrow) == []


def test_the_checks_see_the_defects_they_look_for():
    assert SPACE_BEFORE_PUNCTUATION.findall("Runs at once .") and not SPACE_BEFORE_PUNCTUATION.findall("1, 2, ...")
    assert PLURAL_AFTER_ONE.findall("sweep tiny: 1 runs") and not PLURAL_AFTER_ONE.findall("11 runs, 0.1 steps")
    broken = ["│ validate  Check the spec; one row per variant; the                  │",
              "│           disk the runs will need.                                 │"]
    wrapped = ["│ validate  Check the spec; one row per variant; the disk │",
               "│           the runs will need.                           │"]
    assert broken_lines("\n".join(broken)) and not broken_lines("\n".join(wrapped))
