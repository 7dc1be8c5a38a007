"""Helpers shared by the demo's page files: safe entity lookups and a compact stream description."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.utils.translation import gettext_noop

from pages.demo.models import ResearchStream

# Chips the payload instructions give a model (in English, as the instructions are); their labels and values are
# marked for the catalogs, so the offline model offers them in the user's language (a hosted model writes them in it
# by itself), and reads the words a chip sends back through the demo's vocabulary.
THERAPEUTIC_AREAS = [
    {"label": gettext_noop("Oncology"), "value": gettext_noop("oncology research")},
    {"label": gettext_noop("Cardiology"), "value": gettext_noop("cardiovascular research")},
    {"label": gettext_noop("Neurology"), "value": gettext_noop("neuroscience research")},
    {"label": gettext_noop("Immunology"), "value": gettext_noop("immunology research")},
]

# The example conversation's chips after the form (seed 000): each asks for one change, not a new form.
REFINEMENTS = [
    {"label": gettext_noop("Change name"), "value": gettext_noop("I want to change the stream name")},
    {"label": gettext_noop("Add more channels"), "value": gettext_noop("add more channels")},
    {"label": gettext_noop("Different frequency"), "value": gettext_noop("change the report frequency")},
]


def owned_stream(user: User, context: dict[str, Any]) -> ResearchStream | None:
    """The stream named by the (untrusted) request context, only if this user owns it."""
    raw = context.get("stream_id") or (context.get("entity_id") if context.get("entity_type") == "research_stream" else None)
    try:
        pk = int(str(raw))
    except (TypeError, ValueError):
        return None
    return ResearchStream.objects.filter(pk=pk, owner=user).prefetch_related("channels").first()


# A key of the lines below that no form labels: the offline model shows a fact's key through the catalogs
FACT_KEYS = (gettext_noop("Retrieval queries"),)


def describe_stream(stream: ResearchStream) -> str:
    """The stream as the model reads it (values come from the database, not from the browser)."""
    s = stream.as_schema()
    lines = [
        f"Stream: {s['stream_name']} (id {s['stream_id']}), {s['report_frequency']} reports",
        f"Purpose: {s['purpose'] or '(none)'}",
        f"Topics: {', '.join(s['semantic'].get('topics') or []) or '(none)'}",
        f"Entities: {', '.join(s['semantic'].get('entities') or []) or '(none)'}",
        f"Retrieval queries: {'; '.join(s['retrieval'].get('queries') or []) or '(none)'}",
        f"Sources: {', '.join(s['retrieval'].get('sources') or []) or '(none)'}",
        "Presentation categories: " + (", ".join(c.get("name", "") for c in s["presentation"].get("categories") or []) or "(none)"),
        "Channels: " + ("; ".join(f"{c['name']} ({c['type']}: {', '.join(c['keywords'])})" for c in s["channels"]) or "(none)"),
    ]
    return "\n".join(lines)
