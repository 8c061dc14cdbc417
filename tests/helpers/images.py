"""Checks on the SVG files `sweep plot` writes."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from mjsweep import svgplot

SVG = "{http://www.w3.org/2000/svg}"


def not_blank(path) -> ET.Element:
    """A real figure: a standalone SVG file big enough to read, with ink (a curve, a band or a seed's dot) in the
    first group's colour; its root element."""
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG}svg" and float(root.get("width", "0")) > 400 and float(root.get("height", "0")) > 60
    inked = [e for e in root.iter() if e.get("class") in ("curve", "band", "seed")]
    assert inked, "no curve, band or dot"
    first = svgplot.color(0, 1)  # the first group's colour (tab10's blue)
    assert any(first in (e.get("stroke"), e.get("fill")) for e in inked)
    return root
