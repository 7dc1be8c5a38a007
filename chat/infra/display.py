"""Values shown on staff pages (the admin of chat, tools and payload types), escaped: model output is untrusted."""
from __future__ import annotations

import json
from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext


def pretty(value: Any, limit: int = 200_000) -> SafeString:
    """JSON or text shown escaped in a <pre>, cut after `limit` characters."""
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[:limit] + "\n" + gettext("… (truncated)")
    return format_html('<pre style="white-space:pre-wrap;max-height:40em;overflow:auto">{}</pre>', text)
