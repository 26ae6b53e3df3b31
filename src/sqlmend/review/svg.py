"""Bar charts and histograms as inline SVG (no script, no network), for the HTML reports.

>>> svg = bars(["easy", "hard"], {"before": [80.0, 40.0], "after": [82.0, 45.0]}, "EX %")
>>> svg.startswith("<svg") and 'width="' in svg and svg.count("<rect") >= 4
True
"""

from __future__ import annotations

import math

from markupsafe import Markup, escape

#: Series colours, in order (colour-blind safe).
COLORS = ("#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb")


def _fmt(v: float) -> str:
    """A short label: integers as such, then 1, 2 or 3 significant decimals by size."""
    v = float(v)
    if v.is_integer() or abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}" if abs(v) >= 1 else f"{v:.3g}"


def _legend(names: list[str], x: float, y: float) -> list[str]:
    out = []
    for i, name in enumerate(names):
        out.append(f'<rect x="{x + i * 120}" y="{y - 9}" width="10" height="10" fill="{COLORS[i % len(COLORS)]}"/>'
                   f'<text x="{x + i * 120 + 14}" y="{y}" font-size="11">{escape(name)}</text>')
    return out


def bars(groups: list[str], series: dict[str, list[float]], unit: str = "", width: int = 640,
         height: int = 260, max_value: float | None = None) -> Markup:
    """A grouped vertical bar chart.

    Args:
        groups: the x-axis categories.
        series: ``{name: one value per group}``.
        unit: the y-axis label.
        width: pixels.
        height: pixels.
        max_value: the top of the y axis (default: the largest value).

    Returns:
        The ``<svg>`` element.
    """
    names = list(series)
    left, right, top, bottom = 48, 12, 24, 46
    plot_w, plot_h = width - left - right, height - top - bottom
    top_v = max_value if max_value is not None else max([v for s in series.values() for v in s] + [0])
    top_v = top_v or 1.0
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img"><title>{escape(unit)}</title>',
             f'<line x1="{left}" y1="{top + plot_h}" x2="{width - right}" y2="{top + plot_h}" stroke="#888"/>',
             f'<text x="4" y="{top - 8}" font-size="11">{escape(unit)}</text>']
    for i in range(5):
        v = top_v * i / 4
        y = top + plot_h - plot_h * i / 4
        parts.append(f'<line x1="{left - 3}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#e3e3e3"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{_fmt(v)}</text>')
    gw = plot_w / max(len(groups), 1)
    bw = min(36.0, gw * 0.8 / max(len(names), 1))
    for gi, g in enumerate(groups):
        x0 = left + gi * gw + (gw - bw * len(names)) / 2
        for si, name in enumerate(names):
            v = series[name][gi]
            h = plot_h * max(v, 0) / top_v
            x, y = x0 + si * bw, top + plot_h - h
            parts.append(f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{bw - 2:.1f}" height="{h:.1f}" '
                         f'fill="{COLORS[si % len(COLORS)]}"><title>{escape(g)} · {escape(name)}: {_fmt(v)}'
                         f'</title></rect><text x="{x + (bw - 2) / 2:.1f}" y="{y - 3:.1f}" font-size="9" '
                         f'text-anchor="middle">{_fmt(v)}</text>')
        parts.append(f'<text x="{left + gi * gw + gw / 2:.1f}" y="{top + plot_h + 14}" font-size="11" '
                     f'text-anchor="middle">{escape(g)}</text>')
    if len(names) > 1:
        parts += _legend(names, left, height - 8)
    parts.append("</svg>")
    return Markup("".join(parts))


def hbars(labels: list[str], series: dict[str, list[float]], width: int = 640, row: int = 22) -> Markup:
    """A horizontal bar chart, one row per label, the series stacked side by side (e.g. fixed / regressed).

    Args:
        labels: one per row (a stage, a rule code, an error type).
        series: ``{name: one value per label}``.
        width: pixels.
        row: pixels per row.

    Returns:
        The ``<svg>`` element.
    """
    names = list(series)
    left, right, top = 150, 40, 8
    height = top + row * max(len(labels), 1) + 26
    total = [sum(series[n][i] for n in names) for i in range(len(labels))]
    top_v = max(total + [1])
    plot_w = width - left - right
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img"><title>{escape(" / ".join(names))}</title>']
    for i, label in enumerate(labels):
        y = top + i * row
        x = float(left)
        parts.append(f'<text x="{left - 6}" y="{y + row * 0.65:.1f}" font-size="11" text-anchor="end">'
                     f'{escape(label)}</text>')
        for si, name in enumerate(names):
            v = series[name][i]
            w = plot_w * v / top_v
            if w > 0:
                parts.append(f'<rect class="bar" x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row - 6}" '
                             f'fill="{COLORS[si % len(COLORS)]}"><title>{escape(label)} · {escape(name)}: '
                             f'{_fmt(v)}</title></rect>')
            x += w
        parts.append(f'<text x="{x + 4:.1f}" y="{y + row * 0.65:.1f}" font-size="10">'
                     f'{" / ".join(_fmt(series[n][i]) for n in names)}</text>')
    parts += _legend(names, left, height - 6)
    parts.append("</svg>")
    return Markup("".join(parts))


def histogram(values: list[float], unit: str, bins: int = 12, width: int = 640, height: int = 220,
              log: bool = False) -> Markup:
    """A histogram of values (e.g. seconds per query).

    Args:
        values: the values.
        unit: the x-axis label.
        bins: number of bins.
        width: pixels.
        height: pixels.
        log: bin on a log10 scale (for latencies spanning orders of magnitude).

    Returns:
        The ``<svg>`` element.
    """
    vals = [v for v in values if v is not None and (v > 0 or not log)]
    if not vals:
        return bars(["(no data)"], {unit: [0.0]}, unit, width, height)
    f = (lambda v: math.log10(v)) if log else (lambda v: v)
    lo, hi = min(map(f, vals)), max(map(f, vals))
    step = (hi - lo) / bins or 1.0
    counts = [0] * bins
    for v in vals:
        counts[min(int((f(v) - lo) / step), bins - 1)] += 1
    edge = (lambda e: 10 ** e) if log else (lambda e: e)
    labels = [_fmt(edge(lo + i * step)) for i in range(bins)]
    return bars(labels, {"queries": [float(c) for c in counts]}, f"queries per bin of {unit}", width, height)


def lines(xs: list[float], series: dict[str, list[float | None]], unit: str = "", x_label: str = "",
          width: int = 640, height: int = 260) -> Markup:
    """A line chart of several series over the same x values (a curve per series).

    Args:
        xs: the x values, increasing.
        series: ``{name: one y per x (None: no point)}``.
        unit: the y-axis label.
        x_label: the x-axis label.
        width: pixels.
        height: pixels.

    Returns:
        The ``<svg>`` element.

    >>> lines([0.2, 0.8], {"a": [1.0, -2.0]}, "pp").count("<circle")
    2
    """
    names = list(series)
    left, right, top, bottom = 48, 12, 24, 58 + 14 * ((len(series) - 1) // max(1, (width - 48) // 120))
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [v for s in series.values() for v in s if v is not None] + [0.0]
    lo, hi = min(values), max(values)
    if hi == lo:
        hi = lo + 1.0
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    span = (x1 - x0) or 1.0

    def px(x: float) -> float:
        return left + plot_w * (x - x0) / span

    def py(y: float) -> float:
        return top + plot_h * (hi - y) / (hi - lo)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img"><title>{escape(unit)}</title>',
             f'<text x="4" y="{top - 8}" font-size="11">{escape(unit)}</text>',
             f'<line x1="{left}" y1="{py(0):.1f}" x2="{width - right}" y2="{py(0):.1f}" stroke="#888"/>']
    for i in range(5):
        v = lo + (hi - lo) * i / 4
        parts.append(f'<text x="{left - 4}" y="{py(v) + 4:.1f}" font-size="10" text-anchor="end">{_fmt(v)}</text>')
    for x in xs:
        parts.append(f'<text x="{px(x):.1f}" y="{top + plot_h + 14}" font-size="10" text-anchor="middle">{_fmt(x)}</text>')
    parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h + 28}" font-size="11" '
                 f'text-anchor="middle">{escape(x_label)}</text>')
    for si, name in enumerate(names):
        colour = COLORS[si % len(COLORS)]
        points = [(px(x), py(y), y) for x, y in zip(xs, series[name]) if y is not None]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y, v in points:
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"><title>{escape(name)}: '
                         f'{_fmt(v)}</title></circle>')
    per_row = max(1, (width - left) // 120)
    for row_start in range(0, len(names), per_row):  # the legend wraps onto more rows
        y = height - 6 - 14 * ((len(names) - 1) // per_row - row_start // per_row)
        for k, part in enumerate(_legend(names[row_start:row_start + per_row], left, y)):
            parts.append(part.replace(f'fill="{COLORS[k % len(COLORS)]}"',
                                      f'fill="{COLORS[(row_start + k) % len(COLORS)]}"', 1))
    parts.append("</svg>")
    return Markup("".join(parts))
