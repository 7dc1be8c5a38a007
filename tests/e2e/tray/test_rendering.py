"""Browser tests of the tray against the scripted fake protocol server: what an answer's text becomes: sanitized HTML, coloured code (also while streaming), typeset math.

Shared fixtures in conftest.py, helpers in harness.py; screenshots land in artifacts/screenshots/.
"""
from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from ..fake_protocol_server import FakeProtocolServer, FakeRun
from .harness import assert_clean, final_messages, open_tray, send, shot

pytestmark = pytest.mark.e2e


def test_message_html_is_sanitized_again(page: Page, server: FakeProtocolServer) -> None:
    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        run.complete(
            message="x",
            message_html=(
                '<p onclick="window.__xss=1">safe text</p><script>window.__xss=2</script>'
                '<img src="x" onerror="window.__xss=3"><iframe src="/"></iframe><style>body{display:none}</style>'
                '<a href="javascript:window.__xss=4">js link</a> <a href="https://example.org/">ext</a>'
                '<a href="/articles/1/">internal</a><object data="x"></object><embed src="x">'
            ),
        )

    server.script = script
    open_tray(page, server)
    send(page, "xss")
    final = final_messages(page)
    expect(final).to_contain_text("safe text")
    bubble = final.locator(".chat-bubble")
    for tag in ("script", "img", "iframe", "style", "object", "embed"):
        assert bubble.locator(tag).count() == 0, tag
    assert bubble.locator("[onclick]").count() == 0
    assert bubble.get_by_text("js link").get_attribute("href") is None
    ext = bubble.get_by_role("link", name="ext")
    assert ext.get_attribute("rel") == "noopener noreferrer" and ext.get_attribute("target") == "_blank"
    assert bubble.get_by_role("link", name="internal").get_attribute("target") is None
    bubble.get_by_text("safe text").click()
    bubble.get_by_text("js link").click()
    assert page.evaluate("window.__xss") is None
    # Chromium reports (and blocks) inline handlers as soon as any parser - <template>,
    # DOMParser, even setHTML - sees this deliberately unsanitized HTML; nothing else may show.
    page.errors[:] = [e for e in page.errors if not e.startswith("Executing inline event handler violates")]  # type: ignore[attr-defined]
    assert_clean(page, allowed_csp=("script-src-attr inline",))


def test_code_is_coloured_without_becoming_markup(page: Page, server: FakeProtocolServer) -> None:
    """Code that looks like HTML is coloured as text: highlight.js's output is sanitized again and used only if the
    text is unchanged; a language it does not know, and code in no language, stay plain."""
    evil = '<img src="x" onerror="window.__xss=1"><script>window.__xss=2</script>'
    escaped = evil.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        run.complete(message="code", message_html=(
            f'<pre><code class="language-html">{escaped}</code></pre>'
            '<pre><code class="language-nosuchlang">plain words</code></pre><pre><code>no language</code></pre>'))

    server.script = script
    open_tray(page, server)
    send(page, "show me html")
    blocks = final_messages(page).locator("pre code")
    expect(blocks.nth(0)).to_have_class(re.compile(r"\bhljs\b"))
    expect(blocks.nth(0).locator(".hljs-tag").first).to_be_visible()
    assert blocks.nth(0).inner_text() == evil
    bubble = final_messages(page).locator(".chat-bubble")
    assert bubble.locator("img").count() == 0 and bubble.locator("script").count() == 0
    assert page.evaluate("window.__xss") is None
    assert blocks.nth(0).evaluate("el => [...el.querySelectorAll('*')].every(n => n.tagName === 'SPAN')")
    for plain in (blocks.nth(1), blocks.nth(2)):
        expect(plain).not_to_have_class(re.compile(r"\bhljs\b"))
        assert plain.locator("span").count() == 0
    assert_clean(page)


def test_code_is_coloured_as_it_streams_once_its_fence_closes(page: Page, server: FakeProtocolServer) -> None:
    """While an answer streams, a code block is coloured as soon as its closing fence arrives; the block still growing
    stays plain (it would be repainted every frame), as does one in a language highlight.js does not know."""
    first = 'def greet(name):\n    return f"Hello, {name}!"'

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text(f"Two blocks:\n\n```python\n{first}\n```\n\n```nosuchlang\nplain\n```\n\n```js\nconst x = 1;")
        await run.gate("open")
        await run.stream_text("\n```\n\nDone.")
        await run.gate("closed")
        run.complete()

    server.script = script
    open_tray(page, server)
    send(page, "show me code")
    stream = page.locator(".chat-bubble--streaming")
    blocks = stream.locator("pre code")
    expect(blocks).to_have_count(3)
    expect(blocks.nth(2)).to_contain_text("const x = 1;")
    # the closed block is coloured while the answer still streams; the open one is not
    expect(blocks.nth(0)).to_have_class(re.compile(r"\bhljs\b"))
    expect(blocks.nth(0).locator(".hljs-keyword").first).to_have_text("def")
    assert blocks.nth(0).inner_text().rstrip("\n") == first
    expect(blocks.nth(1)).not_to_have_class(re.compile(r"\bhljs\b"))
    expect(blocks.nth(2)).not_to_have_class(re.compile(r"\bhljs\b"))
    assert blocks.nth(2).locator("span").count() == 0
    server.open_gate("open")
    expect(stream).to_contain_text("Done.")
    expect(blocks.nth(2)).to_have_class(re.compile(r"\bhljs\b"))
    expect(blocks.nth(2).locator(".hljs-keyword")).to_have_text("const")
    expect(stream.locator(".chat-cursor")).to_have_count(1)
    server.open_gate("closed")
    final = final_messages(page).last.locator("pre code")
    expect(page.locator(".chat-bubble--streaming")).to_have_count(0)
    expect(final.nth(0)).to_have_class(re.compile(r"\bhljs\b"))
    expect(final.nth(2)).to_have_class(re.compile(r"\bhljs\b"))
    expect(final.nth(1)).not_to_have_class(re.compile(r"\bhljs\b"))
    assert_clean(page)


MATH_TEXT = ("The area is $\\pi r^2$, it costs $5 and $10, and \\(a+b\\) is inline.\n\n$$\n\\int_0^1 x\\,dx = \\frac{1}{2}\n$$\n\n"
             "Not a link: $\\href{javascript:alert(1)}{click}$ and $\\url{https://evil.example}$.")


def test_math_is_typeset_while_streaming_and_in_the_final_answer(page: Page, server: FakeProtocolServer) -> None:
    """$...$, \\(...\\) and $$...$$ are typeset (KaTeX's MathML) as they stream and in the server's final HTML; money
    stays text; TeX cannot make a link; the TeX itself is kept in MathML's annotation, which is not shown."""
    from chat.events.rendering import render_markdown

    async def script(run: FakeRun, frame: dict[str, Any]) -> None:
        await run.stream_text(MATH_TEXT.split("Not a link")[0])
        await run.gate("streamed")
        await run.stream_text("Not a link" + MATH_TEXT.split("Not a link")[1])
        run.complete(message_html=render_markdown(MATH_TEXT))

    server.script = script
    open_tray(page, server)
    send(page, "the area of a circle")
    stream = page.locator(".chat-bubble--streaming")
    expect(stream.locator(".math-display math")).to_have_count(1)
    expect(stream.locator(".math-inline math")).to_have_count(2)
    expect(stream).to_contain_text("it costs $5 and $10")
    server.open_gate("streamed")
    expect(page.locator(".chat-bubble--streaming")).to_have_count(0)
    final = final_messages(page).last
    bubble = final.locator(".chat-bubble")
    expect(bubble.locator(".math-inline math")).to_have_count(4)  # \href and \url as text, not links
    expect(bubble.locator(".math-display math")).to_have_attribute("display", "block")
    expect(bubble).to_contain_text("it costs $5 and $10")
    expect(bubble.locator("annotation").first).to_have_text("\\pi r^2")
    expect(bubble.locator("annotation").first).to_be_hidden()
    assert "\\frac" not in bubble.inner_text()  # typeset, not shown as TeX
    assert bubble.locator("a").count() == 0 and bubble.locator("[href]").count() == 0 and bubble.locator("[style]").count() == 0
    assert bubble.locator("math *").evaluate_all("nodes => nodes.every(n => n.namespaceURI === 'http://www.w3.org/1998/Math/MathML')")
    shot(page, "math")
    assert_clean(page)
