"""Server-rendered pages of the demo site. Each page sets `page_name` and `chat_context` for the chat tray.

Contract of `chat_context` (JSON-ready dict): always `current_page` (== page_name) and `current_route`
(the path + query string); entity pages add `entity_type` / `entity_id`; the rest is page-specific and listed
in each view's docstring. Lists in the context are capped so a page never ships an unbounded prompt.
"""
from __future__ import annotations

import re
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_http_methods

from pages.demo.forms import DEFAULT_TAB, TABS, NewStreamForm
from pages.demo.models import Article, Report, ResearchStream
from pages.demo.search import article_get

CONTEXT_LIST_CAP = 50
_ABSTRACT_SECTION = re.compile(r"\b(BACKGROUND|METHODS|RESULTS|CONCLUSIONS):\s*")


def render_page(
    request: HttpRequest,
    template: str,
    *,
    page_name: str,
    nav: str,
    chat_context: dict[str, Any] | None = None,
    status: int = 200,
    **extra: Any,
) -> HttpResponse:
    """Render `template` with the tray variables (`page_name`, `chat_context`) and the active nav section."""
    context = {
        "current_page": page_name,
        "current_route": request.get_full_path(),
        **(chat_context or {}),
    }
    return render(
        request, template, {"page_name": page_name, "chat_context": context, "nav": nav, **extra}, status=status
    )


def _stream_summary(stream: ResearchStream) -> dict[str, Any]:
    """Compact JSON view of a stream for list contexts."""
    return {
        "id": stream.pk,
        "name": stream.name,
        "purpose": stream.purpose,
        "report_frequency": stream.report_frequency,
        "topics": stream.topics,
        "channel_count": getattr(stream, "channel_count", None),
        "url": stream.get_absolute_url(),
    }


def _report_summary(report: Report) -> dict[str, Any]:
    """Compact JSON view of a report for list contexts."""
    return {
        "id": report.pk,
        "title": report.title,
        "stream_id": report.stream_id,
        "stream_name": report.stream.name,
        "created_at": report.created_at.isoformat(),
        "article_count": getattr(report, "article_count", None),
        "url": report.get_absolute_url(),
    }


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Welcome page with the 'create a stream' prompt area. Context: stream_count, report_count."""
    streams = ResearchStream.objects.owned_by(request.user)
    reports = Report.objects.owned_by(request.user).select_related("stream")
    return render_page(
        request,
        "pages/home.html",
        page_name="home",
        nav="home",
        chat_context={"stream_count": streams.count(), "report_count": reports.count()},
        recent_streams=streams.annotate(channel_count=Count("channels"))[:4],
        recent_reports=reports[:4],
        # in the page's language, the words the chip sends too: the assistant answers in it (the offline model reads it)
        prompt_examples=[
            (gettext("Oncology"), gettext("Help me create a research stream about oncology research")),
            (gettext("Cardiology"), gettext("Help me create a research stream about cardiovascular research")),
            (gettext("Neurology"), gettext("Help me create a research stream about neuroscience research")),
            (gettext("Gene editing"), gettext("Help me create a research stream about CRISPR gene editing")),
        ],
    )


@login_required
def streams_list(request: HttpRequest) -> HttpResponse:
    """The user's streams. Context: stream_count, streams [{id, name, purpose, report_frequency, topics, channel_count, url}]."""
    streams = list(
        ResearchStream.objects.owned_by(request.user).annotate(
            channel_count=Count("channels", distinct=True), report_count=Count("reports", distinct=True)
        )
    )
    return render_page(
        request,
        "pages/streams_list.html",
        page_name="streams_list",
        nav="streams",
        chat_context={
            "stream_count": len(streams),
            "streams": [_stream_summary(stream) for stream in streams[:CONTEXT_LIST_CAP]],
        },
        streams=streams,
    )


@login_required
@require_http_methods(["GET", "POST"])
def new_stream(request: HttpRequest) -> HttpResponse:
    """Manual stream creation; POST creates and redirects to the new stream's edit page. Context: entity_type."""
    if request.method == "POST" and not request.user.has_perm("pagechat_demo.add_researchstream"):
        raise PermissionDenied  # the same permission the assistant's create_stream action needs
    form = NewStreamForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        stream = form.save(owner=request.user)
        messages.success(request, gettext("Created “%(name)s”. Refine it below, or ask the assistant for suggestions.") % {"name": stream.name})
        return redirect(stream.get_absolute_url())
    return render_page(
        request,
        "pages/new_stream.html",
        page_name="new_stream",
        nav="streams",
        chat_context={"entity_type": "research_stream"},
        form=form,
        status=400 if form.is_bound else 200,
    )


def _tool_fields() -> list[dict[str, str]]:
    """Every edit tab's form fields, for the page's `fill_field` frontend tool: name, tab, widget id, label (the active
    language). The tool fills a field of another tab by switching to it first."""
    return [
        {"name": name, "tab": tab.key, "id": str(field.widget.attrs.get("id", f"id_{name}")), "label": str(field.label)}
        for tab in TABS.values()
        for name, field in tab.form_class.base_fields.items()
    ]


@login_required
@require_http_methods(["GET", "POST"])
def stream_edit(request: HttpRequest, stream_id: int) -> HttpResponse:
    """Stream detail + edit, one form per tab (?tab=semantic|retrieval|presentation; unknown -> semantic).

    POST saves the tab's form and redirects back to the same tab (post/redirect/get).
    Context: entity_type="research_stream", entity_id, stream_id, active_tab, current_schema (ResearchStream.as_schema()).
    """
    # Someone else's stream is a 404, exactly like a missing one: existence must not leak.
    stream = get_object_or_404(ResearchStream.objects.owned_by(request.user), pk=stream_id)
    tab_key = request.POST.get("tab") if request.method == "POST" else request.GET.get("tab")
    tab = TABS.get(tab_key or DEFAULT_TAB) or TABS[DEFAULT_TAB]
    if request.method == "POST":
        if not request.user.has_perm("pagechat_demo.change_researchstream"):
            raise PermissionDenied  # the same permission the stream's chat page needs
        form = tab.form_class(request.POST)
        if form.is_valid():
            with transaction.atomic():
                form.apply(stream)
            messages.success(request, gettext("Saved %(tab)s settings.") % {"tab": tab.title.lower()})
            return HttpResponseRedirect(f"{stream.get_absolute_url()}?tab={tab.key}")
    else:
        form = tab.form_class(initial=tab.form_class.initial_for(stream))
    return render_page(
        request,
        "pages/stream_edit.html",
        page_name="edit_research_stream",
        nav="streams",
        chat_context={
            "entity_type": "research_stream",
            "entity_id": stream.pk,
            "stream_id": stream.pk,
            "active_tab": tab.key,
            "current_schema": stream.as_schema(),
        },
        status=400 if form.is_bound else 200,
        stream=stream,
        tabs=list(TABS.values()),
        active_tab=tab,
        form=form,
        tool_fields=_tool_fields(),
        channels=list(stream.channels.all()),
        report_count=stream.reports.count(),
    )


@login_required
def reports_list(request: HttpRequest) -> HttpResponse:
    """The user's reports, optionally for one stream (?stream=<id>, must be the user's).

    Context: report_count, reports [{id, title, stream_id, stream_name, created_at, article_count, url}], stream_id (when filtered).
    """
    reports = Report.objects.owned_by(request.user).select_related("stream").annotate(article_count=Count("articles"))
    streams = ResearchStream.objects.owned_by(request.user)
    selected: ResearchStream | None = None
    chat_context: dict[str, Any] = {}
    stream_param = request.GET.get("stream", "")
    if stream_param:
        if not stream_param.isdigit():
            raise Http404("No such stream.")
        selected = get_object_or_404(streams, pk=int(stream_param))
        reports = reports.filter(stream=selected)
        chat_context["stream_id"] = selected.pk
    # the filters the assistant's apply_filters action sends the page to
    text = request.GET.get("q", "").strip()[:300]
    if text:
        reports = reports.filter(Q(title__icontains=text) | Q(summary__icontains=text))
        chat_context["query"] = text
    for param, lookup in (("year_from", "created_at__year__gte"), ("year_to", "created_at__year__lte")):
        value = request.GET.get(param, "")
        if value:
            if not value.isdigit():
                raise Http404("Bad year.")
            reports = reports.filter(**{lookup: int(value)})
            chat_context[param] = int(value)
    report_list = list(reports)
    chat_context.update(
        report_count=len(report_list),
        reports=[_report_summary(report) for report in report_list[:CONTEXT_LIST_CAP]],
    )
    return render_page(
        request,
        "pages/reports_list.html",
        page_name="reports",
        nav="reports",
        chat_context=chat_context,
        reports=report_list,
        streams=streams,
        selected_stream=selected,
    )


@login_required
def report_detail(request: HttpRequest, report_id: int) -> HttpResponse:
    """One report with its articles (page 'reports').

    Context: entity_type="report", entity_id, report_id, report_title, stream_id, stream_name,
    articles [{external_id, title, journal, published_date, authors, topic, keywords}].
    """
    report = get_object_or_404(Report.objects.owned_by(request.user).select_related("stream"), pk=report_id)
    articles = list(report.articles.order_by("-published_date", "external_id"))
    return render_page(
        request,
        "pages/report_detail.html",
        page_name="reports",
        nav="reports",
        chat_context={
            "entity_type": "report",
            "entity_id": report.pk,
            "report_id": report.pk,
            "report_title": report.title,
            "stream_id": report.stream_id,
            "stream_name": report.stream.name,
            "articles": [article.as_card() for article in articles[:CONTEXT_LIST_CAP]],
        },
        report=report,
        articles=articles,
    )


@login_required
def article_detail(request: HttpRequest, external_id: str) -> HttpResponse:
    """One article of the shared corpus (page 'reports'); ?report=<id> (the user's) adds a back link.

    Context: entity_type="article", entity_id (pk), article_id (external id), article {as_card()}, report_id (when given).
    """
    article: Article | None = article_get(external_id=external_id)
    if article is None:
        raise Http404("No such article.")
    chat_context: dict[str, Any] = {
        "entity_type": "article",
        "entity_id": article.pk,
        "article_id": article.external_id,
        "article": article.as_card(),
    }
    report = None
    report_param = request.GET.get("report", "")
    if report_param.isdigit():
        # A report id the user doesn't own is ignored (no back link), not an error: the article itself is public.
        report = Report.objects.owned_by(request.user).filter(pk=int(report_param)).first()
        if report is not None:
            chat_context["report_id"] = report.pk
    return render_page(
        request,
        "pages/article_detail.html",
        page_name="reports",
        nav="reports",
        chat_context=chat_context,
        article=article,
        abstract_sections=split_abstract(article.abstract),
        report=report,
        related=_related_articles(article),
    )


def split_abstract(abstract: str) -> list[tuple[str, str]]:
    """[(label, text)] from a structured abstract ('BACKGROUND: ... METHODS: ...'); one unlabeled part otherwise."""
    parts = _ABSTRACT_SECTION.split(abstract)
    if len(parts) < 3:
        return [("", abstract)]
    sections = [("", parts[0].strip())] if parts[0].strip() else []
    sections += [(label.capitalize(), text.strip()) for label, text in zip(parts[1::2], parts[2::2])]
    return sections


def _related_articles(article: Article, limit: int = 4) -> list[Article]:
    """A few other articles of the same topic sharing the first keyword (cheap, deterministic)."""
    related = Article.objects.filter(topic=article.topic).exclude(pk=article.pk)
    first_keyword = (article.keywords or [None])[0]
    if first_keyword:
        same = list(related.filter(keywords__icontains=first_keyword)[:limit])
        if same:
            return same
    return list(related[:limit])

