"""Figures as SVG, written by ui/svgplot.py: round ticks, escaped user text, and documents that parse."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from mjsweep.ui import svgplot

ODD = "b<a>d & 'odd\" ünï"
"""A group name with every character that XML must escape, and some that it need not."""


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
