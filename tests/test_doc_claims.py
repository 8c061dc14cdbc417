"""The docs name what the code has: `sweep run`'s options are the rows of docs/cli.md's table, every command's
options are described somewhere in the docs, the spec's keys are the ones docs/spec.md lists, every
example config the docs name exists and loads, and every `sweep` line of the docs' shell blocks parses."""

from __future__ import annotations

import re
import shlex

import typer.main
import yaml

from helpers.models import REPO
from mjsweep.spec.loading import load
from mjsweep.spec.sweepspec import SweepSpec
from mjsweep.ui.cli import app
from mjsweep.ui.usage import ClickException  # click's, whichever click typer brings

GROUP = typer.main.get_command(app)  # typer's own click: typed loosely here
PAGES = [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "BENCHMARKS.md", *sorted((REPO / "docs").glob("*.md"))]
OPTION = re.compile(r"--[a-z][a-z-]*")


def options(command: str) -> set[str]:
    """The long options `sweep COMMAND --help` lists, without --help."""
    params = GROUP.commands[command].params  # type: ignore[attr-defined]
    return {opt for p in params for opt in p.opts if opt.startswith("--")} - {"--help"}


def table_options(page: str, heading: str) -> set[str]:
    """The options named in the first cell of each row of the table under `heading`."""
    section = page.split(f"\n{heading}\n", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {opt for row in rows for opt in OPTION.findall(row.split(" | ")[0])}


def test_sweep_runs_options_are_the_rows_of_the_cli_pages_table():
    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert table_options(page, "## `sweep run`") == options("run")


def test_a_missing_or_stale_row_is_seen():
    page = "## `sweep run`\n\n| option | meaning |\n|---|---|\n| `--workers N`, `-w` | runs |\n| `--gone` | x |\n"
    assert table_options("\n" + page, "## `sweep run`") == {"--workers", "--gone"}


def test_every_commands_options_are_described_in_the_docs():
    text = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
    written = set(OPTION.findall(text))
    missing = []
    for name, command in GROUP.commands.items():  # type: ignore[attr-defined]
        for param in command.params:
            names = {o for o in [*param.opts, *param.secondary_opts] if o.startswith("--")} - {"--help"}
            if names and not names & written:  # a flag pair is described by either name: --save/--no-save
                missing.append(f"sweep {name} {'/'.join(sorted(names))}")
    assert missing == []


def _spec_block() -> str:
    page = (REPO / "docs" / "spec.md").read_text(encoding="utf-8")
    return re.findall(r"```yaml\n(.*?)```", page, re.S)[0]


def test_the_spec_pages_keys_are_the_specs_keys():
    block = _spec_block()
    listed = set(yaml.safe_load(block))
    # The sections that only repeat another's form are named in a comment: "likewise td3:, a2c:, ...".
    named_in_comments = {key for line in block.splitlines() if "#" in line
                         for key in re.findall(r"\b([a-z_0-9]+):", line.split("#", 1)[1])}
    fields = set(SweepSpec.model_fields)
    assert listed - fields == set()
    assert fields - listed - named_in_comments == set()


def test_every_config_the_docs_name_exists_and_loads():
    named = {m for page in PAGES for m in re.findall(r"configs/[\w-]+\.yaml", page.read_text(encoding="utf-8"))}
    assert "configs/smoke.yaml" in named
    for config in sorted(named):
        spec = load(REPO / config)  # raises, naming file, line and key, when a config no longer loads
        assert spec.name, config


def command_lines(page: str) -> list[str]:
    """Each `sweep COMMAND ...` line of the page's shell blocks, without its prompt, environment, comment and
    what a shell does with its output."""
    lines = []
    for language, body in re.findall(r"```(\w*)\n(.*?)```", page, re.S):
        if language not in ("", "bash", "console"):
            continue
        for line in body.splitlines():
            line = re.sub(r"^(\$ )?([A-Z_]+=\S+ )*", "", line.strip())
            words = line.split()
            if len(words) > 1 and words[0] == "sweep" and words[1] in GROUP.commands:  # type: ignore[attr-defined]
                lines.append(re.split(r" #| && | > | \| ", line)[0].strip())
    return lines


def parse_error(line: str) -> str | None:
    """Why the real command line parser refuses the line; None when it takes it."""
    name, *args = shlex.split(line)[1:]
    try:
        GROUP.commands[name].make_context(name, args)  # type: ignore[attr-defined]
    except ClickException as exc:
        return exc.format_message()
    return None


def test_every_command_line_the_docs_show_parses():
    refused = {f"{page.name}: {line}: {parse_error(line)}" for page in PAGES
               for line in command_lines(page.read_text(encoding="utf-8")) if parse_error(line)}
    assert sorted(refused) == []


def test_a_command_line_the_parser_refuses_is_seen():
    page = "```\n$ MUJOCO_GL=egl sweep plot runs/x   # no -o\nsweep tiny: 4 succeeded\n```\n"
    assert command_lines(page) == ["sweep plot runs/x"]
    assert "--output" in (parse_error("sweep plot runs/x") or "")
    assert parse_error("sweep plot runs/x -o x.png") is None
