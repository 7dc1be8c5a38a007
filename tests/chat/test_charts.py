"""Server-drawn SVG charts (chat.admin.charts): the scale, bars and lines where the values put them, gaps for missing
values, every label escaped, and the table of the same numbers."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from chat.admin.charts import HEIGHT, Series, chart_figure, nice_ceiling

SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize(("value", "ceiling"), [(0, 1), (0.3, 0.5), (1, 1), (7, 10), (11, 20), (26, 50), (240, 250), (1001, 2000)])
def test_the_scale_ends_at_a_round_number(value: float, ceiling: float) -> None:
    assert nice_ceiling(value) == pytest.approx(ceiling)


def _svg(html: str) -> ET.Element:
    return ET.fromstring(re.search(r"<svg .*?</svg>", html, re.S).group(0).replace("<svg ", f'<svg xmlns="{SVG[1:-1]}" ', 1))


def test_bars_are_as_tall_as_their_values_and_the_table_has_the_numbers() -> None:
    html = chart_figure(chart_id="c", title="Turns", categories=["d1", "d2", "d3"], series=[Series("turns", [5, 10, 0])])
    rects = _svg(html).findall(f"{SVG}rect")
    assert len(rects) == 2  # a zero draws nothing
    heights = [float(r.get("height")) for r in rects]
    assert heights[1] == pytest.approx(2 * heights[0]) and rects[0].find(f"{SVG}title").text == "d1 · turns: 5"
    assert '<th scope="row">d3</th><td>0</td>' in html and 'aria-labelledby="c-caption"' in html and '<figcaption id="c-caption">Turns</figcaption>' in html


def test_stacked_bars_sit_on_each_other() -> None:
    html = chart_figure(chart_id="c", title="Errors", categories=["d1"], series=[Series("a", [2]), Series("b", [3])], kind="stacked")
    low, high = _svg(html).findall(f"{SVG}rect")
    assert float(high.get("y")) + float(high.get("height")) == pytest.approx(float(low.get("y")))


def test_a_missing_value_breaks_the_line() -> None:
    html = chart_figure(chart_id="c", title="p50", categories=["1", "2", "3", "4", "5"], series=[Series("p50", [10, 20, None, 30, 40])], kind="lines")
    svg = _svg(html)
    assert len(svg.findall(f"{SVG}polyline")) == 2 and len(svg.findall(f"{SVG}circle")) == 4
    assert "<td>—</td>" in html
    assert all(0 <= float(c.get("cy")) <= HEIGHT for c in svg.findall(f"{SVG}circle"))


def test_labels_are_escaped() -> None:
    html = chart_figure(chart_id="c", title="<b>t</b>", categories=["<img src=x>"], series=[Series("<script>", [1])])
    assert "<script>" not in html and "<img" not in html and "<b>" not in html and "&lt;script&gt;" in html
