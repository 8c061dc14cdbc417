"""Each kind of sweep's report reads as that kind: a real PBT sweep and a real search with confirmation of the
tiny walker, reported in every format and report.html opened in Chromium (no Markdown shown as text)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from helpers.commands import run_sweep, write_spec
from helpers.models import TINY_XML
from helpers.rendering import chromium, needs_browser
from mjsweep.search.confirm import replay as confirmations
from mjsweep.search.journal import replay as trials
from mjsweep.search.pbtreport import CURVES_CAPTION
from mjsweep.sweepdir.files import SweepDir

BASE = {"env": "HalfCheetah-v5", "max_episode_steps": 50, "variants": [{"name": "walker", "xml": str(TINY_XML)}],
        "total_timesteps": 256, "ppo": {"n_steps": 64, "batch_size": 32, "n_epochs": 1}, "eval": {"episodes": 1}}
MARKDOWN = re.compile(r"^#{1,6} |```|!\[|\|---|\*\*", re.MULTILINE)
"""Markdown's headings, fences, images, table rules and bold: none of them belongs in report.html's text."""


def swept(folder: Path, data: dict) -> Path:
    spec = write_spec(folder, {**BASE, **data, "runs_dir": str(folder / "runs")})
    done = run_sweep("run", str(spec), "--workers", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / "runs" / data["name"]


@pytest.fixture(scope="module")
def population(tmp_path_factory) -> Path:
    """2 members, 2 generations of 128 steps: 4 segments, the worse member copying the better once."""
    return swept(tmp_path_factory.mktemp("pbt"), {
        "name": "pop", "pbt": {"population": 2, "interval": 128, "seed": 3,
                               "space": {"ppo.learning_rate": {"log_uniform": [1.0e-4, 1.0e-2]}}}})


@pytest.fixture(scope="module")
def search(tmp_path_factory) -> Path:
    """3 trials of one seed each, the best 2 confirmed on 2 fresh seeds."""
    return swept(tmp_path_factory.mktemp("search"), {
        "name": "tuned", "search": {"method": "random", "trials": 3, "seeds_per_trial": 1, "seed": 3,
                                    "space": {"ppo.learning_rate": {"log_uniform": [1.0e-5, 1.0e-3]}},
                                    "confirm": {"top": 2, "seeds": 2}}})


def segments(sweep: Path) -> list[dict]:
    return [json.loads(line) for line in (sweep / "pbt.jsonl").read_text().splitlines()]


def final(sweep: Path, run: str) -> float:
    return json.loads((sweep / run / "result.json").read_text())["eval_mean_return"]


@pytest.mark.slow
def test_a_populations_report_lists_members_and_no_segment_as_a_group_in_every_format(population):
    lines = segments(population)
    assert len(lines) == 4 and any(line["copied_from"] is not None for line in lines)
    data = json.loads(run_sweep("report", str(population), "--format", "json").stdout)
    assert data["groups"] == []  # 4 segments, no group of one seed with an interval of [x, x]
    [pop] = data["populations"]
    assert [(s["run"], s["final_evaluation"]) for s in pop["segments"]] == [
        (line["run"], final(population, line["run"])) for line in lines]
    last = [line for line in lines if line["generation"] == 1]
    best = max(last, key=lambda line: final(population, line["run"]))
    assert pop["best"]["member"] == best["member"] and pop["best"]["score"] == final(population, best["run"])
    assert pop["best"]["schedule"][-1] == best["hyperparams"]

    with (population / "report.csv").open() as f:
        assert f.readline().startswith("variant,grid,") and f.read() == ""  # the header, no group
    refused = run_sweep("report", str(population), "--compare")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "its runs are a population's segments, not groups of seeds to compare" in refused.stderr
    md = (population / "report.md").read_text()
    assert "| variant |" not in md and "[x" not in md and "not a seed of a group" in md
    assert "## Population-based training" in md and "| member | final evaluation |" in md
    assert "```yaml" in md and f"![{CURVES_CAPTION}](pbt_curves.svg)" in md
    figure = ET.parse(population / "pbt_curves.svg").getroot()  # a line (or a lone dot) per last-gen member
    drawn = sorted(e.get("data-group") for e in figure.iter() if e.get("class") == "curve")
    assert drawn == sorted(f"member {line['member']}" for line in last)
    (population / "pbt_curves.png").write_bytes(b"an earlier version's figure")
    assert run_sweep("report", str(population)).returncode == 0 and not (population / "pbt_curves.png").exists()
    table = run_sweep("report", str(population), env={"COLUMNS": "200"}).stdout
    assert "final eval return over seeds" not in table and "95% CI" not in table
    assert "population-based training" in table and "copied member" in table
    for line in last:
        assert line["run"] in table  # each member's last segment, in the members' table


@pytest.mark.slow
def test_a_searchs_report_ranks_its_trials_with_their_objective_and_confirmation(search):
    records = sorted(trials(search / "trials.jsonl"), key=lambda r: -(r.value or 0.0))
    data = json.loads(run_sweep("report", str(search), "--format", "json").stdout)
    assert [(t["number"], t["value"], t["ci_low"]) for t in data["trials"]] == [
        (r.number, r.value, None) for r in records]  # one seed each: no interval
    [study] = data["confirmed"]
    assert len(study["trials"]) == 2
    md = (search / "report.md").read_text()
    assert "## Trials by eval_iqm, best first" in md and "## Confirmed on fresh seeds" in md
    assert f"| 1 | walker | {records[0].number} | complete | {records[0].value:.2f} | - | 1/1 |" in md


def page_text(driver) -> str:
    from selenium.webdriver.common.by import By

    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
    # The page's text outside code to paste (whose YAML comments start with "# ")
    prose = driver.execute_script("const body = document.body.cloneNode(true);"
                                  "body.querySelectorAll('pre').forEach(p => p.remove()); return body.innerText;")
    assert not MARKDOWN.search(prose), prose
    text = driver.find_element(By.TAG_NAME, "body").text
    assert not driver.find_elements(By.CSS_SELECTOR, "pre.pbt")
    return text


def cells(driver, name: str) -> tuple[list[str], list[list[str]]]:
    from selenium.webdriver.common.by import By

    table = driver.find_element(By.CSS_SELECTOR, f"table.{name}")
    assert table.is_displayed()
    return ([th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")],
            [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
             for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr")])


@pytest.mark.slow
@needs_browser
def test_report_html_of_a_population_and_of_a_search_shows_tables_and_no_markdown_in_chromium(population, search,
                                                                                              tmp_path):
    from selenium.webdriver.common.by import By

    for sweep in (population, search):
        done = run_sweep("report", str(sweep), "--format", "html")
        assert done.returncode == 0, done.stderr
    lines = segments(population)
    with chromium(tmp_path / "profile") as driver:
        driver.get((population / "report.html").as_uri())
        text = page_text(driver)
        assert "95% CI" not in text and "which group beats which" not in text
        assert not driver.find_elements(By.CSS_SELECTOR, "table:not([class])")  # no groups' table
        head, members = cells(driver, "members")
        assert head[:3] == ["member", "final evaluation", "generations"]
        last = {line["member"]: line for line in lines if line["generation"] == 1}
        assert [row[0] for row in members] == ["0", "1"]
        for row in members:
            line = last[int(row[0])]
            assert row[1] == f"{final(population, line['run']):.4g}" and row[2] == "2" and row[5] == line["run"]
        head, generations = cells(driver, "generations")
        assert head == ["generation", "member 0", "member 1"] and [row[0] for row in generations] == ["0", "1"]
        copy = next(line for line in lines if line["copied_from"] is not None)
        assert generations[1][1 + copy["member"]].endswith(f"<- {copy['copied_from']}")
        _, copies = cells(driver, "copies")
        assert [row[:2] for row in copies] == [[str(copy["generation"]), str(copy["member"])]]
        _, schedule = cells(driver, "schedule")
        assert [row[0] for row in schedule] == ["0", "1"]
        figures = driver.execute_script(
            "return [...document.images].map(i => [i.alt, i.complete && i.naturalWidth > 0]);")
        assert figures == [[CURVES_CAPTION, True]]  # the one figure
        replay = driver.find_element(By.CSS_SELECTOR, "figure.code pre").text
        assert replay.splitlines()[1] == "pbt:" and "```" not in replay

        driver.get((search / "report.html").as_uri())
        text = page_text(driver)
        records = sorted(trials(search / "trials.jsonl"), key=lambda r: -(r.value or 0.0))
        head, ranked = cells(driver, "trials")
        assert head == ["rank", "study", "trial", "state", "eval_iqm", "95% CI", "seeds", "parameters"]
        assert [row[:6] for row in ranked] == [[str(i), "walker", str(r.number), "complete", f"{r.value:.2f}", "-"]
                                              for i, r in enumerate(records, 1)]
        head, confirmed = cells(driver, "confirmed")
        assert head[:4] == ["study", "trial", "tuned", "confirmed"]
        done = {c.number: c for c in confirmations(SweepDir(search))}
        assert sorted(int(row[1]) for row in confirmed) == sorted(done) == sorted(r.number for r in records[:2])
        for row in confirmed:
            assert row[3] == f"{done[int(row[1])].value:.2f}"
        assert f"Best: trial {records[0].number} of walker" in text
