"""Edit stream page, with tabs: semantic (schema proposals), retrieval (query proposals + a query preview
tool), presentation (category proposals). Accept applies a proposal to the form on the page."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from pages.demo.models import Article
from pages.registry import ClientAction, PageSpec, TabSpec, register_page
from pages.demo.common import describe_stream, owned_stream
from pages.demo.search import article_search
from payloads.registry import registry as payloads
from payloads.spec import PayloadSpec
from tools.registry import tool


class SchemaChanges(BaseModel):
    stream_name: str | None = None
    purpose: str | None = None
    topics: list[str] | None = None
    entities: list[str] | None = None


class SchemaProposal(BaseModel):
    proposed_changes: SchemaChanges
    confidence: str = "medium"
    reasoning: str = ""


class RetrievalProposal(BaseModel):
    queries: list[str] = Field(min_length=1, max_length=20)
    sources: list[str] = Field(default_factory=list)
    reasoning: str = ""


class Category(BaseModel):
    name: str = Field(min_length=1)
    description: str = ""


class PresentationCategories(BaseModel):
    categories: list[Category] = Field(min_length=1, max_length=15)
    reasoning: str = ""


payloads.register(PayloadSpec(
    type="schema_proposal",
    parse_marker="SCHEMA_PROPOSAL:",
    description="proposed changes to the stream's semantic space (name, purpose, topics, entities)",
    schema=SchemaProposal,
    summarize=lambda d: "Schema proposal: " + ", ".join(k for k, v in (d.get("proposed_changes") or {}).items() if v),
    example={"proposed_changes": {"purpose": "Track advances in {topic}", "topics": ["{topic}", "{topic} biomarkers"]},
             "confidence": "high", "reasoning": "Focus the stream on {topic}"},
))
payloads.register(PayloadSpec(
    type="retrieval_proposal",
    parse_marker="RETRIEVAL_PROPOSAL:",
    description="proposed search queries and sources for the stream's retrieval",
    schema=RetrievalProposal,
    summarize=lambda d: "Retrieval proposal: " + "; ".join(d.get("queries", [])[:2]),
    example={"queries": ["{topic} AND clinical trial", "{topic} biomarker"], "sources": ["PubMed"], "reasoning": "Cover studies and trials on {topic}"},
))
payloads.register(PayloadSpec(
    type="presentation_categories",
    parse_marker="PRESENTATION_CATEGORIES:",
    description="proposed categories to group the stream's articles in reports",
    schema=PresentationCategories,
    summarize=lambda d: "Categories: " + ", ".join(c.get("name", "") for c in d.get("categories", [])[:4]),
    example={"categories": [{"name": "{Topic} Clinical Trials", "description": "Trial results"},
                            {"name": "{Topic} Mechanisms", "description": "Basic science"},
                            {"name": "Regulatory", "description": "Approvals and guidance"}],
             "reasoning": "Group {topic} articles by kind of evidence"},
))


@tool
def preview_query(query: str, limit: int = 5) -> str:
    """Preview a retrieval query: how many corpus articles match it and the top titles."""
    found: list[Article] = article_search(query=query, limit=max(1, min(limit, 20)))
    if not found:
        return f"No articles match {query!r}."
    return f"{len(found)} top matches for {query!r}:\n" + "\n".join(f"- {a.title} ({a.journal}, {a.published_date:%Y})" for a in found)


def edit_context(context: dict[str, Any], user: Any) -> str:
    stream = owned_stream(user, context)
    tab = str(context.get("active_tab") or "semantic")
    notes = {
        "semantic": "The SEMANTIC SPACE tab defines what the stream is about: name, purpose, topics and entities.",
        "retrieval": "The RETRIEVAL tab defines how articles are found: search queries, sources and filters.",
        "presentation": "The PRESENTATION tab defines how reports group articles into categories.",
    }
    if stream is None:
        return "The user is on a research stream page, but the stream could not be found."
    return f"The user is editing a research stream, on the {tab.upper()} tab.\n{notes.get(tab, '')}\n\n{describe_stream(stream)}"


register_page(PageSpec(
    name="edit_research_stream",
    identity="You are the Knowledge Horizon assistant on a research stream's settings. You propose concrete changes the user can accept into the form.",
    context_builder=edit_context,
    tabs={
        "semantic": TabSpec("semantic", payloads=("schema_proposal",)),
        "retrieval": TabSpec("retrieval", tools=("preview_query",), payloads=("retrieval_proposal",)),
        "presentation": TabSpec("presentation", payloads=("presentation_categories",)),
    },
    client_actions=(ClientAction("switch_tab", "Switch the stream page to another tab", ("tab",)),),
))
