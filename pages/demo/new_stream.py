"""New stream page: a template to prefill the form, and topic suggestions."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from pages.registry import PageSpec, register_page
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
    parse_marker="STREAM_TEMPLATE:",
    description="a template that fills in the new stream form (name, purpose, frequency, topics)",
    schema=StreamTemplate,
    summarize=lambda d: f"Stream template: {d.get('stream_name', '?')}",
    example={"stream_name": "{Topic} Monitor", "purpose": "Follow advances in {topic}", "report_frequency": "weekly",
             "topics": ["{topic}", "{topic} clinical trials", "{topic} drug approvals"]},
))
payloads.register(PayloadSpec(
    type="topic_suggestions",
    parse_marker="TOPIC_SUGGESTIONS:",
    description="topic keywords to add to the new stream",
    schema=TopicSuggestions,
    summarize=lambda d: "Topics: " + ", ".join(d.get("topics", [])[:4]),
    example={"topics": ["{topic}", "{topic} biomarkers", "{topic} therapy resistance"], "rationale": "Common angles on {topic}"},
))


def new_stream_context(context: dict[str, Any], user: Any) -> str:
    return "The user is creating a new research stream by hand on the new stream form (name, purpose, frequency, topics)."


register_page(PageSpec(
    name="new_stream",
    identity="You are the Knowledge Horizon assistant on the new stream form. You help users fill it in well.",
    context_builder=new_stream_context,
    payloads=("stream_template", "topic_suggestions"),
))
