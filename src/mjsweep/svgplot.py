"""Figures as SVG text, written here with numpy and the standard library: no matplotlib.

Every figure mjsweep draws is drawn with this (reports, `sweep plot`, a search's trials and Pareto front, PBT
curves, the cross-evaluation heat map), so that the report a sweep ends with costs milliseconds instead of
matplotlib's import and rendering (BENCHMARKS.md, "The final report.html"). It draws what those figures need
and nothing more: axes with round or log ticks, lines, step lines, filled bands, dots and rings, error bars, a
heat map with text in its cells and outlines, a colour bar, a legend, a title, and panels side by side.

Coordinates are pixels from the top left, rounded to a tenth. User text (group names, grid values) is
escaped as XML. `Svg.document()` is an inline <svg> element for an HTML page (no namespace, so that the page
names no URL), or with `standalone` a file of its own.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

FONT = "system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"
TEXT = "#222222"
GRID = "#e3e3e3"
AXIS = "#555555"
TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
         "#17becf")
"""matplotlib's tab10: the group colours people know from its plots."""
TAB20 = ("#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896", "#9467bd",
         "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7", "#bcbd22", "#dbdb8d",
         "#17becf", "#9edae5")
RDBU = ("#67001f", "#b2182b", "#d6604d", "#f4a582", "#fddbc7", "#f7f7f7", "#d1e5f0", "#92c5de", "#4393c3",
        "#2166ac", "#053061")
"""ColorBrewer's red-blue diverging scale (matplotlib's RdBu), from 0 (red) through white at 0.5 to 1 (blue)."""
VIRIDIS = ("#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b",
           "#fde725")
"""matplotlib's viridis at ten even steps, from 0 (dark blue) to 1 (yellow): a sequential scale."""
CHAR_WIDTH = 0.58
"""A sans-serif character's mean width in ems: enough to leave room for labels without measuring them."""
PLOT_SIZE = (720.0, 360.0)
"""The axes' box of a line chart, in pixels."""

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def escape(text: str) -> str:
    """`text` as XML character data or an attribute's value; characters XML cannot hold become U+FFFD."""
    return html.escape(_NOT_XML.sub("\ufffd", text), quote=True)


def text_width(text: str, size: float) -> float:
    """About how wide `text` is drawn at `size` pixels."""
    return len(text) * size * CHAR_WIDTH


def color(index: int, count: int) -> str:
    """The colour of the index-th of `count` groups: tab10 up to 10 groups, tab20 beyond (as `sweep plot`)."""
    cycle = TAB10 if count <= 10 else TAB20
    return cycle[index % len(cycle)]


def diverging(value: float) -> str:
    """`value` in [0, 1] on the red-white-blue scale, interpolated between ColorBrewer's eleven colours."""
    return _between(RDBU, value)


def sequential(value: float) -> str:
    """`value` in [0, 1] on viridis, interpolated between its ten steps."""
    return _between(VIRIDIS, value)


def _between(stops: Sequence[str], value: float) -> str:
    position = min(max(value, 0.0), 1.0) * (len(stops) - 1)
    k = min(int(position), len(stops) - 2)
    t = position - k
    a, b = _rgb(stops[k]), _rgb(stops[k + 1])
    return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(a, b, strict=True))


def _rgb(hex_color: str) -> tuple[int, int, int]:
    return int(hex_color[1:3], 16), int(hex_color[3:5], 16), int(hex_color[5:7], 16)


def _n(value: float) -> str:
    """A coordinate as SVG text: a tenth of a pixel is finer than any screen shows."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def nice_ticks(low: float, high: float, most: int = 7) -> list[float]:
    """At most `most` round values (1, 2, 2.5 or 5 times a power of ten apart) from low to high."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low] if math.isfinite(low) else []
    raw = (high - low) / max(most - 1, 1)
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * magnitude >= raw * (1 - 1e-9))
    first = math.ceil(low / step - 1e-9)
    last = math.floor(high / step + 1e-9)
    return [round(k * step, 12) + 0.0 for k in range(first, last + 1)]


def tick_text(value: float, ticks: Sequence[float]) -> str:
    """A tick's label: as many decimals as the ticks' spacing needs; 1.2M, 300k for large whole numbers."""
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else abs(value) or 1.0
    biggest = max(abs(t) for t in ticks) if ticks else abs(value)
    if step >= 1000 and biggest >= 10_000:
        scale, suffix = (1e6, "M") if biggest >= 1e6 else (1e3, "k")
        return f"{value / scale:g}{suffix}" if value else "0"
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    while decimals < 12 and abs(round(step, decimals) - step) > step * 1e-6:
        decimals += 1  # 2.5 apart needs one decimal more than 2 apart
    return f"{value + 0.0:.{decimals}f}"


@dataclass(frozen=True)
class Scale:
    """One axis: its limits and its ticks, each at a value with its label."""

    low: float
    high: float
    ticks: tuple[tuple[float, str], ...]

    @classmethod
    def numeric(cls, values: Sequence[float] | np.ndarray, pad: float = 0.05,
                limits: tuple[float, float] | None = None) -> Scale:
        """Limits around the finite `values`, `pad` of their span beyond each end (or the `limits` given);
        round ticks inside them."""
        if limits is None:
            finite = np.asarray(values, dtype=float)
            finite = finite[np.isfinite(finite)]
            low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
            if high > low:
                low, high = low - pad * (high - low), high + pad * (high - low)
            else:  # one value: a span around it, so that it has a place
                low, high = low - (abs(low) * 0.1 or 1.0), high + (abs(high) * 0.1 or 1.0)
        else:
            low, high = limits
        values_at = [t for t in nice_ticks(low, high) if low <= t <= high]
        return cls(low, high, tuple((t, tick_text(t, values_at)) for t in values_at))

    @classmethod
    def decades(cls, low: float, high: float) -> Scale:
        """A log axis from `low` to `high` (both > 0): positions are log10 of the values (draw at log10(x)),
        ticked at the powers of ten inside, or at round values of the exponent where fewer than two are."""
        a, b = math.log10(low), math.log10(high)
        at = [float(k) for k in range(math.ceil(a - 1e-9), math.floor(b + 1e-9) + 1)]
        if len(at) < 2:
            at = [t for t in nice_ticks(a, b, 4) if a <= t <= b]
        return cls(a, b, tuple((t, f"{10 ** t:.3g}") for t in at))

    @classmethod
    def categories(cls, labels: Sequence[str]) -> Scale:
        """One position per label, 0 to n - 1, with half a step to spare at each end."""
        return cls(-0.6, len(labels) - 0.4, tuple((float(i), label) for i, label in enumerate(labels)))

    def widest(self, size: float) -> float:
        return max((text_width(label, size) for _, label in self.ticks), default=0.0)


class Svg:
    """One figure being written: its elements in drawing order, later ones on top."""

    def __init__(self, width: float, height: float, label: str, ids: str = "figure"):
        """label: what the figure shows, in a sentence (its title for screen readers). ids: the prefix of the
        ids of its definitions, unique within a page that holds several figures."""
        self.width, self.height, self.label, self.ids = width, height, label, ids
        self.defs: list[str] = []
        self.parts: list[str] = []

    def document(self, standalone: bool = False) -> str:
        """The <svg> element; standalone: an SVG file of its own (the XML declaration, the SVG namespace)."""
        w, h = _n(self.width), _n(self.height)
        head = '<?xml version="1.0" encoding="utf-8"?>\n' if standalone else ""
        namespace = ' xmlns="http://www.w3.org/2000/svg"' if standalone else ""
        defs = f"<defs>{''.join(self.defs)}</defs>" if self.defs else ""
        return (f'{head}<svg{namespace} width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
                f'aria-label="{escape(self.label)}" font-family="{FONT}" font-size="12" fill="{TEXT}">'
                f"<title>{escape(self.label)}</title>{defs}"
                f'<rect width="{w}" height="{h}" fill="#ffffff"/>{"".join(self.parts)}</svg>\n')

    def text(self, x: float, y: float, content: str | Sequence[str], *, size: float = 12, anchor: str = "middle",
             bold: bool = False, fill: str = TEXT, rotate: float = 0.0, css: str = "") -> None:
        """Text centred on y (several lines: the block centred), aligned at x by `anchor` (start, middle,
        end); rotate: degrees clockwise about (x, y)."""
        lines = [content] if isinstance(content, str) else list(content)
        spacing = 1.2 * size
        top = y - spacing * (len(lines) - 1) / 2
        spans = "".join(f'<tspan x="{_n(x)}" y="{_n(top + k * spacing)}">{escape(line)}</tspan>'
                        for k, line in enumerate(lines))
        attributes = [f'font-size="{_n(size)}"', f'text-anchor="{anchor}"', 'dominant-baseline="central"']
        if bold:
            attributes.append('font-weight="bold"')
        if fill != TEXT:
            attributes.append(f'fill="{fill}"')
        if rotate:
            attributes.append(f'transform="rotate({_n(rotate)} {_n(x)} {_n(y)})"')
        if css:
            attributes.append(f'class="{css}"')
        self.parts.append(f"<text {' '.join(attributes)}>{spans}</text>")

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str, width: float = 1.0) -> None:
        self.parts.append(f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" stroke="{stroke}" '
                          f'stroke-width="{_n(width)}"/>')

    def rect(self, x: float, y: float, width: float, height: float, *, fill: str = "none", stroke: str = "",
             stroke_width: float = 1.0, css: str = "") -> None:
        edge = f' stroke="{stroke}" stroke-width="{_n(stroke_width)}"' if stroke else ""
        named = f' class="{css}"' if css else ""
        self.parts.append(f'<rect{named} x="{_n(x)}" y="{_n(y)}" width="{_n(width)}" height="{_n(height)}" '
                          f'fill="{fill}"{edge}/>')

    def path(self, d: str, *, fill: str = "none", stroke: str = "", stroke_width: float = 1.0, opacity: float = 1.0,
             css: str = "", group: str | None = None) -> None:
        """A path; `group` names the group it draws (data-group), for readers of the SVG."""
        attributes = [f'class="{css}"'] if css else []
        if group is not None:
            attributes.append(f'data-group="{escape(group)}"')
        attributes += [f'd="{d}"', f'fill="{fill}"']
        if stroke:
            attributes += [f'stroke="{stroke}"', f'stroke-width="{_n(stroke_width)}"', 'stroke-linejoin="round"']
        if opacity < 1:
            attributes.append(f'{"fill" if fill != "none" else "stroke"}-opacity="{opacity:g}"')
        self.parts.append(f"<path {' '.join(attributes)}/>")

    def circle(self, x: float, y: float, r: float, fill: str, opacity: float = 1.0, css: str = "",
               group: str | None = None, stroke: str = "") -> None:
        """A dot; fill "none" with a `stroke` colour: a ring."""
        named = (f' class="{css}"' if css else "") + (f' data-group="{escape(group)}"' if group is not None else "")
        faded = f' fill-opacity="{opacity:g}"' if opacity < 1 else ""
        edge = f' stroke="{stroke}" stroke-width="1.5"' if stroke else ""
        self.parts.append(f'<circle{named} cx="{_n(x)}" cy="{_n(y)}" r="{_n(r)}" fill="{fill}"{faded}{edge}/>')

    def hatch(self) -> str:
        """A grey fill with diagonal lines, for a cell that has no value; its url(#...)."""
        name = f"{self.ids}-hatch"
        if not any(f'id="{name}"' in d for d in self.defs):
            self.defs.append(f'<pattern id="{name}" width="6" height="6" patternUnits="userSpaceOnUse" '
                             'patternTransform="rotate(45)"><rect width="6" height="6" fill="#e6e6e6"/>'
                             '<line x1="0" y1="0" x2="0" y2="6" stroke="#a6a6a6" stroke-width="1.5"/></pattern>')
        return f"url(#{name})"


def polyline(points: Sequence[tuple[float, float]]) -> str:
    """Path data through `points`; a point with a non-finite coordinate breaks the line."""
    parts: list[str] = []
    drawing = False
    for x, y in points:
        if not (math.isfinite(x) and math.isfinite(y)):
            drawing = False
            continue
        parts.append(f"{'L' if drawing else 'M'}{_n(x)},{_n(y)}")
        drawing = True
    return " ".join(parts)


def steps(points: Sequence[tuple[float, float]]) -> str:
    """Path data of a step line: each value held until the next point's x (matplotlib's where="post")."""
    if not points:
        return ""
    (x0, y0), rest = points[0], points[1:]
    d = [f"M{_n(x0)},{_n(y0)}"]
    for x, y in rest:
        d.append(f"H{_n(x)}V{_n(y)}")
    return " ".join(d)


@dataclass
class Axes:
    """A box of the figure that data is drawn into, with an x and a y scale."""

    svg: Svg
    left: float
    top: float
    width: float
    height: float
    xscale: Scale
    yscale: Scale

    def x(self, value: float) -> float:
        s = self.xscale
        return self.left + (value - s.low) / (s.high - s.low) * self.width

    def y(self, value: float) -> float:
        s = self.yscale
        return self.top + self.height - (value - s.low) / (s.high - s.low) * self.height

    def points(self, xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray) -> list[tuple[float, float]]:
        return [(self.x(float(a)), self.y(float(b))) for a, b in zip(xs, ys, strict=True)]

    def frame(self, xlabel: str, ylabel: str, grid: str = "xy") -> None:
        """Grid lines (`grid`: along "x", "y" or both), the box, the ticks with their labels, the axis labels."""
        svg, bottom, right = self.svg, self.top + self.height, self.left + self.width
        for value, label in self.xscale.ticks:
            x = self.x(value)
            if "x" in grid:
                svg.line(x, self.top, x, bottom, GRID)
            svg.line(x, bottom, x, bottom + 4, AXIS)
            svg.text(x, bottom + 14, label, size=11)
        for value, label in self.yscale.ticks:
            y = self.y(value)
            if "y" in grid:
                svg.line(self.left, y, right, y, GRID)
            svg.line(self.left - 4, y, self.left, y, AXIS)
            svg.text(self.left - 7, y, label, size=11, anchor="end")
        svg.rect(self.left, self.top, self.width, self.height, stroke=AXIS)
        svg.text(self.left + self.width / 2, bottom + 34, xlabel)
        if ylabel:
            svg.text(self.left - self.yscale.widest(11) - 20, self.top + self.height / 2, ylabel, rotate=-90)

    def line(self, xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray, color: str, group: str,
             width: float = 2.0, css: str = "curve") -> None:
        """A line through the points; a lone point as a dot, which a line could not show."""
        points = self.points(xs, ys)
        if len(points) == 1:
            self.svg.circle(*points[0], r=4, fill=color, css=css, group=group)
        else:
            self.svg.path(polyline(points), stroke=color, stroke_width=width, css=css, group=group)

    def step(self, xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray, color: str, group: str,
             width: float = 2.0, css: str = "steps") -> None:
        self.svg.path(steps(self.points(xs, ys)), stroke=color, stroke_width=width, css=css, group=group)

    def band(self, xs: Sequence[float] | np.ndarray, low: Sequence[float] | np.ndarray,
             high: Sequence[float] | np.ndarray, color: str, group: str, *, stepped: bool = False,
             opacity: float = 0.2) -> None:
        """The area between `low` and `high` (as steps with `stepped`); nothing where either is not finite."""
        keep = [k for k in range(len(xs)) if math.isfinite(float(low[k])) and math.isfinite(float(high[k]))]
        if len(keep) < 2:
            return
        x = [float(xs[k]) for k in keep]
        upper, lower = self.points(x, [float(high[k]) for k in keep]), self.points(x, [float(low[k]) for k in keep])
        if stepped:
            upper, lower = _stepped(upper), _stepped(lower)
        self.svg.path(polyline(upper + lower[::-1]) + " Z", fill=color, opacity=opacity, css="band", group=group)

    def interval(self, low: float, high: float, y: float, color: str) -> None:
        """A horizontal error bar from low to high at y, with caps."""
        left, right, at = self.x(low), self.x(high), self.y(y)
        self.svg.line(left, at, right, at, color, 1.5)
        for end in (left, right):
            self.svg.line(end, at - 5, end, at + 5, color, 1.5)

    def diamond(self, x: float, y: float, color: str, group: str, r: float = 6.0) -> None:
        cx, cy = self.x(x), self.y(y)
        self.svg.path(polyline([(cx, cy - r), (cx + r, cy), (cx, cy + r), (cx - r, cy)]) + " Z", fill=color,
                      css="mean", group=group)


def _stepped(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The corners of a step line through `points` (each value held until the next x)."""
    out = [points[0]]
    for (_, y0), (x1, y1) in zip(points, points[1:], strict=False):
        out += [(x1, y0), (x1, y1)]
    return out


def chart(label: str, title: Sequence[str], xscale: Scale, yscale: Scale, xlabel: str, ylabel: str, *,
          legend: Sequence[tuple[str, str]] = (), size: tuple[float, float] = PLOT_SIZE, grid: str = "xy",
          ids: str = "figure") -> Axes:
    """An empty chart, ready for data: the title lines on top, the axes of `size` pixels with room for the
    y labels on their left and the legend (label, colour) on their right."""
    left = 30 + yscale.widest(11) + (20 if ylabel else 0)
    legend_width = max((text_width(name, 11) for name, _ in legend), default=0.0)
    right = 40 + legend_width if legend else 24
    top = 16 + 17 * len(title)
    width, height = left + size[0] + right, top + size[1] + 50
    svg = Svg(width, height, label, ids)
    svg.text(width / 2, 14 + 8.5 * (len(title) - 1), title, size=13)
    axes = Axes(svg, left, top, size[0], size[1], xscale, yscale)
    axes.frame(xlabel, ylabel, grid)
    if legend:
        draw_legend(svg, left + size[0] + 14, top + 8, legend)
    return axes


def side_by_side(label: str, panels: Sequence[Svg], ids: str = "panels") -> Svg:
    """Charts in a row, as one figure (each keeps its own ids: give each a prefix of its own)."""
    svg = Svg(sum(p.width for p in panels), max(p.height for p in panels), label, ids)
    x = 0.0
    for panel in panels:
        svg.parts.append(f'<g transform="translate({_n(x)} 0)">{panel.document()}</g>')
        x += panel.width
    return svg


def draw_legend(svg: Svg, x: float, y: float, entries: Sequence[tuple[str, str]]) -> None:
    """One row per (label, colour): a short line of the colour, then the label."""
    for k, (name, hue) in enumerate(entries):
        at = y + 18 * k
        svg.line(x, at, x + 18, at, hue, 3)
        svg.text(x + 24, at, name, size=11, anchor="start", css="legend")


@dataclass(frozen=True)
class Cell:
    """One cell of a heat map: its fill (None: no value, hatched grey), its lines of text, and how they show."""

    fill: str | None
    lines: tuple[str, ...] = ()
    bold: bool = False
    outlined: bool = False
    text_fill: str = TEXT


def heatmap(label: str, title: Sequence[str], rows: Sequence[str], columns: Sequence[str],
            cells: Sequence[Sequence[Cell | None]], *, xlabel: str, ylabel: str,
            colorbar: tuple[str, Callable[[float], str]] | None = None,
            colorbar_limits: tuple[float, float] = (0.0, 1.0), ids: str = "heatmap") -> Svg:
    """A grid of cells (None: left blank, as a diagonal is) with row labels on the left, column labels slanted
    under it, and a colour bar (its label, value in [0, 1] -> colour) on the right, its ticks labelled from
    `colorbar_limits` (the values at 0 and 1)."""
    n_rows, n_columns = len(rows), len(columns)
    side = 80.0 if max(n_rows, n_columns) <= 6 else max(18.0, min(60.0, 600.0 / max(n_rows, n_columns)))
    longest = max((len(line) for row in cells for cell in row if cell is not None for line in cell.lines), default=1)
    font = min(11.0, max(6.0, (side - 6) / (longest * CHAR_WIDTH)))  # the widest line fits its cell
    row_room = max((text_width(r, 11) for r in rows), default=0.0)
    column_room = max((text_width(c, 11) for c in columns), default=0.0) * math.sin(math.radians(40))
    left, top = 40 + row_room, 16 + 17 * len(title)
    grid_width, grid_height = side * n_columns, side * n_rows
    width = max(left + grid_width + (110 if colorbar else 30), 24 + max(text_width(t, 13) for t in title))
    height = top + grid_height + column_room + 50
    svg = Svg(width, height, label, ids)
    svg.text(width / 2, 14 + 8.5 * (len(title) - 1), title, size=13)
    for i, row in enumerate(cells):
        for j, cell in enumerate(row):
            if cell is not None:
                _cell(svg, cell, left + j * side, top + i * side, side, font)
    svg.rect(left, top, grid_width, grid_height, stroke=AXIS)
    for i, name in enumerate(rows):
        svg.text(left - 8, top + (i + 0.5) * side, name, size=11, anchor="end")
    for j, name in enumerate(columns):
        x = left + (j + 0.5) * side
        svg.text(x, top + grid_height + 10, name, size=11, anchor="end", rotate=-40)
    svg.text(left + grid_width / 2, top + grid_height + column_room + 32, xlabel)
    svg.text(left - row_room - 24, top + grid_height / 2, ylabel, rotate=-90)
    if colorbar is not None:
        _colorbar(svg, left + grid_width + 24, top, grid_height, *colorbar, colorbar_limits)
    return svg


def _cell(svg: Svg, cell: Cell, x: float, y: float, side: float, font: float) -> None:
    if cell.fill is None:
        svg.rect(x, y, side, side, fill=svg.hatch(), css="na")
    else:
        svg.rect(x, y, side, side, fill=cell.fill, css="cell")
    if cell.outlined:
        inset = side * 0.04
        svg.rect(x + inset, y + inset, side - 2 * inset, side - 2 * inset, stroke="#000000", stroke_width=2,
                 css="separated")
    if cell.lines:
        svg.text(x + side / 2, y + side / 2, cell.lines, size=font, bold=cell.bold, fill=cell.text_fill, css="value")


def _colorbar(svg: Svg, x: float, top: float, height: float, label: str, hue: Callable[[float], str],
              limits: tuple[float, float], pieces: int = 64) -> None:
    """A vertical bar of the scale from 0 (bottom) to 1 (top), ticked every quarter with the values `limits`
    map there, and its label beside it."""
    width, piece = 14.0, height / pieces
    for k in range(pieces):  # bands of colour, a little overlapped so that no seam shows between them
        svg.rect(x, top + height - (k + 1) * piece, width, piece + 0.5, fill=hue((k + 0.5) / pieces))
    svg.rect(x, top, width, height, stroke=AXIS)
    low, high = limits
    values = [low + (high - low) * k / 4 for k in range(5)]
    for k, value in enumerate(values):
        y = top + height - k / 4 * height
        svg.line(x + width, y, x + width + 4, y, AXIS)
        svg.text(x + width + 7, y, tick_text(value, values), size=10, anchor="start")
    svg.text(x + width + 52, top + height / 2, label, size=11, rotate=-90)
