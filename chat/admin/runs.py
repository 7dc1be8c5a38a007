"""Staff views of runs (with readable diagnostics and the cost report per user and day), tool calls, approvals and
server actions' counts."""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import DecimalField, F, QuerySet, Sum, Value
from django.db.models.functions import Coalesce, TruncDate
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.translation import gettext, gettext_lazy as _

from chat.admin.common import ReadOnlyMixin, RunTimes, usd
from chat.infra.display import pretty
from chat.models import ActionStat, PendingApproval, Run, ToolCall

_TOOL_CALL_INLINE_FIELDS: tuple[str, ...] = ("index", "name", "status", "duration_ms", "input", "output")

COST_COLUMNS = [("day", _("day")), ("user", _("user")), ("runs", _("turns")), ("input_tokens", _("input")),
                ("output_tokens", _("output")), ("cache_read_tokens", _("cache read")), ("cache_write_tokens", _("cache write")),
                ("cost", _("cost (USD)"))]

def usage_by_user_and_day(runs: QuerySet[Run], *, order: str = "-day") -> list[dict[str, Any]]:
    """Runs summed per (owner, UTC day); `order` names a column of COST_COLUMNS, `-` first for descending."""
    from django.db.models import Count

    key = order.lstrip("-")
    if key not in dict(COST_COLUMNS):
        order, key = "-day", "day"
    rows = (runs.annotate(day=TruncDate("created_at"), user=F("conversation__owner__username")).values("day", "user")
            .annotate(runs=Count("id"), input_tokens=Sum("input_tokens"), output_tokens=Sum("output_tokens"),
                      cache_read_tokens=Sum("cache_read_tokens"), cache_write_tokens=Sum("cache_write_tokens"),
                      cost=Coalesce(Sum("cost_usd"), Value(None, output_field=DecimalField())))
            .order_by(order, "user" if key != "user" else "-day"))
    return [dict(row) for row in rows]


class ToolCallInline(ReadOnlyMixin, admin.TabularInline):
    model = ToolCall
    extra = 0
    fields = _TOOL_CALL_INLINE_FIELDS
    readonly_fields = _TOOL_CALL_INLINE_FIELDS


@admin.register(Run)
class RunAdmin(RunTimes, ReadOnlyMixin, admin.ModelAdmin):
    # what a support person looks at first (7 columns); tokens, timings and diagnostics are on the run's page
    list_display = ["id", "created_at", "user", "outcome", "model", "duration", "cost"]
    list_filter = ["status", "provider", "model", "created_at", ("conversation__owner", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["id", "conversation__title", "conversation__owner__username", "error_message"]
    date_hierarchy = "created_at"
    list_select_related = ["conversation__owner"]
    inlines = [ToolCallInline]
    fieldsets = [
        (None, {"fields": ["id", "conversation", "status", "provider", "model", "error_code", "error_message"]}),
        (_("Usage and timings"), {"fields": ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd",
                                          "first_token", "duration", "created_at",
                                          "finished_at", "owner_process", "heartbeat_at", "last_seq"]}),
        (_("Diagnostics"), {"fields": ["d_settings", "d_tools", "d_system_prompt", "d_messages", "d_attachments", "d_context", "d_raw",
                                    "d_errors"]}),
    ]
    readonly_fields = [
        "id", "conversation", "status", "provider", "model", "error_code", "error_message", "input_tokens", "output_tokens",
        "cache_read_tokens", "cache_write_tokens", "cost_usd", "first_token", "duration", "created_at", "finished_at",
        "owner_process", "heartbeat_at", "last_seq",
        "d_settings", "d_tools", "d_system_prompt", "d_messages", "d_attachments", "d_context", "d_raw", "d_errors",
    ]

    @admin.display(description=_("user"), ordering="conversation__owner__username")
    def user(self, obj: Run) -> str:
        return obj.conversation.owner.get_username()

    @admin.display(description=_("page"), ordering="conversation__page")
    def page(self, obj: Run) -> str:
        return obj.conversation.page or "—"

    @admin.display(description=_("status"), ordering="status")
    def outcome(self, obj: Run) -> str:
        """The status, with the error code when the run failed."""
        return f"{obj.status} ({obj.error_code})" if obj.error_code else str(obj.status)

    @admin.display(description=_("cost (USD)"), ordering="cost_usd")
    def cost(self, obj: Run) -> str:
        return usd(obj.cost_usd)

    def get_urls(self) -> list[Any]:
        view = self.admin_site.admin_view(self.costs_view)
        return [path("costs/", view, name="pagechat_run_costs"), *super().get_urls()]

    def costs_view(self, request: HttpRequest) -> HttpResponse:
        """Tokens and cost summed per user and UTC day, sortable by any column (?o=<column>, `-` for descending);
        403 for staff who may not view runs (`admin_view` only asks for `is_staff`, the model pages ask for more)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        rows = usage_by_user_and_day(self.get_queryset(request), order=request.GET.get("o", "-day"))
        context = {**self.admin_site.each_context(request), "title": gettext("Cost per user and day"), "rows": rows,
                   "columns": COST_COLUMNS, "order": request.GET.get("o", "-day"), "opts": self.model._meta}
        return TemplateResponse(request, "admin/chat/run_costs.html", context)

    @admin.display(description=_("model settings"))
    def d_settings(self, obj: Run) -> str:
        d = obj.diagnostics or {}
        keys = ("model", "max_tokens", "max_iterations", "temperature", "page", "provider", "iterations", "usage", "cost", "timings")
        return pretty({k: d.get(k) for k in keys})

    @admin.display(description=_("tools"))
    def d_tools(self, obj: Run) -> str:
        return pretty((obj.diagnostics or {}).get("tools", []))

    @admin.display(description=_("system prompt"))
    def d_system_prompt(self, obj: Run) -> str:
        return pretty((obj.diagnostics or {}).get("system_prompt", ""))

    @admin.display(description=_("messages sent"))
    def d_messages(self, obj: Run) -> str:
        return pretty((obj.diagnostics or {}).get("messages", []))

    @admin.display(description=_("attachments sent"))
    def d_attachments(self, obj: Run) -> str:
        """The files the request carried (id, name, type, size; their bytes are not kept in diagnostics)."""
        return pretty((obj.diagnostics or {}).get("attachments", []))

    @admin.display(description=_("context"))
    def d_context(self, obj: Run) -> str:
        return pretty((obj.diagnostics or {}).get("context", {}))

    @admin.display(description=_("raw model output"))
    def d_raw(self, obj: Run) -> str:
        return pretty((obj.diagnostics or {}).get("raw_llm_response", []))

    @admin.display(description=_("parse errors / error"))
    def d_errors(self, obj: Run) -> str:
        d = obj.diagnostics or {}
        return pretty({"parse_errors": d.get("parse_errors", []), "error": d.get("error")})


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["id", "run", "index", "name", "status", "duration_ms", "created_at"]
    list_filter = ["name", "status"]
    search_fields = ["name", "tool_use_id"]
    readonly_fields = [f.name for f in ToolCall._meta.fields]


@admin.register(PendingApproval)
class PendingApprovalAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["id", "run", "tool_name", "approved", "created_at", "answered_at"]
    list_filter = ["approved", "tool_name"]


@admin.register(ActionStat)
class ActionStatAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Server actions by page: offered as buttons, clicked, and how the clicks ended (success rate of the clicks that ran)."""

    list_display = ["action", "page", "offered", "clicked", "click_rate", "succeeded", "failed", "rejected", "success_rate", "updated_at"]
    list_filter = ["page", "action"]
    search_fields = ["action", "page"]
    readonly_fields = [f.name for f in ActionStat._meta.fields]

    @admin.display(description=_("clicked / offered"))
    def click_rate(self, obj: ActionStat) -> str:
        return f"{obj.clicked / obj.offered:.0%}" if obj.offered else "—"

    @admin.display(description=_("success rate"))
    def success_rate(self, obj: ActionStat) -> str:
        """Succeeded out of the clicks that ran (refused clicks never ran: unknown, expired, altered or used buttons)."""
        ran = obj.succeeded + obj.failed
        return f"{obj.succeeded / ran:.0%}" if ran else "—"
