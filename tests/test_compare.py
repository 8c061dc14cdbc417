"""Which group is better and how sure: P(A > B) with its interval and a plain verdict, in `sweep report`."""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from typer.testing import CliRunner

from helpers.commands import run_sweep
from helpers.fake_sweep import make_run, result, run_spec
from mjsweep import svgplot
from mjsweep.results import effectsize, stats
from mjsweep.results.compare import compare, matrix, pick, profiles
from mjsweep.sweepdir.models import RunState
from mjsweep.ui.cli import app

RNG = np.random.default_rng(7)
FAR = {"good": list(RNG.normal(100, 5, 8)), "bad": list(RNG.normal(0, 5, 8))}


def test_groups_far_apart_are_separated_and_the_verdict_names_the_test_the_better_and_the_seeds():
    [c] = compare(FAR)
    assert c.separated and c.p == 1.0 and c.seeds_needed is None
    # A complete order of 8 vs 8: the t guard's p (7 degrees of freedom at |T| = 3.36), above 2/12870 splits.
    assert c.p_value == pytest.approx(0.0121, abs=1e-4) and c.adjusted == c.p_value and c.family == 1
    assert c.verdict() == "good > bad (bounded Brunner-Munzel p = 0.012; P = 1.00 [0.76, 1.00], 8 seeds each)"
    [reverse] = compare(FAR, [("bad", "good")])
    assert reverse.verdict() == "good > bad (bounded Brunner-Munzel p = 0.012; P = 1.00 [0.76, 1.00], 8 seeds each)"


def test_seeds_too_few_to_reach_the_level_say_so_and_name_the_count_that_could():
    # Every seed of good beats every seed of bad, yet 3 vs 3 seeds cannot give a p below the t guard's 0.19.
    [three] = compare({"good": [10.0, 11.0, 12.0], "bad": [0.0, 1.0, 2.0]})
    assert (three.high, three.p_value) == (1.0, pytest.approx(0.1885, abs=1e-4)) and 0.50 < three.low < 0.51
    assert not three.separated and not three.reachable and three.seeds_could == 6
    assert three.verdict() == ("good vs bad: not separated with 3 seeds each (bounded Brunner-Munzel p = 0.19; "
                               "P(good > bad) = 1.00 [0.50, 1.00]); 3 vs 3 seeds cannot separate anything at 95%: "
                               "the smallest p-value they can give is 0.19; 6 seeds each could")
    [six_each] = compare({"good": [float(10 + i) for i in range(6)], "bad": [float(i) for i in range(6)]})
    assert six_each.separated and six_each.p_value == pytest.approx(0.0345, abs=1e-4)
    # With six pairs Holm's strictest step is 0.05 / 6: only 9 seeds each could reach it.
    six = {g: [float(i + 10 * k) for i in range(3)] for k, g in enumerate("abcd")}
    assert {c.seeds_could for c in compare(six)} == {9}


def test_close_groups_are_not_separated_and_the_verdict_says_how_many_seeds_would_do():
    returns = {"a": [10.0, 12.0, 9.0, 14.0, 13.0, 8.5], "b": [9.5, 11.0, 8.0, 10.0, 12.5, 9.0]}
    [c] = compare(returns)
    assert not c.separated and c.p is not None and c.p > 0.5
    assert c.seeds_needed is not None and c.seeds_needed > 6
    assert c.verdict().startswith("a vs b: not separated with 6 seeds each (bounded Brunner-Munzel p = 0.47; "
                                  "P(a > b) = ")
    assert c.verdict().endswith(f"; at the spread seen, about {c.seeds_needed} seeds each would separate them")
    more = {k: v * 8 for k, v in returns.items()}  # the same spread seen over 48 seeds each
    assert compare(more)[0].separated


def test_identical_groups_are_never_said_to_differ():
    [c] = compare({"a": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "b": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    assert c.p == 0.5 and c.p_value == 1.0 and not c.separated and c.seeds_needed is None
    assert c.verdict().endswith("no difference seen: more seeds may never separate them")


def test_a_group_with_one_seed_is_not_compared():
    [c] = compare({"a": [1.0], "b": [2.0, 3.0]})
    assert c.p is None and c.verdict() == "a vs b: too few seeds to compare (1 and 2 seeds; at least 2 each)"


THREE = {"good": FAR["good"], "close": [99.0, 104.0, 96.0, 101.0], "bad": FAR["bad"], "lone": [50.0]}


def test_the_matrix_holds_every_ordered_pair_and_its_mirror_adds_up_to_one():
    m = matrix(THREE)
    assert m.groups == list(THREE) and m.seeds == [8, 4, 8, 1] and m.comparable == ["good", "close", "bad"]
    assert all(m.cells[i][i] is None for i in range(4))
    for i, a in enumerate(m.groups[:3]):
        for j, b in enumerate(m.groups[:3]):
            if i == j:
                continue
            cell, mirror = m.cells[i][j], m.cells[j][i]
            assert cell is not None and mirror is not None and (cell.a, cell.b) == (a, b)
            assert cell.p == pytest.approx(stats.probability_of_improvement(THREE[a], THREE[b]))
            assert cell.p == pytest.approx(1 - mirror.p) and cell.separated == mirror.separated
            assert (cell.low, cell.high) == pytest.approx((1 - mirror.high, 1 - mirror.low))
            if i < j:  # found as compare() finds it: the interval is effectsize's own
                assert (cell.low, cell.high) == effectsize.improvement_interval(THREE[a], THREE[b])
    lone = [m.cells[3][j] for j in range(3)] + [m.cells[i][3] for i in range(3)]
    assert all(c is not None and c.p is None and c.low is None for c in lone)
    assert [c.verdict() for c in m.comparisons()] == [c.verdict() for c in compare(THREE)]
    data = m.to_json()
    assert data["p"][0][2] == 1.0 and data["separated"][0][2] is True and data["p"][1][1] is None
    assert data["p"][0][3] is None and data["seeds"] == [8, 4, 8, 1]


def test_profiles_are_stats_performance_profile_on_shared_taus_for_groups_with_two_seeds():
    p = profiles(THREE)
    assert [g.group for g in p.groups] == ["good", "close", "bad"] and [g.seeds for g in p.groups] == [8, 4, 8]
    assert len(p.taus) == 101 and p.taus[0] < min(FAR["bad"]) and p.taus[-1] == max(FAR["good"])
    for g in p.groups:
        fraction, low, high = stats.performance_profile(THREE[g.group], p.taus)
        assert (g.fraction, g.low, g.high) == (fraction.tolist(), low.tolist(), high.tolist())
        assert g.fraction[0] == 1.0 and g.fraction[-1] == 0.0
    assert profiles({"a": [1.0, 1.0], "b": [1.0, 1.0]}).groups[0].fraction[0] == 1.0  # equal returns still step
    assert profiles({"a": [1.0], "b": [2.0]}).to_json() == {"taus": [], "confidence": 0.95, "groups": []}


def test_names_pick_a_group_by_its_report_name_or_its_variant():
    groups = ["a", "b ppo.gamma=0.9", "b ppo.gamma=0.99"]
    variants = {"a": "a", "b ppo.gamma=0.9": "b", "b ppo.gamma=0.99": "b"}
    assert pick([], groups, variants) is None
    assert pick(["a", "b ppo.gamma=0.9"], groups, variants) == [("a", "b ppo.gamma=0.9")]
    with pytest.raises(ValueError, match="'b': more than one group"):
        pick(["a", "b"], groups, variants)
    with pytest.raises(ValueError, match="'c': no group"):
        pick(["a", "c"], groups, variants)
    with pytest.raises(ValueError, match="no group or two"):
        pick(["a"], groups, variants)


def sweep_of_two_variants(folder):
    for seed, (good, bad) in enumerate(zip(FAR["good"], FAR["bad"], strict=True)):
        make_run(folder, run_spec("good", seed), RunState.SUCCEEDED, result(float(good)))
        make_run(folder, run_spec("bad", seed), RunState.SUCCEEDED, result(float(bad)))


def test_sweep_report_compare_prints_the_verdicts_and_json_and_report_md_carry_them(tmp_path):
    sweep_of_two_variants(tmp_path)
    table = run_sweep("report", str(tmp_path), "--compare")
    assert table.returncode == 0, table.stderr
    assert "good > bad (bounded Brunner-Munzel p = 0.012; P = 1.00 [0.76, 1.00], 8 seeds each)" in table.stdout
    assert "- good > bad (bounded Brunner-Munzel p = 0.012; P = 1.00" in (tmp_path / "report.md").read_text()
    data = json.loads(run_sweep("report", str(tmp_path), "--compare", "bad", "good", "--format", "json").stdout)
    [c] = data["comparisons"]
    assert (c["a"], c["b"], c["p"], c["low"], c["seeds_a"], c["separated"]) == ("bad", "good", 0.0, 0.0, 8, True)
    assert c["high"] == effectsize.improvement_interval(FAR["bad"], FAR["good"])[1] == pytest.approx(0.244, abs=1e-3)
    assert (c["p_value"], c["adjusted"], c["family"]) == (pytest.approx(0.0121, abs=1e-4), c["p_value"], 1)
    assert "comparisons" not in json.loads(run_sweep("report", str(tmp_path), "--format", "json").stdout)


def test_bad_group_names_are_one_line_and_exit_2_with_nothing_written(tmp_path):
    sweep_of_two_variants(tmp_path)
    unknown = run_sweep("report", str(tmp_path), "--compare", "good", "nope")
    assert unknown.returncode == 2 and "'nope': no group of that name; the groups: " in unknown.stderr
    stray = run_sweep("report", str(tmp_path), "good", "bad")
    assert stray.returncode == 2 and "group names go with --compare" in stray.stderr
    assert not (tmp_path / "report.csv").exists() and not (tmp_path / "report.md").exists()


LADDER = {"close": [99.0, 104.0, 96.0, 101.0], "good": FAR["good"], "lone": [50.0], "bad": FAR["bad"]}
"""In the report's order, best mean first."""


def sweep_of(folder, returns):
    for variant, values in returns.items():
        for seed, value in enumerate(values):
            make_run(folder, run_spec(variant, seed), RunState.SUCCEEDED, result(float(value)))


SVG = "{http://www.w3.org/2000/svg}"


def svg_root(path) -> ET.Element:
    """An SVG file of its own: it parses, in the SVG namespace, and is as large as a figure."""
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG}svg" and float(root.get("width")) > 400 and float(root.get("height")) > 300
    return root


def test_compare_draws_both_figures_and_report_md_says_the_seeds_they_rest_on(tmp_path):
    sweep_of(tmp_path, LADDER)
    out = CliRunner().invoke(app, ["report", str(tmp_path), "--compare"])
    assert out.exit_code == 0, out.output
    matrix_svg, profile_svg = tmp_path / "report_matrix.svg", tmp_path / "report_profile.svg"
    assert f"figures: {matrix_svg}, {profile_svg}" in out.stdout
    fills = [r.get("fill") for r in svg_root(matrix_svg).iter(f"{SVG}rect") if r.get("class") == "cell"]
    assert svgplot.diverging(1.0) == "#053061" and "#053061" in fills  # close beats bad in every pairing
    [first] = [p for p in svg_root(profile_svg).iter(f"{SVG}path") if p.get("data-group") == "close"
               and p.get("class") == "steps"]
    assert first.get("stroke") == svgplot.TAB10[0]  # the first group's profile, in tab10's first colour
    md = (tmp_path / "report.md").read_text()
    assert "](report_matrix.svg)" in md and "](report_profile.svg)" in md
    assert "Seeds per group: close 4 seeds, good 8 seeds, lone 1 seed, bad 8 seeds;" in md
    assert "report_matrix" not in (CliRunner().invoke(app, ["report", str(tmp_path)]).stdout +
                                   (tmp_path / "report.md").read_text())  # without --compare: no figure


def test_json_carries_the_matrix_and_the_profiles_as_stats_computes_them(tmp_path):
    sweep_of(tmp_path, LADDER)
    out = CliRunner().invoke(app, ["report", str(tmp_path), "--compare", "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    m = data["matrix"]
    assert m["groups"] == list(LADDER) and m["seeds"] == [4, 8, 1, 8]
    for i, a in enumerate(m["groups"]):
        for j, b in enumerate(m["groups"]):
            if i == j or "lone" in (a, b):
                assert m["p"][i][j] is None and m["low"][i][j] is None
            elif i < j:
                assert m["p"][i][j] == stats.probability_of_improvement(LADDER[a], LADDER[b])
                assert (m["low"][i][j], m["high"][i][j]) == effectsize.improvement_interval(LADDER[a], LADDER[b])
            else:
                assert (m["p"][i][j], m["low"][i][j], m["high"][i][j]) == \
                    pytest.approx((1 - m["p"][j][i], 1 - m["high"][j][i], 1 - m["low"][j][i]))
    assert m["separated"][1][3] is True and m["separated"][3][1] is True and m["separated"][0][1] is False
    profile = data["performance_profile"]
    assert [g["group"] for g in profile["groups"]] == ["close", "good", "bad"]
    for g in profile["groups"]:
        fraction, low, high = stats.performance_profile(LADDER[g["group"]], profile["taus"])
        assert (g["fraction"], g["low"], g["high"], g["seeds"]) == \
            (fraction.tolist(), low.tolist(), high.tolist(), len(LADDER[g["group"]]))
    plain = json.loads(CliRunner().invoke(app, ["report", str(tmp_path), "--format", "json"]).stdout)
    assert "matrix" not in plain and "performance_profile" not in plain


def test_with_one_comparable_group_no_figure_is_drawn_and_report_md_says_why(tmp_path):
    sweep_of(tmp_path, {"good": FAR["good"], "lone": [50.0]})
    stale = [tmp_path / "report_matrix.svg", tmp_path / "report_matrix.png", tmp_path / "report_profile.png"]
    for path in stale:  # an earlier report's figure, and the PNGs earlier versions drew
        path.write_bytes(b"from an earlier report")
    out = CliRunner().invoke(app, ["report", str(tmp_path), "--compare"])
    assert out.exit_code == 0, out.output
    why = "they need at least two groups with at least 2 seeds each, and only one group has that many"
    assert f"no figures: {why}" in out.stdout
    assert not any(path.exists() for path in stale) and not (tmp_path / "report_profile.svg").exists()
    md = (tmp_path / "report.md").read_text()
    assert f"No figures: {why}." in md and "Seeds per group: good 8 seeds, lone 1 seed;" in md
    assert ".svg" not in md and ".png" not in md


def test_figures_drawn_again_replace_the_pngs_of_earlier_versions(tmp_path):
    sweep_of(tmp_path, LADDER)
    legacy = [tmp_path / "report_matrix.png", tmp_path / "report_profile.png"]
    for path in legacy:
        path.write_bytes(b"\x89PNG from an earlier version")
    assert CliRunner().invoke(app, ["report", str(tmp_path), "--compare"]).exit_code == 0
    assert not any(path.exists() for path in legacy)
    assert (tmp_path / "report_matrix.svg").is_file() and (tmp_path / "report_profile.svg").is_file()


def test_report_html_embeds_both_figures_and_the_verdict_of_every_pair(tmp_path):
    sweep_of(tmp_path, LADDER)
    out = CliRunner().invoke(app, ["report", str(tmp_path), "--format", "html"])  # html compares unasked
    assert out.exit_code == 0, out.output
    page = (tmp_path / "report.html").read_text()
    for svg, caption in ((tmp_path / "report_matrix.svg", "P(row &gt; column) over seeds"),
                         (tmp_path / "report_profile.svg", "performance profiles: ")):
        svg_root(svg)  # a real SVG file in the sweep folder, and the very figure embedded below
        inline = svg.read_text().split("\n", 1)[1].replace(' xmlns="http://www.w3.org/2000/svg"', "")
        assert f'aria-label="{caption}' in inline and f"<figure>{inline}<figcaption>{caption}" in page
    verdicts = [c.verdict() for c in compare(LADDER)]
    assert len(verdicts) == 6 and all(f"<li>{html.escape(v)}</li>" in page for v in verdicts)
    assert "<li>close vs lone: too few seeds to compare (4 and 1 seeds; at least 2 each)</li>" in page
    assert "Seeds per group: close 4 seeds, good 8 seeds, lone 1 seed, bad 8 seeds;" in page
    assert "](report_matrix.svg)" in (tmp_path / "report.md").read_text()
