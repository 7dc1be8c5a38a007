"""Charts drawn on the server as inline SVG, each with the table of its numbers (the admin's quality dashboard).

No script, no external service and no inline style: colours and type come from classes (chat/admin/quality.css),
so a strict Content-Security-Policy (style-src 'self', no 'unsafe-inline') shows them. The SVG is an image
(role="img", named by the figure's caption); the table under it is what assistive technology reads.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

__all__ = ["Series", "chart_figure", "nice_ceiling"]

WIDTH, HEIGHT = 720, 200
LEFT, RIGHT, TOP, BOTTOM = 44, 8, 10, 24  # room for the value axis (left) and the day labels (bottom)
X_LABELS = 8  # at most this many category labels under the chart
SERIES_CLASSES = 8  # .pagechat-chart__s0 ... s7 in the stylesheet (further series reuse them)

Kind = Literal["bars", "stacked", "lines"]


@dataclass(frozen=True)
class Series:
    """One series of a chart: its name and a value per category (None: no value, a gap in a line)."""

    label: str
    values: Sequence[float | None]


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is >= value (1 for nothing to show)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return float(next(step * power for step in (1, 2, 2.5, 5, 10) if step * power >= value * (1 - 1e-12)))


def _number(value: float | None) -> str:
    """A value as the table and the axis show it: whole numbers as such, else up to 4 significant digits."""
    if value is None:
        return "—"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.{max(0, 3 - math.floor(math.log10(abs(value))))}f}" if value else "0"


def _axis(value: float) -> str:
    """A value on the axis, short: 750, 12.5, 250k, 1.5M."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{_fmt(value / size)}{suffix}"
    return _fmt(value) if value >= 1 or value == 0 else f"{value:.3g}"


def _fmt(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def chart_figure(*, chart_id: str, title: str, categories: Sequence[str], series: Sequence[Series], kind: Kind = "bars",
                 category_label: str = "", number: Callable[[float | None], str] = _number) -> SafeString:
    """A <figure>: caption, legend, the SVG chart of `series` over `categories` and a table of the same numbers."""
    caption_id = f"{chart_id}-caption"
    svg = _svg(caption_id, categories, series, kind, number)
    legend = format_html_join("", '<li><span class="pagechat-chart__key pagechat-chart__s{}" aria-hidden="true"></span>{}</li>',
                              ((i % SERIES_CLASSES, s.label) for i, s in enumerate(series)))
    head = format_html_join("", '<th scope="col">{}</th>', ((s.label,) for s in series))
    body = format_html_join("", "<tr>{}</tr>", (
        (format_html('<th scope="row">{}</th>{}', category, format_html_join("", "<td>{}</td>", ((number(s.values[i]),) for s in series))),)
        for i, category in enumerate(categories)))
    return format_html(
        '<figure class="pagechat-chart" id="{}"><figcaption id="{}">{}</figcaption><ul class="pagechat-chart__legend">{}</ul>{}'
        '<details class="pagechat-chart__numbers"><summary>{}</summary><table><caption>{}</caption><thead><tr><th scope="col">{}</th>{}</tr>'
        "</thead><tbody>{}</tbody></table></details></figure>",
        chart_id, caption_id, title, legend, svg, gettext("The numbers behind this chart"), title, category_label, head, body)


def _svg(caption_id: str, categories: Sequence[str], series: Sequence[Series], kind: Kind, number: Callable[[float | None], str]) -> SafeString:
    n = len(categories)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    if kind == "stacked":
        top = max((sum(s.values[i] or 0 for s in series) for i in range(n)), default=0)
    else:
        top = max((v for s in series for v in s.values if v is not None), default=0)
    ceiling = nice_ceiling(float(top))

    def y(value: float) -> float:
        return TOP + plot_h - plot_h * value / ceiling

    # the markup is written with f-strings (thousands of elements for a quarter): every number is formatted here,
    # every text (category, series name, formatted value) escaped once
    cats = [escape(c) for c in categories]
    names = [escape(s.label) for s in series]
    parts: list[str] = []
    for k in range(5):  # the value axis: 0, 1/4 ... the top, with grid lines
        value = ceiling * k / 4
        at = _fmt(y(value))
        parts.append(f'<line class="pagechat-chart__grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{at}" y2="{at}"/>'
                     f'<text class="pagechat-chart__axis" x="{LEFT - 6}" y="{_fmt(y(value) + 4)}" text-anchor="end">{escape(_axis(value))}</text>')
    slot = plot_w / max(n, 1)
    step = max(1, math.ceil(n / X_LABELS))
    for i in range(0, n, step):
        parts.append(f'<text class="pagechat-chart__axis" x="{_fmt(LEFT + slot * (i + 0.5))}" y="{HEIGHT - 6}" text-anchor="middle">{cats[i]}</text>')
    if kind == "lines":
        for j, s in enumerate(series):
            points = [(LEFT + slot * (i + 0.5), y(v), i, v) for i, v in enumerate(s.values) if v is not None]
            runs: list[list[tuple[float, float, int, float]]] = []
            for point in points:  # a missing value breaks the line
                if runs and runs[-1][-1][2] == point[2] - 1:
                    runs[-1].append(point)
                else:
                    runs.append([point])
            for run in runs:
                if len(run) > 1:
                    coordinates = " ".join(f"{_fmt(px)},{_fmt(py)}" for px, py, _, _ in run)
                    parts.append(f'<polyline class="pagechat-chart__line pagechat-chart__s{j % SERIES_CLASSES}" points="{coordinates}"/>')
            for px, py, i, v in points:
                parts.append(f'<circle class="pagechat-chart__s{j % SERIES_CLASSES}" cx="{_fmt(px)}" cy="{_fmt(py)}" r="2.5">'
                             f"<title>{cats[i]} · {names[j]}: {escape(number(v))}</title></circle>")
    else:
        grouped = kind == "bars" and len(series) > 1
        width = slot * 0.8 / (len(series) if grouped else 1)
        for i in range(n):
            base = 0.0
            for j, s in enumerate(series):
                v = s.values[i] or 0
                if not v:
                    continue
                x = LEFT + slot * (i + 0.1) + (width * j if grouped else 0)
                low, high = (base, base + v) if kind == "stacked" else (0, v)
                parts.append(f'<rect class="pagechat-chart__s{j % SERIES_CLASSES}" x="{_fmt(x)}" y="{_fmt(y(high))}" width="{_fmt(max(width, 0.5))}" '
                             f'height="{_fmt(y(low) - y(high))}"><title>{cats[i]} · {names[j]}: {escape(number(s.values[i]))}</title></rect>')
                if kind == "stacked":
                    base += v
    parts.append(format_html('<line class="pagechat-chart__baseline" x1="{}" x2="{}" y1="{}" y2="{}"/>', LEFT, WIDTH - RIGHT, TOP + plot_h, TOP + plot_h))
    return format_html('<svg class="pagechat-chart__svg" viewBox="0 0 {} {}" role="img" aria-labelledby="{}" focusable="false">{}</svg>',
                       WIDTH, HEIGHT, caption_id, mark_safe("".join(parts)))
