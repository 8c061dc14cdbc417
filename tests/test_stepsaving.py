"""The step-saving benchmark (the lab's benchmarks/stepsaving.py): its tiny budget run for real, and its figures
read back from the sweep folders alone."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchmarks import savingspecs as specs
from benchmarks.savingfigures import Method, Trained, read_figures
from benchmarks.savingtable import goals, render
from benchmarks.stepsaving import main


def _table_rows(markdown: str, first_cell: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("|").split("|")]
            for line in markdown.splitlines() if line.startswith(f"| {first_cell} |")]


def _cpu(path: Path) -> float:
    return float(json.loads((path / "result.json").read_text())["cpu_s"])


def test_a_generation_is_charged_its_members_side_by_side():
    first = tuple(Trained(f"m{i}", 2.0, 0, 100, ((100, float(i)),)) for i in range(2))
    second = (Trained("a", 3.0, 100, 200, ((150, 5.0), (200, 9.0))), Trained("b", 1.0, 100, 200, ((200, 4.0),)))
    pbt = Method("pbt", (first, second))
    assert pbt.cpu_to_reach(5.0) == pytest.approx(4.0 + 0.5 * 4.0)  # halfway through the second generation
    assert pbt.cpu_to_reach(1.0) == pytest.approx(4.0)  # member 1 at its first segment's end: all of generation 0
    assert pbt.cpu_to_reach(10.0) is None
    assert pbt.best_final == 9.0 and pbt.env_steps == 400


def test_bad_arguments_are_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--out", str(tmp_path / "out"), "--budget", "huge", "--markdown", str(tmp_path / "t.md")])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "huge" in err[0]
    a_file = tmp_path / "file"
    a_file.write_text("")
    assert main(["--out", str(a_file), "--budget", "tiny", "--markdown", str(tmp_path / "t.md")]) == 2
    assert capsys.readouterr().err.strip() == f"error: --out {a_file}: not a folder"
    assert not (tmp_path / "t.md").exists()


@pytest.mark.slow
def test_the_tiny_budget_renders_every_row_from_its_folders(tmp_path, capsys):
    out, markdown = tmp_path / "bench", tmp_path / "steps.md"
    assert main(["--out", str(out), "--budget", "tiny", "--markdown", str(markdown)]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[1].startswith("estimate: at most ")  # after the probe, before the sweeps
    table = markdown.read_text()
    assert table in printed

    methods = {row[0]: row for row in _table_rows(table, "PBT") + _table_rows(table, "random search")
               + _table_rows(table, "grid")}
    assert set(methods) == {"PBT", "random search", "grid"}
    budget = specs.TINY
    for name, runs in (("PBT", budget.members * budget.steps // budget.interval), ("random search", budget.members),
                       ("grid", budget.members)):
        assert methods[name][1] == str(runs)
        assert methods[name][2] == str(budget.members * budget.steps)  # the same env steps each way

    # the random search's CPU seconds: its result.json files' cpu_s, summed by hand
    random_runs = [p for p in (out / specs.RANDOM).iterdir() if (p / "result.json").is_file()]
    assert len(random_runs) == budget.members
    assert float(methods["random search"][3]) == pytest.approx(math.fsum(map(_cpu, random_runs)), abs=0.051)
    # PBT's: each segment's cpu_s less what its copied checkpoint carried (the parent's, bar its final evaluation)
    lineage = [json.loads(line) for line in (out / specs.PBT / "pbt.jsonl").read_text().splitlines()]
    own = []
    for segment in lineage:
        total = _cpu(out / specs.PBT / segment["run"])
        if segment["parent"]:
            parent = json.loads((out / specs.PBT / segment["parent"] / "result.json").read_text())
            total -= parent["cpu_s"] - parent["eval_s"]
        own.append(total)
    assert float(methods["PBT"][3]) == pytest.approx(math.fsum(own), abs=0.051)

    verdicts = {row[0]: row[1] for row in _table_rows(table, "PBT reaches the random search's best return with at "
                                                             "most half its CPU seconds")}
    figures = read_figures(out)
    assert [goal[1] in ("met", "not met") for goal in goals(figures)] == [True] * 3
    assert len(verdicts) == 1 and verdicts.popitem()[1] == goals(figures)[0][1]
    for goal, verdict, why in goals(figures):
        assert f"| {goal} | {verdict} | {why} |" in table
    # PBT is held against the random search's whole budget: a search knows its best only once it is spent
    pbt_why = goals(figures)[0][2]
    assert pbt_why.startswith("no PBT evaluation reached") or \
        f"the random search's budget {figures.method(specs.RANDOM).cpu_s:.1f}:" in pbt_why
    design_rows = [line for line in table.splitlines() if line.startswith("| ") and line[2:].split(" ")[0].isdigit()]
    assert len(figures.designs) + figures.cold_trials == budget.designs
    assert figures.designs and len(design_rows) == len(figures.designs)

    # the figures come from the folders alone: a result.json changed after the fact changes the table
    changed = random_runs[0] / "result.json"
    result = json.loads(changed.read_text())
    result["cpu_s"] += 1000.0
    changed.write_text(json.dumps(result))
    again = _table_rows(render(read_figures(out), budget), "random search")[0]
    # Against the files' own sum, not the first table's rounded figure: the two roundings may differ by 0.1.
    assert float(again[3]) == pytest.approx(math.fsum(map(_cpu, random_runs)), abs=0.051)
    assert float(again[3]) - float(methods["random search"][3]) == pytest.approx(1000.0, abs=0.11)
