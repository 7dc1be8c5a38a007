"""Edit stream page, with tabs: semantic (schema proposals), retrieval (query proposals + a query preview
tool), presentation (category proposals). Accept applies a proposal to the form on the page."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.urls import reverse
from django.utils.translation import gettext, gettext_lazy, ngettext
from pydantic import BaseModel, Field

from pages.demo.common import describe_stream, owned_stream
from pages.demo.forms import TABS, StreamPartForm
from pages.demo.models import Article, ResearchStream
from pages.demo.report_run import TEST_REPORT_ACTION
from pages.demo.search import article_search
from pages.registry import ActionFailed, ClientAction, PageSpec, ServerAction, ServerActionResult, TabSpec, register_page
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
    title=gettext_lazy("Schema proposal"),
    parse_marker="SCHEMA_PROPOSAL:",
    description="proposed changes to the stream's semantic space (name, purpose, topics, entities)",
    schema=SchemaProposal,
    summarize=lambda d: gettext("Schema proposal: %(fields)s") % {"fields": ", ".join(k for k, v in (d.get("proposed_changes") or {}).items() if v)},
    example={"proposed_changes": {"purpose": "Track advances in {topic}", "topics": ["{topic}", "{topic} biomarkers"]},
             "confidence": "high", "reasoning": "Focus the stream on {topic}"},
))
payloads.register(PayloadSpec(
    type="retrieval_proposal",
    title=gettext_lazy("Retrieval proposal"),
    parse_marker="RETRIEVAL_PROPOSAL:",
    description="proposed search queries and sources for the stream's retrieval",
    schema=RetrievalProposal,
    summarize=lambda d: gettext("Retrieval proposal: %(queries)s") % {"queries": "; ".join(d.get("queries", [])[:2])},
    example={"queries": ["{topic} AND clinical trial", "{topic} biomarker"], "sources": ["PubMed"], "reasoning": "Cover studies and trials on {topic}"},
))
payloads.register(PayloadSpec(
    type="presentation_categories",
    title=gettext_lazy("Presentation categories"),
    parse_marker="PRESENTATION_CATEGORIES:",
    description="proposed categories to group the stream's articles in reports",
    schema=PresentationCategories,
    summarize=lambda d: gettext("Categories: %(names)s") % {"names": ", ".join(c.get("name", "") for c in d.get("categories", [])[:4])},
    example={"categories": [{"name": "{Topic} Clinical Trials", "description": "Trial results"},
                            {"name": "{Topic} Mechanisms", "description": "Basic science"},
                            {"name": "Regulatory", "description": "Approvals and guidance"}],
             "reasoning": "Group {topic} articles by kind of evidence"},
))


class ValidationResults(BaseModel):
    valid: bool = True
    errors: list[str] = Field(default_factory=list, max_length=30)
    warnings: list[str] = Field(default_factory=list, max_length=30)
    suggestions: list[str] = Field(default_factory=list, max_length=30)


class QuerySuggestion(BaseModel):
    query: str = Field(min_length=1, max_length=500)
    explanation: str = ""
    alternatives: list[str] = Field(default_factory=list, max_length=10)


payloads.register(PayloadSpec(
    type="validation_results",
    title=gettext_lazy("Validation results"),
    parse_marker="VALIDATION_RESULTS:",
    description="a check for problems: errors, warnings and suggestions",
    schema=ValidationResults,
    summarize=lambda d: (gettext("Validation: valid (%(errors)s, %(warnings)s)") if d.get("valid") else gettext(
        "Validation: problems found (%(errors)s, %(warnings)s)")) % {
        "errors": ngettext("%(count)d error", "%(count)d errors", len(d.get("errors") or [])) % {"count": len(d.get("errors") or [])},
        "warnings": ngettext("%(count)d warning", "%(count)d warnings", len(d.get("warnings") or [])) % {"count": len(d.get("warnings") or [])}},
    example={"valid": False, "errors": [], "warnings": ["No retrieval query mentions {topic}"], "suggestions": ["Add a query for {topic}"]},
))
payloads.register(PayloadSpec(
    type="query_suggestion",
    title=gettext_lazy("Query suggestion"),
    parse_marker="QUERY_SUGGESTION:",
    description="one search query suggestion to find articles, with alternatives",
    schema=QuerySuggestion,
    summarize=lambda d: (gettext("Query suggestion: %(query)s") % {"query": d.get("query", "")})[:120],
    example={"query": "{topic} AND (trial OR cohort)", "explanation": "Finds clinical evidence on {topic}",
             "alternatives": ["{topic} review", "{topic} biomarker"]},
))

# Which tab's settings a proposal changes: the key only that proposal has -> (tab, how its data maps onto the form).
_PROPOSAL_FIELDS: dict[str, tuple[str, dict[str, str]]] = {
    "proposed_changes": ("semantic", {"stream_name": "name", "purpose": "purpose", "topics": "topics", "entities": "entities"}),
    "queries": ("retrieval", {"queries": "queries", "sources": "sources"}),
    "categories": ("presentation", {"categories": "categories"}),
}


def _form_data(form_class: type[StreamPartForm], values: dict[str, Any]) -> dict[str, Any]:
    """Form data as a browser would post it (lists as lines), so the page's own validation runs on it."""
    fields = form_class.base_fields
    return {name: fields[name].prepare_value(value) if name in fields else value for name, value in values.items()}


def update_config(data: dict[str, Any], user: Any, context: dict[str, Any]) -> ServerActionResult:
    """Save an accepted proposal (schema, retrieval or categories) into the stream's settings, validated by the tab's form."""
    stream = owned_stream(user, context)
    if stream is None:
        raise ActionFailed(gettext("This stream no longer exists (or is not yours)."))
    key = next((k for k in _PROPOSAL_FIELDS if k in data), None)
    if key is None:
        raise ActionFailed(gettext("This is not a proposal I can apply to the stream's settings."))
    tab_key, mapping = _PROPOSAL_FIELDS[key]
    tab = TABS[tab_key]
    proposed = data["proposed_changes"] if key == "proposed_changes" else data
    if not isinstance(proposed, dict):
        raise ActionFailed(gettext("The proposal is malformed."))
    values = dict(tab.form_class.initial_for(stream))
    changed = [form_name for field, form_name in mapping.items() if proposed.get(field) not in (None, [], "")]
    values.update({form_name: proposed[field] for field, form_name in mapping.items() if proposed.get(field) not in (None, [], "")})
    form = tab.form_class(data=_form_data(tab.form_class, values))
    if not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(str(e) for e in errs)}" for name, errs in form.errors.items())
        raise ActionFailed(gettext("The proposal does not pass the %(tab)s form's checks (%(problems)s).") % {"tab": tab.title.lower(), "problems": problems})
    form.apply(stream)
    return ServerActionResult(
        message=gettext("✓ Saved the %(tab)s settings of **%(name)s** (%(fields)s updated).")
        % {"tab": tab.title.lower(), "name": stream.name, "fields": ", ".join(changed) or gettext("no fields")},
        suggested_actions=[{"label": gettext("Close"), "action": "close", "handler": "client", "style": "secondary"}],
        refresh=True,
        changes=[{"entity": "research_stream", "id": stream.pk, "kind": "updated",
                  "fields": {"name": stream.name} if "name" in changed else None}],
    )


def delete_entity(data: dict[str, Any], user: Any, context: dict[str, Any]) -> ServerActionResult:
    """Delete the user's research stream; the first click only asks to confirm (with a second, signed button)."""
    if data.get("entity_type", "research_stream") != "research_stream":
        raise ActionFailed(gettext("Only research streams can be deleted here."))
    try:
        stream_id = int(data.get("entity_id") or 0)
    except (TypeError, ValueError):
        raise ActionFailed(gettext("This button does not name a stream.")) from None
    stream = ResearchStream.objects.filter(pk=stream_id, owner=user).first()
    if stream is None:
        raise ActionFailed(gettext("This stream no longer exists (or is not yours)."))
    if data.get("confirmed") is not True:
        reports, channels = stream.reports.count(), stream.channels.count()
        return ServerActionResult(
            message=gettext("Delete **%(name)s** with its %(channels)s and %(reports)s? This cannot be undone.") % {
                "name": stream.name,
                "channels": ngettext("%(count)d channel", "%(count)d channels", channels) % {"count": channels},
                "reports": ngettext("%(count)d report", "%(count)d reports", reports) % {"count": reports}},
            suggested_actions=[
                {"label": gettext("Yes, delete it"), "action": "delete_entity", "handler": "server", "style": "warning",
                 "data": {"entity_type": "research_stream", "entity_id": stream.pk, "confirmed": True}},
                {"label": gettext("Keep it"), "action": "close", "handler": "client", "style": "secondary"},
            ],
        )
    name, pk = stream.name, stream.pk
    stream.delete()
    return ServerActionResult(
        message=gettext("✓ Deleted **%(name)s**.") % {"name": name},
        suggested_actions=[{"label": gettext("Go to my streams"), "action": "navigate", "handler": "client",
                            "data": {"route": reverse("pages:streams_list")}, "style": "primary"}],
        refresh=True,
        changes=[{"entity": "research_stream", "id": pk, "kind": "deleted"}],
    )


@tool(title=gettext_lazy("Preview query"))
def preview_query(query: str, limit: int = 5) -> str:
    """Preview a retrieval query: how many corpus articles match it and the top titles."""
    found: list[Article] = article_search(query=query, limit=max(1, min(limit, 20)))
    if not found:
        return gettext("No articles match %(query)s.") % {"query": repr(query)}  # in the user's language, as the tray shows it
    head = ngettext("%(count)d top match for %(query)s:", "%(count)d top matches for %(query)s:", len(found)) % {"count": len(found), "query": repr(query)}
    return head + "\n" + "\n".join(f"- {a.title} ({a.journal}, {a.published_date:%Y})" for a in found)


def edit_context(context: dict[str, Any], user: User) -> str:
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
    # a rename approved in the chat shows in the page's heading, title and (untouched) name field at once (edit_stream.js)
    tools=("rename_stream",),
    payloads=("validation_results",),
    tabs={
        # titled as the page's own tabs (forms.TABS, whose titles the catalogs translate): answers name the tab a person sees
        "semantic": TabSpec("semantic", payloads=("schema_proposal",), title=gettext_lazy(TABS["semantic"].title_text)),
        "retrieval": TabSpec("retrieval", tools=("preview_query",), payloads=("retrieval_proposal", "query_suggestion"),
                             title=gettext_lazy(TABS["retrieval"].title_text)),
        "presentation": TabSpec("presentation", payloads=("presentation_categories",),
                                title=gettext_lazy(TABS["presentation"].title_text)),
    },
    client_actions=(ClientAction("switch_tab", "Switch the stream page to another tab", ("tab",)),),
    server_actions=(
        ServerAction("update_config", "Save the proposed changes (schema proposal, retrieval proposal or presentation "
                     "categories) into this stream's settings", update_config, ("proposed_changes", "queries", "categories")),
        # its description shares no word with the proposals': a button to delete is never offered with them
        ServerAction("delete_entity", "Delete the entity this page shows, after the user confirms", delete_entity,
                     ("entity_type", "entity_id"), permissions=["pagechat_demo.delete_researchstream"]),
        TEST_REPORT_ACTION,
    ),
    permissions=["pagechat_demo.change_researchstream"],
    title=gettext_lazy("Stream settings"),
    starters=(gettext_lazy("What is this stream about?"), gettext_lazy("Validate this stream"),
              gettext_lazy("Run a test report"), gettext_lazy("What can you do here?")),
))
