"""The text of provider messages as the offline model reads it: a message's words, the files it carries, and the
text inside the `<data source="...">` blocks that fence tool results and the page's text."""
from __future__ import annotations

import re
from typing import Any

# The loop hands tool results to every model inside `<data source="...">` blocks (chat.agent.data.as_data, which
# the agent imports from above this package), and the prompt fences the page's text the same way; the offline model
# reads the text inside. A block's opening and closing lines are exactly these: its text cannot contain them.
DATA_OPEN = re.compile(r'^<data source="[^"]*">$')
DATA_CLOSE = "</data>"
_DATA_BLOCK = re.compile(r'\A<data source="[^"]*">\n(.*)\n</data>\Z', re.S)
DATA_BLOCKS = re.compile(r'^<data source="([^"]*)">\n(.*?)\n</data>$', re.S | re.M)
# as_data marks a data tag inside the text with "!" after its "<" (`<!/data>`); the plain ones are read back, as a
# model reads past the mark (encoded or lookalike forms keep it: this model only quotes them)
_ESCAPED_TAG = re.compile(r"<!(\s*/?\s*data)", re.I)
_OLD_ESCAPED_TAG = re.compile(r"<\\(/?data)")  # how text was escaped before (stored tool results)


def data_unescape(text: str) -> str:
    """A data block's text as it was given (best effort: see _ESCAPED_TAG)."""
    return _OLD_ESCAPED_TAG.sub(r"<\1", _ESCAPED_TAG.sub(r"<\1", text))


def data_blocks(text: str) -> dict[str, str]:
    """The bodies (unescaped) of the data blocks in `text` by source, the first of each."""
    out: dict[str, str] = {}
    for m in DATA_BLOCKS.finditer(text):
        out.setdefault(m.group(1), data_unescape(m.group(2)))
    return out


def data_body(text: str) -> str:
    """The text inside one data block (unescaped), or `text` itself when it is not one."""
    m = _DATA_BLOCK.match(text)
    return data_unescape(m.group(1)) if m else text


def content_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


# the file's name is fenced on the note's line (chat.userdata.attachments); older notes had it bare
ATTACHMENT_NOTE = re.compile(r'^\[Attachment (?:<data source="[^"]*">(.*)</data>|(.+)) \(([\w.+-]+/[\w.+-]+)\): [^\]]*\]$')


def message_text(message: dict[str, Any]) -> str:
    """The text of one provider message (string content or its text blocks; notes about attachments left out)."""
    if isinstance(message.get("content"), str):
        return str(message["content"])
    return " ".join(text for b in content_blocks(message) if b.get("type") == "text"
                    and not ATTACHMENT_NOTE.match(text := str(b.get("text", ""))))


def message_attachments(message: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, content type) of the attachments a user message carries, as blocks or as notes about them."""
    out = []
    for b in content_blocks(message):
        if b.get("type") == "text" and (m := ATTACHMENT_NOTE.match(str(b.get("text", "")))):
            out.append((data_unescape(m.group(1)) if m.group(1) is not None else m.group(2), m.group(3)))
        elif b.get("type") in ("image", "document"):
            out.append((str(b.get("title") or b["type"]), str((b.get("source") or {}).get("media_type", ""))))
    return out
