"""report.html's and report.md's figures, written as SVG by ui/svgplot.py: they parse as XML, carry what the
PNGs carried (a line per group through each of its points, its band, the separated cells outlined and bold,
n/a hatched), escape user text, and the report that draws them imports no matplotlib."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from helpers.fake_sweep import make_run, result, run_spec
from mjsweep import svgplot
from mjsweep.results import compare as comparelib
from mjsweep.results.report import aggregate
from mjsweep.results.rows import collect
from mjsweep.sweepdir.files import SweepDir
from mjsweep.sweepdir.models import RunState
from mjsweep.ui.curves import CURVE_POINTS, Band, SweepCurves
from mjsweep.ui.decision_figures import matrix_svg, profile_svg
from mjsweep.ui.report_figures import CURVES_CAPTION, FINAL_CAPTION, curves_svg, final_svg, sweep_figures

ODD = "b<a>d & 'odd\" ünï"
"""A group name with every character that XML must escape, and some that it need not."""
RETURNS = {"close": [99.0, 104.0, 96.0, 101.0], "good": [100.0, 102.0, 98.0, 101.0, 99.0], "lone": [50.0],
           ODD: [10.0, 12.0, 8.0, 11.0, 9.0]}
"""In the report's order, best first: `ODD` loses to both groups of 4 and 5 seeds, `lone` cannot be compared."""


def parsed(svg: svgplot.Svg) -> ET.Element:
    root = ET.fromstring(svg.document())
    assert root.tag == "svg" and float(root.get("width", "0")) > 400
    return root


def of_class(root: ET.Element, tag: str, css: str) -> list[ET.Element]:
    return [e for e in root.iter(tag) if e.get("class") == css]


def point_count(d: str) -> int:
    """The points of a polyline's path data ("M x,y L x,y ...")."""
    return d.count(",")


def texts(root: ET.Element) -> list[str]:
    return ["".join(e.itertext()) for e in root.iter("text")]


@pytest.mark.parametrize(("low", "high", "labels"), [
    (0.0, 2048.0, ["0", "500", "1000", "1500", "2000"]),
    (0.0, 1e6, ["0", "0.2M", "0.4M", "0.6M", "0.8M", "1M"]),
    (-1500.0, 20000.0, ["0", "5k", "10k", "15k", "20k"]),
    (-0.02, 1.02, ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]),
    (120.5, 121.3, ["120.6", "120.8", "121.0", "121.2"]),
    (-3.2, 7.9, ["-2", "0", "2", "4", "6"]),
])
def test_ticks_are_round_values_inside_the_limits(low, high, labels):
    scale = svgplot.Scale.numeric([], limits=(low, high))
    assert [label for _, label in scale.ticks] == labels
    assert all(low <= value <= high for value, _ in scale.ticks)


def test_one_value_still_gets_an_axis_around_it():
    scale = svgplot.Scale.numeric([5.0, 5.0])
    assert scale.low < 5.0 < scale.high and len(scale.ticks) >= 3


def test_user_text_is_escaped_and_what_xml_cannot_hold_is_replaced():
    assert svgplot.escape(ODD) == "b&lt;a&gt;d &amp; &#x27;odd&quot; ünï"
    svg = svgplot.Svg(500, 300, f"a{chr(1)}b {ODD}")
    svg.text(10, 10, ODD)
    root = ET.fromstring(svg.document())
    assert texts(root) == [ODD] and root.get("aria-label") == f"a\ufffdb {ODD}"


def test_a_standalone_file_names_the_svg_namespace_and_an_inline_figure_names_no_url():
    svg = svgplot.Svg(500, 300, "empty")
    assert ET.fromstring(svg.document(standalone=True).split("\n", 1)[1]).tag == "{http://www.w3.org/2000/svg}svg"
    assert "http" not in svg.document()


def test_the_diverging_scale_runs_from_red_through_white_to_blue():
    assert [svgplot.diverging(v) for v in (-1.0, 0.0, 0.5, 1.0, 2.0)] == \
        ["#67001f", "#67001f", "#f7f7f7", "#053061", "#053061"]
    assert svgplot.diverging(0.95) == "#134b86"  # halfway between the two darkest blues


def bands(groups: dict[str, float]) -> SweepCurves:
    """A curve of CURVE_POINTS points per group, rising to `top`, with a band of +-1."""
    x = np.linspace(0.0, 2048.0, CURVE_POINTS)
    return SweepCurves({g: Band(x, top * x / 2048, top * x / 2048 - 1, top * x / 2048 + 1, 2)
                        for g, top in groups.items()}, evaluated=False)


def test_learning_curves_have_one_line_per_group_through_each_point_and_its_band():
    curves = bands({"a": 10.0, ODD: -5.0})
    root = parsed(curves_svg(curves, {"a": svgplot.TAB10[0], ODD: svgplot.TAB10[1]}, "sweep"))
    lines = of_class(root, "path", "curve")
    assert [line.get("data-group") for line in lines] == ["a", ODD]
    assert [point_count(line.get("d", "")) for line in lines] == [CURVE_POINTS, CURVE_POINTS]
    assert [line.get("stroke") for line in lines] == [svgplot.TAB10[0], svgplot.TAB10[1]]
    assert [b.get("data-group") for b in of_class(root, "path", "band")] == ["a", ODD]
    assert point_count(of_class(root, "path", "band")[0].get("d", "")) == 2 * CURVE_POINTS  # above, then below
    assert {"a (n=2)", f"{ODD} (n=2)"} <= set(texts(root))
    assert "mean episode return (training)" in texts(root) and "timesteps" in texts(root)


def test_a_curve_of_one_point_is_a_dot():
    x = np.array([512.0])
    curves = SweepCurves({"a": Band(x, np.array([3.0]), np.array([3.0]), np.array([3.0]), 1)}, evaluated=True)
    root = parsed(curves_svg(curves, {"a": svgplot.TAB10[0]}, "sweep"))
    assert of_class(root, "path", "curve") == [] and len(of_class(root, "circle", "curve")) == 1
    assert "mean evaluation return" in texts(root)


def fake_sweep(folder, returns=RETURNS):
    for variant, values in returns.items():
        for seed, value in enumerate(values):
            make_run(folder, run_spec(variant, seed), RunState.SUCCEEDED, result(value),
                     progress=[(100, 500.0, value / 4 + seed), (200, 500.0, value / 2), (300, 500.0, value)])


def test_the_reports_curves_and_final_returns_come_from_the_sweep_folder(tmp_path):
    fake_sweep(tmp_path)
    rows = collect(tmp_path)
    groups = aggregate(rows)
    figures = sweep_figures(SweepDir(tmp_path), groups, rows)
    assert [caption for _, caption in figures] == [CURVES_CAPTION, FINAL_CAPTION]
    curves, final = (parsed(svg) for svg, _ in figures)
    assert sorted(c.get("data-group") for c in of_class(curves, "path", "curve")) == sorted(RETURNS)
    assert all(point_count(c.get("d", "")) == CURVE_POINTS for c in of_class(curves, "path", "curve"))
    assert [c.get("data-group") for c in of_class(curves, "circle", "curve")] == []
    seeds = of_class(final, "circle", "seed")
    assert len(seeds) == sum(len(v) for v in RETURNS.values())
    assert sorted(d.get("data-group") for d in of_class(final, "path", "mean")) == sorted(RETURNS)
    labels = [t for t in texts(final) if "(n=" in t]
    assert labels == [f"{ODD} (n=5)", "lone (n=1)", "good (n=5)", "close (n=4)"]  # drawn bottom up: best on top


def test_no_final_returns_no_figure():
    assert final_svg([], [], {}, "sweep") is None


SEPARABLE = {"close": [99.0, 104.0, 96.0, 101.0, 100.0, 103.0, 97.0, 102.0],
             "good": [100.0, 102.0, 98.0, 101.0, 99.0, 103.0, 97.0, 100.5], "lone": [50.0],
             ODD: [10.0, 12.0, 8.0, 11.0, 9.0, 13.0, 7.0, 10.5]}
"""8 seeds a group: what three groups need for a pair to be separable at Holm's first step (0.05 / 3)."""


def test_the_matrix_outlines_and_bolds_the_separated_cells_and_hatches_the_pairs_it_cannot_compare():
    matrix = comparelib.matrix(SEPARABLE)
    root = parsed(matrix_svg(matrix, "sweep"))
    separated = [(i, j) for i, row in enumerate(matrix.cells) for j, c in enumerate(row) if c and c.separated]
    assert len(separated) == 4  # close and good each beat ODD, both ways round
    assert len(of_class(root, "rect", "separated")) == len(separated)
    bold = [t for t in root.iter("text") if t.get("font-weight") == "bold"]
    # 8 vs 8 seeds, every one of ODD's below: score intervals that are not points.
    assert sorted("".join(t.itertext()) for t in bold) == \
        ["0.00[0.00,0.24]", "0.00[0.00,0.24]", "1.00[0.76,1.00]", "1.00[0.76,1.00]"]
    assert not any(c and c.separated for row in comparelib.matrix(RETURNS).cells for c in row)  # 4 and 5 seeds
    hatched = of_class(root, "rect", "na")
    assert len(hatched) == 2 * (len(SEPARABLE) - 1) and {r.get("fill") for r in hatched} == {"url(#matrix-hatch)"}
    assert root.find("defs/pattern[@id='matrix-hatch']") is not None
    cells = of_class(root, "rect", "cell")
    assert len(cells) == 6 and svgplot.diverging(1.0) in {c.get("fill") for c in cells}  # 3 x 2, no diagonal
    assert f"{ODD} (8 seeds)" in texts(root)
    assert any("bold and outlined: separated by the test at 95%, family-wise" in t for t in texts(root))


def test_the_profiles_have_a_step_line_per_comparable_group_over_every_tau():
    profiles = comparelib.profiles(RETURNS)
    root = parsed(profile_svg(profiles, "sweep"))
    steps = of_class(root, "path", "steps")
    assert [s.get("data-group") for s in steps] == ["close", "good", ODD]  # lone has too few seeds
    assert all(s.get("d", "").count("H") == len(profiles.taus) - 1 for s in steps)
    assert len(of_class(root, "path", "band")) == 3
    assert [s.get("stroke") for s in steps] == list(svgplot.TAB10[:3])


BUILD = """
import os, runpy, sys
def leave(code):
    print(sorted(m for m in sys.modules if m.partition(".")[0] == "matplotlib"), code)
    sys.stdout.flush()
    real_exit(code)
real_exit, os._exit = os._exit, leave  # report_child leaves by os._exit, past any atexit
entry, folder = sys.argv[1:]
sys.argv = [entry, "report", folder, "--format", "html"]
try:
    runpy.run_module(entry, run_name="__main__")
except SystemExit as exc:
    leave(exc.code or 0)
"""
"""Runs ENTRY as `python -m ENTRY report FOLDER --format html` would, then says which matplotlib modules it
imported, and its exit code."""


@pytest.mark.parametrize("entry", ["mjsweep.ui.report_child", "mjsweep.ui.cli"])
def test_the_html_report_imports_no_matplotlib(tmp_path, entry):
    """`sweep run`'s final build (report_child, told to go) and the live builds (`sweep report --format html`)."""
    fake_sweep(tmp_path)
    proc = subprocess.run([sys.executable, "-c", BUILD, entry, str(tmp_path)], input="go\n", capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[] 0"
    page = (tmp_path / "report.html").read_text()
    assert page.count("<figure><svg ") == 4 and "<img" not in page
    assert (tmp_path / "report_matrix.svg").is_file() and (tmp_path / "report_profile.svg").is_file()


def test_the_final_build_exits_with_the_reports_exit_code(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mjsweep.ui.report_child", "report", str(tmp_path), "--format",
                           "html"], input="go\n", capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "no run folders" in proc.stderr


def test_cell_text_is_sized_to_fit_its_cell_however_many_groups():
    rng = np.random.default_rng(0)
    for n in (2, 8, 14):  # intervals up to 10 groups, P alone up to 24
        returns = {f"variant-{k}": list(rng.normal(3 * k, 5, 5)) for k in range(n)}
        root = parsed(matrix_svg(comparelib.matrix(returns), "sweep"))
        side = float(of_class(root, "rect", "cell")[0].get("width", "0"))
        in_cells = of_class(root, "text", "value")
        assert len(in_cells) == n * (n - 1)
        for text in in_cells:
            widest = max(len(span.text or "") for span in text)
            assert widest * float(text.get("font-size", "0")) * svgplot.CHAR_WIDTH <= side


def test_the_cross_matrix_colours_each_mean_on_viridis_and_hatches_the_skipped_pairs(tmp_path):
    from mjsweep.crosseval.pairs import Cell
    from mjsweep.crosseval.run import _heatmap

    cells = [Cell("a", "x", 2, 10.0, 8.0, 12.0), Cell("a", "y", 2, 30.0, 25.0, 35.0),
             Cell("b", "x", 1, 20.0, None, None), Cell("b", "y", 0, None, None, None, "spaces differ")]
    assert _heatmap(cells, ODD, tmp_path / "matrix.svg")
    root = ET.parse(tmp_path / "matrix.svg").getroot()
    drawn = [e.get("fill") for e in root.iter() if e.get("class") == "cell"]
    assert drawn == [svgplot.VIRIDIS[0], svgplot.VIRIDIS[-1], svgplot.sequential(0.5)]  # lowest, highest, between
    assert len([e for e in root.iter() if e.get("class") == "na"]) == 1
    values = ["".join(e.itertext()) for e in root.iter() if e.get("class") == "value"]
    assert values == ["10.0[8.0, 12.0]", "30.0[25.0, 35.0]", "20.0", "skipped"]  # one seed: no interval
    words = ["".join(e.itertext()) for e in root.iter() if e.tag.endswith("text")]
    assert {"10", "20", "30", "mean return", "evaluated on", "trained on"} <= set(words)  # the colour bar's returns
    assert f"{ODD}: mean return over seeds, 95% t interval" in words
    nothing = [Cell("a", "x", 0, None, None, None, "spaces differ")]
    assert not _heatmap(nothing, "t", tmp_path / "none.svg") and not (tmp_path / "none.svg").exists()
