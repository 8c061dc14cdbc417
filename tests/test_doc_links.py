"""The user docs hold together: every relative link in README.md, CONTRIBUTING.md, BENCHMARKS.md, its history file
and docs/ names a file that exists and, with #anchor, a heading in it; README's test command is the one CI runs;
README's spec is a valid spec."""

from __future__ import annotations

import re
from pathlib import Path

from helpers.models import REPO
from mjsweep.spec.loading import load

PAGES = [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "BENCHMARKS.md", REPO / "BENCHMARKS-history.md",
         *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but hyphens dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_anchor(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def _broken(page: Path) -> list[str]:
    out = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        file, _, anchor = target.partition("#")
        linked = (page.parent / file).resolve() if file else page
        if not linked.exists():
            out.append(f"{page.name}: {target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            out.append(f"{page.name}: {target}: no such heading")
    return out


def test_every_relative_link_names_a_file_and_heading_that_exist():
    assert [p for p in PAGES if not p.is_file()] == []
    assert [b for page in PAGES for b in _broken(page)] == []


def test_a_link_to_a_missing_heading_is_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# How a run's process begins (`--start`)\n[ok](#how-a-runs-process-begins---start)\n"
                    "[gone](#options) [file](missing.md)\n")
    assert _broken(page) == ["page.md: #options: no such heading", "page.md: missing.md: no such file"]


def _code_blocks(page: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", page.read_text(encoding="utf-8"), re.S)


def test_the_readmes_test_command_is_the_one_ci_runs():
    setup, tests = _code_blocks(REPO / "README.md", "bash")[:2]
    assert tests.strip() in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert setup.strip().endswith("sweep run configs/smoke.yaml")


def test_the_readmes_spec_is_a_valid_spec_of_the_repositorys_models():
    (text,) = _code_blocks(REPO / "README.md", "yaml")
    spec = load(REPO / "configs" / "readme.yaml", text=text, base=REPO / "configs")
    assert [v.name for v in spec.variants] == ["base", "long-legs", "short-legs"]
    assert all(Path(v.xml).is_file() for v in spec.variants)
