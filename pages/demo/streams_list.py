"""Streams list page: suggestions for new streams and insights about the user's portfolio."""
from __future__ import annotations

from typing import Annotated, Any

from django.contrib.auth.models import User
from django.utils.translation import gettext, gettext_lazy, gettext_noop, ngettext
from pydantic import BaseModel, Field

from chat.agent.types import ToolContext, ToolResult
from pages.demo.common import describe_stream
from pages.demo.models import ResearchStream
from pages.registry import PageSpec, register_page
from payloads.registry import registry as payloads
from payloads.spec import PayloadSpec
from tools.registry import tool


class StreamSuggestion(BaseModel):
    name: str
    purpose: str = ""
    rationale: str = ""


class StreamSuggestions(BaseModel):
    suggestions: list[StreamSuggestion] = Field(min_length=1, max_length=8)


class PortfolioInsights(BaseModel):
    coverage: list[str] = Field(default_factory=list)
    gaps: list[str] = Field(default_factory=list)
    overlaps: list[str] = Field(default_factory=list)
    recommendation: str = ""


payloads.register(PayloadSpec(
    type="stream_suggestions",
    title=gettext_lazy("Stream ideas"),
    parse_marker="STREAM_SUGGESTIONS:",
    description="ideas for new research streams that complement the user's streams",
    schema=StreamSuggestions,
    summarize=lambda d: gettext("Stream ideas: %(names)s") % {"names": ", ".join(s.get("name", "") for s in d.get("suggestions", [])[:3])},
    example={"suggestions": [
        {"name": "{Topic} Biomarkers", "purpose": "Track biomarker discovery in {topic}", "rationale": "Complements your current streams"},
        {"name": "{Topic} Regulatory Watch", "purpose": "Approvals and guidance on {topic}", "rationale": "No stream covers regulation yet"},
    ]},
))
payloads.register(PayloadSpec(
    type="portfolio_insights",
    title=gettext_lazy("Portfolio insights"),
    parse_marker="PORTFOLIO_INSIGHTS:",
    description="an analysis of coverage, gaps and overlaps across the user's portfolio of streams",
    schema=PortfolioInsights,
    summarize=lambda d: gettext("Portfolio insights: %(gaps)s, %(overlaps)s") % {
        "gaps": ngettext("%(count)d gap", "%(count)d gaps", len(d.get("gaps", []))) % {"count": len(d.get("gaps", []))},
        "overlaps": ngettext("%(count)d overlap", "%(count)d overlaps", len(d.get("overlaps", []))) % {"count": len(d.get("overlaps", []))}},
    example={"coverage": ["Your streams follow {topic}"], "gaps": ["No regulatory channel"], "overlaps": [],
             "recommendation": "Add a regulatory channel to your {topic} stream"},
))


def rename_described(args: dict[str, Any], ctx: ToolContext) -> str | None:
    """The approval's sentence: the stream's current name read as the user (a stream they cannot see is never named:
    then None, and the approval lists the fields)."""
    try:
        stream_id = int(args.get("stream_id"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    current = ResearchStream.objects.filter(pk=stream_id, owner=ctx.user).values_list("name", flat=True).first()
    new_name = " ".join(str(args.get("new_name") or "").split())[:200]
    if current is None or not new_name:
        return None
    return gettext("Rename “%(current)s” to “%(new)s”?") % {"current": current, "new": new_name}


@tool(requires_approval=True, permissions=["pagechat_demo.change_researchstream"], title=gettext_lazy("Rename stream"),
      describe=rename_described)
def rename_stream(stream_id: Annotated[int, Field(title=gettext_noop("Stream"))],
                  new_name: Annotated[str, Field(title=gettext_noop("New name"))], ctx: ToolContext) -> str | ToolResult:
    """Rename one of the user's research streams (the user approves it first)."""
    name = " ".join(new_name.split())[:200]
    if not name:
        return "The new name is empty."
    updated = ResearchStream.objects.filter(pk=stream_id, owner=ctx.user).update(name=name)
    if not updated:
        return f"You have no stream with id {stream_id}."
    # the page beside the chat shows the new name at once (pagechat:changed)
    return ToolResult(f"Renamed the stream to {name!r}.",
                      changes=[{"entity": "research_stream", "id": stream_id, "kind": "updated", "fields": {"name": name}}])


def streams_context(context: dict[str, Any], user: User) -> str:
    streams = list(ResearchStream.objects.filter(owner=user).prefetch_related("channels")[:20])
    if not streams:
        return "The user is on the research streams list. They have no streams yet."
    return "The user is on the research streams list. Their streams:\n\n" + "\n\n".join(describe_stream(s) for s in streams)


register_page(PageSpec(
    name="streams_list",
    identity="You are the Knowledge Horizon assistant on the research streams list. You help users plan and balance their portfolio of streams.",
    context_builder=streams_context,
    payloads=("stream_suggestions", "portfolio_insights"),
    tools=("rename_stream",),
    title=gettext_lazy("Research streams"),
    starters=(gettext_lazy("Suggest new stream ideas"), gettext_lazy("Analyze my portfolio"),
              gettext_lazy("Which streams do I have?")),
))
