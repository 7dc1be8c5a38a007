"""Home page: the create-a-research-stream conversation (seed 000): chips, a form payload, a server action."""
from __future__ import annotations

import json
from typing import Any, Literal

from django.contrib.auth.models import User
from django.db import transaction
from django.utils.translation import gettext, gettext_lazy, gettext_noop, ngettext
from pydantic import BaseModel, Field

from pages.demo.common import REFINEMENTS, THERAPEUTIC_AREAS
from pages.demo.models import Channel, Report, ReportFrequency, ResearchStream
from pages.demo.report_run import TEST_REPORT_ACTION, report_test_button
from pages.registry import PageSpec, ServerAction, ServerActionResult, register_page
from payloads.registry import registry as payloads
from payloads.spec import PayloadSpec


class ChannelSpec(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    type: Literal["scientific", "clinical", "regulatory", "news"] = "scientific"
    keywords: list[str] = Field(default_factory=list, max_length=30)


class ResearchStreamForm(BaseModel):
    stream_name: str = Field(min_length=1, max_length=200)
    purpose: str = Field(default="", max_length=2000)
    report_frequency: Literal["daily", "weekly", "biweekly", "monthly"] = "weekly"
    channels: list[ChannelSpec] = Field(default_factory=list, max_length=10)


payloads.register(PayloadSpec(
    type="research_stream_form",
    title=gettext_lazy("Research stream preview"),
    parse_marker="RESEARCH_STREAM_FORM:",
    description="a proposed research stream configuration to preview before creating it",
    llm_instructions=(
        "Use it once you know the user's research area. If they have not said which area yet, ask first and offer "
        "SUGGESTED_VALUES: " + json.dumps(THERAPEUTIC_AREAS) + ". With the form, offer the create_stream server action "
        "with the same data and these refinement chips: SUGGESTED_VALUES: " + json.dumps(REFINEMENTS) + ". When the user "
        "wants to change one thing (e.g. the name), ask for that value with a few suggestions as chips instead of "
        "proposing the whole form again; propose the updated form once they have chosen."
    ),
    schema=ResearchStreamForm,
    summarize=lambda d: gettext("Stream form: %(name)s (%(channels)s, %(frequency)s)") % {
        "name": d.get("stream_name", "?"), "frequency": _frequency_shown(str(d.get("report_frequency", "?"))),
        "channels": ngettext("%(count)d channel", "%(count)d channels", len(d.get("channels") or [])) % {"count": len(d.get("channels") or [])}},
    # its words are marked for the catalogs: the offline model writes the proposal in the user's language (keywords
    # stay: they search the corpus)
    example={
        "stream_name": gettext_noop("{Topic} Intelligence"),
        "purpose": gettext_noop("Monitor {topic}: new findings, trials and approvals"),
        "report_frequency": "weekly",
        "channels": [
            {"name": gettext_noop("{Topic} Studies"), "type": "scientific", "keywords": ["{topic}"]},
            {"name": gettext_noop("{Topic} Trials"), "type": "clinical", "keywords": ["{topic}", "clinical trial"]},
        ],
    },
))


def create_stream(data: dict[str, Any], user: User, context: dict[str, Any]) -> ServerActionResult:
    """Create the stream the user accepted, as that user."""
    form = ResearchStreamForm.model_validate(data)
    with transaction.atomic():
        stream = ResearchStream.objects.create(
            owner=user, name=form.stream_name, purpose=form.purpose, report_frequency=form.report_frequency,
            semantic={"topics": sorted({k for c in form.channels for k in c.keywords})[:20], "entities": [], "scope": form.purpose},
        )
        Channel.objects.bulk_create([Channel(stream=stream, name=c.name, type=c.type, keywords=c.keywords) for c in form.channels])
    url = stream.get_absolute_url()
    return ServerActionResult(
        message=gettext("✓ Success! Created **%(name)s**. The stream is now active and will generate %(frequency)s reports.")
        % {"name": stream.name, "frequency": stream.get_report_frequency_display().lower()},
        suggested_actions=[
            {"label": gettext("View stream"), "action": "navigate", "handler": "client", "data": {"route": url}, "style": "primary"},
            report_test_button(stream),
            {"label": gettext("Create another"), "action": "restart", "handler": "client", "style": "secondary"},
            {"label": gettext("Close"), "action": "close", "handler": "client", "style": "secondary"},
        ],
        refresh=True,
        changes=[{"entity": "research_stream", "id": stream.pk, "kind": "created", "fields": {"name": stream.name}}],
    )


def home_context(context: dict[str, Any], user: User) -> str:
    """The situation, then what the page shows as `Key: value` facts (the offline model answers "how many streams
    do I have?" from them; a hosted model reads them the same way). The keys stay English (models find the facts by
    them; the offline model shows them translated), the values are in the user's language, as the page shows them."""
    streams = list(ResearchStream.objects.owned_by(user).order_by("-updated_at").values_list("name", "report_frequency")[:5])
    count = ResearchStream.objects.owned_by(user).count() if len(streams) == 5 else len(streams)
    reports = Report.objects.owned_by(user).count()
    recent = "; ".join(f"{name} ({_frequency_shown(frequency)})" for name, frequency in streams)
    return "\n".join([
        f"The user is on the home page. They have {count} research stream(s) and {reports} report(s).",
        f"Page: {gettext('Home')}",
        "Research streams: " + (gettext("%(count)s (the latest: %(streams)s)") % {"count": count, "streams": recent} if recent else str(count)),
        f"Reports: {reports}",
    ])


def _frequency_shown(value: str) -> str:
    """A report frequency as the page shows it, in a sentence ("biweekly", German "zweiwöchentlich")."""
    return str(ReportFrequency(value).label).lower() if value in ReportFrequency.values else value


register_page(PageSpec(
    name="home",
    identity=(
        "You are the assistant of Knowledge Horizon, a biomedical research intelligence platform. On the home page "
        "you help users set up research streams: ask about their area, propose a configuration, and create it."
    ),
    context_builder=home_context,
    payloads=("research_stream_form",),
    server_actions=(ServerAction("create_stream", "Create the research stream from the proposed research stream form", create_stream,
                                 ("stream_name", "purpose", "report_frequency", "channels"),
                                 permissions=["pagechat_demo.add_researchstream"]), TEST_REPORT_ACTION),
    title=gettext_lazy("Home"),
    starters=(gettext_lazy("Create a research stream"), gettext_lazy("How many streams do I have?"),
              gettext_lazy("How many reports do I have?"), gettext_lazy("What can you do here?")),
))
