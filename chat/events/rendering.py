"""Model text -> safe HTML: markdown-it (raw HTML off) then nh3 with an explicit allowlist.

`[[tool:N]]` becomes `<div class="tool-slot" data-tool-index="N"></div>` for the tray to fill. Math - `$...$` and
`\\(...\\)` inline, `$$...$$` and `\\[...\\]` displayed - becomes its TeX as text in
`<span class="math-inline">`, `<span class="math-display">` or `<div class="math-display">`, for a client to typeset
(the tray does, with KaTeX) or show as it is.
Images are never rendered (a remote image leaks the reader's IP and page to whoever hosts it).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

TOOL_MARKER_RE = re.compile(r"\[\[tool:(\d{1,6})\]\]")
_TOOL_PREFIX = "[[tool:"

ALLOWED_TAGS = frozenset({
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "s", "del", "code", "pre",
    "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "div", "span",
})
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "ol": {"start"},
    "code": {"class"},
    "div": {"class", "data-tool-index"},
    "span": {"class"},
    "th": {"style"},
    "td": {"style"},
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
LINK_REL = "noopener noreferrer nofollow"
_LANGUAGE_CLASS = re.compile(r"language-[A-Za-z0-9_+#.-]{1,40}")


def _attribute_filter(tag: str, attr: str, value: str) -> str | None:
    """Second line of defence: class and data attributes only in the exact shapes we emit."""
    if attr == "class":
        if tag == "code" and _LANGUAGE_CLASS.fullmatch(value):
            return value
        if tag == "div" and value in ("tool-slot", "math-display"):
            return value
        if tag == "span" and value in ("math-inline", "math-display"):
            return value
        return None
    if attr == "data-tool-index":
        return value if value.isdigit() else None
    return value


# ---- markdown-it extensions --------------------------------------------------------------------


def _tool_slot_inline(state: StateInline, silent: bool) -> bool:
    """Inline rule: `[[tool:N]]` -> a tool_slot token (before `link`, which would eat the brackets)."""
    if not state.src.startswith(_TOOL_PREFIX, state.pos):
        return False
    match = TOOL_MARKER_RE.match(state.src, state.pos)
    if match is None:
        return False
    if not silent:
        token = state.push("tool_slot", "div", 0)
        token.meta = {"index": int(match.group(1))}
    state.pos = match.end()
    return True


# Math as models write it: $$...$$ and \[...\] displayed, $...$ and \(...\) inline. A single $ opens only before a
# non-space and closes only after one, not before a digit, so "$5 and $10" stays money (as in Pandoc and the tray).
INLINE_MATH_RE = re.compile(r"\$\$(?!\$)([^$]+?)\$\$|\\\[([\s\S]+?)\\\]|\$(?![\s$])((?:\\.|[^\\$\n])+?)(?<!\s)\$(?!\d)|\\\(([\s\S]+?)\\\)")
_MATH_FENCES = (("$$", "$$"), ("\\[", "\\]"))


def _math_inline(state: StateInline, silent: bool) -> bool:
    """Inline rule: math -> a math_inline token holding its TeX (before `escape`, which would take `\\(`)."""
    if state.src[state.pos] not in "$\\":
        return False
    match = INLINE_MATH_RE.match(state.src, state.pos)
    if match is None:
        return False
    display = match.group(1) is not None or match.group(2) is not None
    tex = next(g for g in match.groups() if g is not None).strip()
    if not tex:
        return False
    if not silent:
        token = state.push("math_inline", "span", 0)
        token.content = tex
        token.meta = {"display": display}
    state.pos = match.end()
    return True


def _math_block(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """Block rule: a line opening with $$ or \\[ through the line that ends with its closing -> a math_block token."""
    if state.sCount[start_line] - state.blkIndent >= 4:
        return False
    first = state.src[state.bMarks[start_line] + state.tShift[start_line]:state.eMarks[start_line]]
    fence = next((f for f in _MATH_FENCES if first.startswith(f[0])), None)
    if fence is None:
        return False
    lines, line = [first[len(fence[0]):]], start_line
    while not lines[-1].rstrip().endswith(fence[1]) or (line == start_line and not lines[-1].rstrip()):
        line += 1
        if line >= end_line:
            return False
        lines.append(state.src[state.bMarks[line] + state.tShift[line]:state.eMarks[line]])
    tex = "\n".join(lines).rstrip()[:-len(fence[1])].strip()
    if not tex:
        return False
    if not silent:
        token = state.push("math_block", "div", 0)
        token.content = tex
        token.map = [start_line, line + 1]
    state.line = line + 1
    return True


def _render_math_inline(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    kind = "math-display" if token.meta.get("display") else "math-inline"
    return f'<span class="{kind}">{escapeHtml(token.content)}</span>'


def _render_math_block(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return f'<div class="math-display">{escapeHtml(tokens[idx].content)}</div>\n'


def _hoist_tool_slots(state: StateCore) -> None:
    """Core rule: split paragraphs around tool slots so the slot div is never nested inside a <p>."""
    tokens = state.tokens
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if (
            tok.type == "paragraph_open"
            and i + 2 < len(tokens)
            and tokens[i + 1].type == "inline"
            and any(c.type == "tool_slot" for c in tokens[i + 1].children or [])
        ):
            out.extend(_split_paragraph(tok, tokens[i + 1], tokens[i + 2]))
            i += 3
            continue
        out.append(tok)
        i += 1
    state.tokens = out


def _split_paragraph(open_: Token, inline: Token, close: Token) -> list[Token]:
    result: list[Token] = []
    segment: list[Token] = []

    def flush() -> None:
        children = _trim(segment)
        segment.clear()
        if children:
            para = inline.copy()
            para.children = children
            para.content = "".join(c.content for c in children)
            result.extend([open_.copy(), para, close.copy()])

    for child in inline.children or []:
        if child.type == "tool_slot":
            flush()
            slot = Token("tool_slot", "div", 0, block=True, meta=dict(child.meta), level=open_.level)
            result.append(slot)
        else:
            segment.append(child)
    flush()
    return result


def _trim(children: list[Token]) -> list[Token]:
    """Drop line breaks and whitespace at the edges of a paragraph piece; empty pieces vanish."""
    kept = list(children)
    while kept and kept[0].type in ("softbreak", "hardbreak"):
        kept.pop(0)
    while kept and kept[-1].type in ("softbreak", "hardbreak"):
        kept.pop()
    if kept and kept[0].type == "text":
        kept[0] = kept[0].copy(content=kept[0].content.lstrip())
    if kept and kept[-1].type == "text":
        kept[-1] = kept[-1].copy(content=kept[-1].content.rstrip())
    if all(t.type == "text" and not t.content for t in kept):
        return []
    return kept


def _render_tool_slot(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    html = f'<div class="tool-slot" data-tool-index="{int(token.meta["index"])}"></div>'
    return html + "\n" if token.block else html


def _render_image_as_alt(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    return escapeHtml(self.renderInlineAsText(token.children or [], options, env))


def _build_markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.inline.ruler.before("link", "tool_slot", _tool_slot_inline)
    md.inline.ruler.before("escape", "math_inline", _math_inline)
    md.block.ruler.before("fence", "math_block", _math_block, {"alt": ["paragraph", "reference", "blockquote", "list"]})
    md.core.ruler.after("inline", "tool_slot_hoist", _hoist_tool_slots)
    md.add_render_rule("tool_slot", _render_tool_slot)
    md.add_render_rule("math_inline", _render_math_inline)
    md.add_render_rule("math_block", _render_math_block)
    md.add_render_rule("image", _render_image_as_alt)
    return md


_MD = _build_markdown()


def render_markdown(text: str) -> str:
    """Sanitised HTML for model text: no raw HTML, no images, links only http(s)/mailto/relative."""
    if not text:
        return ""
    return sanitize_html(_MD.render(text))


# Built once: nh3.clean() builds its sanitizer from the options on every call, which cost more than the cleaning.
_CLEANER = nh3.Cleaner(
    tags=set(ALLOWED_TAGS),
    attributes={tag: set(attrs) for tag, attrs in ALLOWED_ATTRIBUTES.items()},
    attribute_filter=_attribute_filter,
    url_schemes=set(URL_SCHEMES),
    link_rel=LINK_REL,
    filter_style_properties={"text-align"},
    strip_comments=True,
)


def sanitize_html(html: str) -> str:
    """Reduce any HTML to the allowlist: safe tags, tool slots, http(s)/mailto/relative links with rel."""
    return _CLEANER.clean(html)
