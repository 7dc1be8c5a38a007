"""New stream page: a template to prefill the form, and topic suggestions."""
from __future__ import annotations

from typing import Any, Literal

from django.contrib.auth.models import User
from django.utils.translation import gettext, gettext_lazy, ngettext
from pydantic import BaseModel, Field

from pages.demo.forms import NewStreamForm
from pages.demo.models import ResearchStream
from pages.registry import PageSpec, ServerAction, ServerActionResult, register_page
from payloads.registry import registry as payloads
from payloads.spec import PayloadSpec


class StreamTemplate(BaseModel):
    stream_name: str = Field(min_length=1)
    purpose: str = ""
    report_frequency: Literal["daily", "weekly", "biweekly", "monthly"] = "weekly"
    topics: list[str] = Field(default_factory=list)


class TopicSuggestions(BaseModel):
    topics: list[str] = Field(min_length=1, max_length=20)
    rationale: str = ""


payloads.register(PayloadSpec(
    type="stream_template",
    title=gettext_lazy("Stream template"),
    parse_marker="STREAM_TEMPLATE:",
    description="a template that fills in the new stream form (name, purpose, frequency, topics)",
    schema=StreamTemplate,
    summarize=lambda d: gettext("Stream template: %(name)s") % {"name": d.get("stream_name", "?")},
    example={"stream_name": "{Topic} Monitor", "purpose": "Follow advances in {topic}", "report_frequency": "weekly",
             "topics": ["{topic}", "{topic} clinical trials", "{topic} drug approvals"]},
))
payloads.register(PayloadSpec(
    type="topic_suggestions",
    title=gettext_lazy("Topic suggestions"),
    parse_marker="TOPIC_SUGGESTIONS:",
    description="topic keywords to add to the new stream",
    schema=TopicSuggestions,
    summarize=lambda d: gettext("Topics: %(topics)s") % {"topics": ", ".join(d.get("topics", [])[:4])},
    example={"topics": ["{topic}", "{topic} biomarkers", "{topic} therapy resistance"], "rationale": "Common angles on {topic}"},
))


MIN_TOPICS = 3


def validate_form(data: dict[str, Any], user: Any, context: dict[str, Any]) -> ServerActionResult:
    """Check a proposed stream (a template) with the page's own form and the user's streams; changes nothing."""
    raw_topics = data.get("topics")
    topics: list[Any] = raw_topics if isinstance(raw_topics, list) else []
    form = NewStreamForm(data={
        "name": str(data.get("stream_name") or ""), "purpose": str(data.get("purpose") or ""),
        "report_frequency": str(data.get("report_frequency") or "weekly"),
        "topics": "\n".join(str(t) for t in topics), "channels": "",
    })
    errors = [f"{form.fields[name].label if name in form.fields else name}: {' '.join(str(m) for m in msgs)}" for name, msgs in form.errors.items()]
    warnings: list[str] = []
    suggestions: list[str] = []
    name = str(data.get("stream_name") or "").strip()
    if name and ResearchStream.objects.owned_by(user).filter(name__iexact=name).exists():
        warnings.append(gettext("You already have a stream called “%(name)s”.") % {"name": name})
    if not str(data.get("purpose") or "").strip():
        warnings.append(gettext("There is no purpose: the assistant uses it to suggest topics and queries."))
    if len(topics) < MIN_TOPICS:
        suggestions.append(gettext("Add at least %(min)d specific topics (it has %(count)d).") % {"min": MIN_TOPICS, "count": len(topics)})
    valid = not errors
    verdict = gettext("✓ The proposal passes the form's checks.") if valid else ngettext(
        "✗ The proposal has %(count)d problem.", "✗ The proposal has %(count)d problems.", len(errors)) % {"count": len(errors)}
    extra = " " + gettext("%(warnings)s, %(suggestions)s.") % {
        "warnings": ngettext("%(count)d warning", "%(count)d warnings", len(warnings)) % {"count": len(warnings)},
        "suggestions": ngettext("%(count)d suggestion", "%(count)d suggestions", len(suggestions)) % {"count": len(suggestions)},
    } if warnings or suggestions else ""
    return ServerActionResult(
        message=verdict + extra,
        payload={"type": "validation_results", "data": {"valid": valid, "errors": errors, "warnings": warnings, "suggestions": suggestions}},
        suggested_actions=[{"label": gettext("Close"), "action": "close", "handler": "client", "style": "secondary"}],
        ok=True,
    )


def new_stream_context(context: dict[str, Any], user: User) -> str:
    return "The user is creating a new research stream by hand on the new stream form (name, purpose, frequency, topics)."


register_page(PageSpec(
    name="new_stream",
    identity="You are the Knowledge Horizon assistant on the new stream form. You help users fill it in well.",
    context_builder=new_stream_context,
    payloads=("stream_template", "topic_suggestions", "validation_results"),
    server_actions=(ServerAction("validate_form", "Check a proposed template's name, purpose and frequency for problems before it fills the form",
                                 validate_form, ("stream_name", "purpose", "report_frequency", "topics")),),
    title=gettext_lazy("New research stream"),
    starters=(gettext_lazy("Fill in the form for me"), gettext_lazy("Suggest topics for my stream"),
              gettext_lazy("What can you do here?")),
))
