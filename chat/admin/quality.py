"""The admin's quality dashboard, /admin/pagechat/quality/: per day and per page, people's conversations, turns,
verdicts, feedback comments, tool calls and failures, errors by code, time to first text (p50/p95), tokens and cost,
for a period and a page, as charts with their numbers (chat.admin.quality_report computes them, chat.admin.charts draws them).

Registered on the proxy model `Quality` so the admin lists it among pagechat's models and serves it at the app's own
URL; it asks for the permission the run pages ask for (`pagechat.view_run` or `change_run`), as the cost report does.
"""
from __future__ import annotations

from datetime import date
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth import get_permission_codename
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.utils.safestring import SafeString
from django.utils.translation import gettext, gettext_lazy as _

from chat.admin.charts import Series, chart_figure
from chat.admin.quality_report import COMMENTS_SHOWN, Figures, Period, QualityReport, page_names, quality_report
from chat.models import Quality, Run

PERIODS = (7, 30, 90)  # the period choices, in days up to today
DEFAULT_PERIOD = 30
MAX_DAYS = 366  # a custom period is at most a year (a day per bar; the queries stay bounded)
NO_PAGE = "-"  # the filter's value for conversations on no page (their page is "")
TOP_ERROR_CODES = 6  # the errors chart stacks the most frequent codes; the rest are summed as "other"


class QualityFilter(forms.Form):
    """The dashboard's period (the last 7, 30 or 90 days, or from-to) and page."""

    period = forms.ChoiceField(label=_("Period"), required=False, choices=[
        *((str(d), _("Last %(days)d days") % {"days": d}) for d in PERIODS), ("custom", _("From - to"))])
    start = forms.DateField(label=_("From"), required=False, widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(label=_("To"), required=False, widget=forms.DateInput(attrs={"type": "date"}))
    page = forms.ChoiceField(label=_("Page"), required=False)

    def __init__(self, *args: Any, pages: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["page"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", _("All pages")), *((p or NO_PAGE, p or _("(no page)")) for p in pages)]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("period") == "custom":
            start, end = data.get("start"), data.get("end")
            if not start or not end:
                raise forms.ValidationError(_("Give both days of the period."))
            if end < start:
                raise forms.ValidationError(_("The period ends before it starts."))
            if (end - start).days + 1 > MAX_DAYS:
                raise forms.ValidationError(_("A period is at most %(days)d days.") % {"days": MAX_DAYS})
        return data

    def chosen(self) -> tuple[Period, str | None]:
        """The period and page asked for (the default month and every page when the form is not valid)."""
        if not self.is_valid():
            return Period.last_days(DEFAULT_PERIOD), None
        data = self.cleaned_data
        custom = data.get("period") == "custom"
        period = Period(data["start"], data["end"]) if custom else Period.last_days(int(data.get("period") or DEFAULT_PERIOD))
        page = data.get("page") or None
        return period, ("" if page == NO_PAGE else page)


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f} ms"


def _usd(value: Any) -> str:
    return "—" if value is None else f"{value:,.4f}"


def _day_label(day: date, period: Period) -> str:
    return day.strftime("%m-%d") if period.first.year == period.last.year else day.isoformat()


def quality_charts(report: QualityReport) -> list[SafeString]:
    """The dashboard's charts, per day of the period, each with its table."""
    days = [day for day, _ in report.by_day]
    figures = [f for _, f in report.by_day]
    labels = [_day_label(day, report.period) for day in days]
    day = gettext("Day")

    def chart(chart_id: str, title: str, series: list[Series], kind: Any = "bars", **kw: Any) -> SafeString:
        return chart_figure(chart_id=f"pagechat-quality-{chart_id}", title=title, categories=labels, series=series, kind=kind,
                            category_label=day, **kw)

    codes = report.error_codes[:TOP_ERROR_CODES]
    error_series = [Series(code, [f.errors.get(code, 0) for f in figures]) for code in codes]
    if len(report.error_codes) > TOP_ERROR_CODES:
        rest = set(report.error_codes[TOP_ERROR_CODES:])
        error_series.append(Series(gettext("other"), [sum(n for c, n in f.errors.items() if c in rest) for f in figures]))
    return [
        chart("turns", gettext("Conversations and turns per day"), [
            Series(gettext("conversations"), [f.conversations for f in figures]), Series(gettext("turns"), [f.turns for f in figures])]),
        chart("feedback", gettext("Thumbs up and down per day"), [
            Series(gettext("thumbs up"), [f.thumbs_up for f in figures]), Series(gettext("thumbs down"), [f.thumbs_down for f in figures]),
            Series(gettext("comments"), [f.comments for f in figures])]),
        chart("tools", gettext("Tool calls and failures per day"), [
            Series(gettext("tool calls"), [f.tool_calls for f in figures]), Series(gettext("failed"), [f.tool_failures for f in figures])]),
        chart("errors", gettext("Errors per day, by code"), error_series or [Series(gettext("errors"), [0 for _ in figures])], "stacked"),
        chart("first-text", gettext("Time to first text per day (ms)"), [
            Series("p50", [f.first_text_p50_ms for f in figures]), Series("p95", [f.first_text_p95_ms for f in figures])], "lines",
            number=lambda v: "—" if v is None else f"{v:,.0f}"),
        chart("tokens", gettext("Tokens per day"), [
            Series(gettext("input"), [f.input_tokens for f in figures]), Series(gettext("output"), [f.output_tokens for f in figures]),
            Series(gettext("cache read"), [f.cache_read_tokens for f in figures]),
            Series(gettext("cache write"), [f.cache_write_tokens for f in figures])], "stacked"),
        chart("cost", gettext("Cost per day (USD)"), [Series(gettext("cost"), [None if f.cost_usd is None else float(f.cost_usd) for f in figures])]),
    ]


def page_chart(report: QualityReport) -> SafeString:
    """Turns, thumbs down and turns with an error on each page of the period (the most turns first)."""
    pages = [(name or gettext("(no page)"), f) for name, f in report.by_page]
    return chart_figure(chart_id="pagechat-quality-pages", title=gettext("Turns, thumbs down and errors per page"),
                        categories=[name for name, _ in pages], category_label=gettext("Page"), series=[
                            Series(gettext("turns"), [f.turns for _, f in pages]), Series(gettext("thumbs down"), [f.thumbs_down for _, f in pages]),
                            Series(gettext("errors"), [f.error_count for _, f in pages])])


def summary(total: Figures) -> list[tuple[str, str]]:
    """The period's totals, as (label, value) pairs."""
    rated = total.thumbs_up + total.thumbs_down
    return [
        (gettext("Conversations"), f"{total.conversations:,}"),
        (gettext("Turns"), f"{total.turns:,}"),
        (gettext("Thumbs up / down"), f"{total.thumbs_up:,} / {total.thumbs_down:,}"
         + (f" ({total.thumbs_up / rated:.0%} {gettext('up')})" if rated else "")),
        (gettext("Feedback comments"), f"{total.comments:,}"),
        (gettext("Tool calls / failed"), f"{total.tool_calls:,} / {total.tool_failures:,}"),
        (gettext("Turns with an error"), f"{total.error_count:,}" + (f" ({total.error_count / total.turns:.1%})" if total.turns else "")),
        (gettext("Time to first text p50 / p95"), f"{_ms(total.first_text_p50_ms)} / {_ms(total.first_text_p95_ms)}"),
        (gettext("Tokens"), f"{total.tokens:,}"),
        (gettext("Cost (USD)"), _usd(total.cost_usd)),
    ]


@admin.register(Quality)
class QualityAdmin(admin.ModelAdmin):
    """/admin/pagechat/quality/ is the dashboard; the proxy has no other page (nothing to add, change or delete)."""

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Who may view the runs may view their sums: `pagechat.view_run` or `change_run` (superusers have both)."""
        opts = Run._meta
        return any(request.user.has_perm(f"{opts.app_label}.{get_permission_codename(action, opts)}") for action in ("view", "change"))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list[Any]:
        name = f"{self.opts.app_label}_{self.opts.model_name}_changelist"  # the admin index links there
        return [path("", self.admin_site.admin_view(self.dashboard_view), name=name)]

    def dashboard_view(self, request: HttpRequest) -> HttpResponse:
        """The dashboard; 403 for staff who may not view runs (`admin_view` only asks for `is_staff`)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        pages = page_names()
        form = QualityFilter(request.GET or None, pages=pages)
        period, page = form.chosen()
        report = quality_report(period=period, page=page)
        query = {"period": request.GET.get("period", ""), "start": request.GET.get("start", ""), "end": request.GET.get("end", "")}
        by_page = [(name, "?" + urlencode({**query, "page": name or NO_PAGE}), figures) for name, figures in report.by_page]
        context = {
            **self.admin_site.each_context(request), "title": gettext("Quality dashboard"), "opts": self.opts, "form": form,
            "report": report, "summary": summary(report.total), "charts": quality_charts(report), "by_page": by_page,
            "page_chart": page_chart(report) if report.by_page else None,
            "comments": [(c, reverse("admin:pagechat_conversation_change", args=[c.conversation_id], current_app=self.admin_site.name))
                         for c in report.comments],
            "comments_shown": COMMENTS_SHOWN, "time_zone": timezone.get_current_timezone_name(),
        }
        return TemplateResponse(request, "admin/pagechat/quality.html", context)
