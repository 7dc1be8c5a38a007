"""render_markdown: markdown to allowlisted HTML, tool slots kept, hostile input neutralised."""
from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings, strategies as st

from chat.events.rendering import ALLOWED_TAGS, LINK_REL, render_markdown, sanitize_html

SAFE_SCHEMES = {"", "http", "https", "mailto"}


class _Elements(HTMLParser):
    """Collects every element and attribute as a browser would parse them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag


def elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(html)
    parser.close()
    return parser.elements


def assert_safe(html: str) -> None:
    """No element, attribute or URL outside the allowlist survives."""
    for tag, attrs in elements(html):
        assert tag in ALLOWED_TAGS, tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            assert name not in {"src", "srcset", "formaction", "xlink:href", "id", "name"}, (tag, name)
            if name == "href":
                assert urlsplit((value or "").strip()).scheme.lower() in SAFE_SCHEMES, value
            if name == "style":
                assert value is not None and value.replace(" ", "").startswith("text-align:"), value
        if tag == "a":
            assert attrs.get("rel") == LINK_REL


def slots(html: str) -> list[str | None]:
    return [a.get("data-tool-index") for t, a in elements(html) if t == "div" and a.get("class") == "tool-slot"]


# ---- tool slots --------------------------------------------------------------------------------


def test_tool_marker_inside_a_paragraph_splits_it() -> None:
    html = render_markdown("Let me search.[[tool:0]]Found **3** results.")
    assert html == (
        "<p>Let me search.</p>\n"
        '<div class="tool-slot" data-tool-index="0"></div>\n'
        "<p>Found <strong>3</strong> results.</p>\n"
    )


def test_tool_markers_on_their_own_lines_and_in_lists() -> None:
    html = render_markdown("Intro\n\n[[tool:0]]\n\n[[tool:1]] and\n\n- item [[tool:12]]\n- other")
    assert slots(html) == ["0", "1", "12"]
    assert "<p></p>" not in html
    assert "[[tool:" not in html


def test_tool_marker_in_code_stays_literal() -> None:
    html = render_markdown("`[[tool:0]]`")
    assert slots(html) == []
    assert "<code>[[tool:0]]</code>" in html


def test_forged_tool_slot_html_is_inert() -> None:
    html = render_markdown('<div class="tool-slot" data-tool-index="0"></div>')
    assert slots(html) == []
    cleaned = sanitize_html('<div class="tool-slot evil" data-tool-index="1 onclick" onclick="x()">y</div>')
    assert elements(cleaned) == [("div", {})]


# ---- hostile input -----------------------------------------------------------------------------

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](java\tscript:alert(1))",
    "[x](&#106;avascript:alert(1))",
    "[x](vbscript:msgbox(1))",
    "[x](data:text/html;base64,PHNjcmlwdD4=)",
    '<a href="javascript:alert(1)">a</a>',
    '<p onclick="alert(1)">hi</p>',
    "<iframe src=https://evil></iframe>",
    "<style>body{display:none}</style>",
    "![x](http://evil/p.png)",
    "![x](data:image/png;base64,AAAA)",
    "[![img](http://evil/p.png)](https://ok.example)",
    "<https://ok.example/?q=<script>>",
    "<javascript:alert(1)>",
    '[t](https://ok.example "title\\" onmouseover=\\"x")',
    "```python\" onclick=\"x\n code\n```",
    "| a |\n|---|\n| <svg onload=x> |",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_markdown_is_neutralised(text: str) -> None:
    html = render_markdown(text)
    assert_safe(html)
    tags = {t for t, _ in elements(html)}
    assert not tags & {"script", "img", "iframe", "style", "svg"}


@pytest.mark.parametrize("html", [
    "<script>alert(1)</script>ok",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)" onclick="x">a</a>',
    '<a href="data:text/html,hi">a</a>',
    '<a href="vbscript:x">a</a>',
    "<iframe src=https://evil></iframe>",
    "<style>*{}</style>",
    '<td style="position:fixed;text-align:left">x</td>',
    '<code class="language-py x">c</code>',
    "<form><input formaction=x></form>",
])
def test_sanitizer_alone_holds_the_line(html: str) -> None:
    """Second line of defence: even HTML markdown-it would never produce is reduced to the allowlist."""
    cleaned = sanitize_html(html)
    assert_safe(cleaned)
    assert "alert" not in cleaned


def test_images_render_as_alt_text_only() -> None:
    assert render_markdown("See ![the chart](http://evil/p.png).") == "<p>See the chart.</p>\n"


def test_links_keep_safe_schemes_with_rel() -> None:
    html = render_markdown("[a](https://x.example/p?q=1) [b](/reports/1/) [c](mailto:me@x.example) [d](http://x.example)")
    hrefs = [a["href"] for t, a in elements(html) if t == "a"]
    assert hrefs == ["https://x.example/p?q=1", "/reports/1/", "mailto:me@x.example", "http://x.example"]
    assert_safe(html)


def test_markdown_features_survive() -> None:
    html = render_markdown("# Title\n\n**b** *i* ~~s~~ `c`\n\n```python\nprint(1)\n```\n\n| a | b |\n|--:|---|\n| 1 | 2 |\n\n"
                           "> quote\n\n1. one\n2. two\n\n---")
    tags = {t for t, _ in elements(html)}
    assert {"h1", "strong", "em", "s", "code", "pre", "table", "th", "td", "blockquote", "ol", "li", "hr"} <= tags
    assert '<code class="language-python">' in html
    assert 'style="text-align:right"' in html


# ---- math ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "html"), [
    ("The area is $\\pi r^2$.", '<p>The area is <span class="math-inline">\\pi r^2</span>.</p>\n'),
    ("It costs $5 and $10, or $ 3 $.", "<p>It costs $5 and $10, or $ 3 $.</p>\n"),  # money stays money
    ("inline \\(a+b\\) and \\[c^2\\] here", '<p>inline <span class="math-inline">a+b</span> and <span class="math-display">c^2</span> here</p>\n'),
    ("so $$e^{i\\pi}+1=0$$ holds", '<p>so <span class="math-display">e^{i\\pi}+1=0</span> holds</p>\n'),
    ("$$\n\\int_0^1 x\\,dx = \\frac12\n$$\n\nafter", '<div class="math-display">\\int_0^1 x\\,dx = \\frac12</div>\n<p>after</p>\n'),
    ("Text\n\\[x^2\\]\nmore", '<p>Text</p>\n<div class="math-display">x^2</div>\n<p>more</p>\n'),
    ("> $$\n> a<b\n> $$", '<blockquote>\n<div class="math-display">a&lt;b</div>\n</blockquote>\n'),
    ("`$x$` and \\$5", "<p><code>$x$</code> and $5</p>\n"),
    ("$$ $$\n\n$$\nnever closed", "<p>$$ $$</p>\n<p>$$\nnever closed</p>\n"),  # empty or unclosed: text
])
def test_math_is_marked_for_typesetting_as_escaped_tex(text: str, html: str) -> None:
    """$...$, \\(...\\), $$...$$ and \\[...\\] become their TeX as text in a span or div a client typesets."""
    assert render_markdown(text) == html


def test_math_cannot_carry_markup() -> None:
    html = render_markdown('$<img src=x onerror=alert(1)>$ and $$</span><script>x</script>$$')
    assert_safe(html)
    assert {t for t, _ in elements(html)} == {"p", "span"}
    assert sanitize_html('<span class="math-inline evil" onclick="x">t</span><span class="other">u</span>') == "<span>t</span><span>u</span>"


def test_empty_text() -> None:
    assert render_markdown("") == ""


_HOSTILE_PIECES = [*"<>\"'=/:()[]!`*_#|-\n ajvscript", "javascript:", "<img ", "onerror=", "<a href=", "](",
                   "![", "[[tool:1]]", "<script>", "data:", "http://", "&#"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_HOSTILE_PIECES), max_size=40).map("".join))
def test_random_hostile_text_is_always_safe(text: str) -> None:
    assert_safe(render_markdown(text))
