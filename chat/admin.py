"""Staff views of conversations, messages, runs (with readable diagnostics) and tool calls."""
from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import PermissionDenied
from django.db.models import DecimalField, F, QuerySet, Sum, Value
from django.db.models.functions import Coalesce, TruncDate
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join, linebreaks
from django.utils.safestring import mark_safe
from django.utils.translation import gettext, gettext_lazy as _, ngettext

from chat.attachments import attachment_summary
from chat.display import pretty
from chat.models import ActionStat, Conversation, Message, PendingApproval, Run, ToolCall
from chat.rendering import render_markdown
from chat.retention import conversation_export, user_conversations_remove

_MESSAGE_INLINE_FIELDS: tuple[str, ...] = (
    "role", "status", "replaced", "interaction_type", "content", "suggested_values", "suggested_actions", "custom_payload", "created_at")
_RUN_INLINE_FIELDS: tuple[str, ...] = (
    "id", "status", "provider", "model", "input_tokens", "output_tokens", "first_token", "duration", "created_at")
_TOOL_CALL_INLINE_FIELDS: tuple[str, ...] = ("index", "name", "status", "duration_ms", "input", "output")


def seconds(ms: float | None) -> str:
    """A duration for people: "0.42 s", "12.3 s", "—" when unknown (milliseconds are stored unrounded)."""
    if ms is None:
        return "—"
    return f"{ms / 1000:.2f} s" if ms < 10_000 else f"{ms / 1000:.1f} s"


class RunTimes:
    """Rounded timings of a run for lists, inlines and the detail page."""

    @admin.display(description=_("duration"), ordering="duration_ms")
    def duration(self, obj: Run) -> str:
        return seconds(obj.duration_ms)

    @admin.display(description=_("first token"), ordering="time_to_first_token_ms")
    def first_token(self, obj: Run) -> str:
        return seconds(obj.time_to_first_token_ms)


class ReadOnlyMixin:
    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False


INLINE_ROWS = 50  # a conversation's page lists its latest messages and runs, at most this many of each


class LatestRowsFormSet(BaseInlineFormSet):
    """An inline of the latest INLINE_ROWS rows, oldest first: a conversation of thousands of messages is a page of
    a known size (the message and run lists, filtered by conversation, have all of them)."""

    def get_queryset(self) -> QuerySet[Any]:
        if not hasattr(self, "_latest"):
            rows = super().get_queryset()
            self._latest = rows.filter(pk__in=list(rows.order_by("-pk").values_list("pk", flat=True)[:INLINE_ROWS])).order_by("pk")
        latest: QuerySet[Any] = self._latest
        return latest


class MessageInline(ReadOnlyMixin, admin.StackedInline):
    model = Message
    formset = LatestRowsFormSet
    extra = 0
    fields = _MESSAGE_INLINE_FIELDS
    readonly_fields = _MESSAGE_INLINE_FIELDS
    show_change_link = True


class RunInline(RunTimes, ReadOnlyMixin, admin.TabularInline):
    model = Run
    formset = LatestRowsFormSet
    extra = 0
    fields = _RUN_INLINE_FIELDS
    readonly_fields = _RUN_INLINE_FIELDS
    show_change_link = True
    fk_name = "conversation"


COST_COLUMNS = [("day", _("day")), ("user", _("user")), ("runs", _("turns")), ("input_tokens", _("input")),
                ("output_tokens", _("output")), ("cache_read_tokens", _("cache read")), ("cache_write_tokens", _("cache write")),
                ("cost", _("cost (USD)"))]


def _usd(value: Any) -> str:
    return "—" if value is None else f"{value:.6f}"


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


TRANSCRIPT_MESSAGES = 200  # a conversation's transcript on its admin page shows its latest messages, at most this many


def _role_label(message: Message) -> str:
    return str(gettext("Question") if message.role == Message.Role.USER else gettext("Answer"))


def _transcript_flags(message: Message) -> str:
    """What a staff reader should know beside the time: replaced, unfinished, feedback, tools used."""
    flags = []
    if message.replaced:
        flags.append(gettext("replaced by a regenerate"))
    if message.status != Message.Status.COMPLETE:
        flags.append(message.get_status_display())
    if message.stop_reason:
        flags.append(gettext("stopped at a limit: %(reason)s") % {"reason": message.stop_reason})
    if message.feedback:
        flags.append(gettext("feedback: %(verdict)s") % {"verdict": message.feedback})
    tools = [str(t.get("tool_name") or t.get("name") or "") for t in (message.tool_history or []) if isinstance(t, dict)]
    if any(tools):
        flags.append(gettext("tools: %(names)s") % {"names": ", ".join(t for t in tools if t)})
    return "".join(f" · {flag}" for flag in flags)


def _message_count(obj: Conversation) -> int:
    """How many messages the conversation has, counted once per page however many fields show it."""
    if not hasattr(obj, "_pagechat_message_count"):
        obj._pagechat_message_count = obj.messages.count()  # type: ignore[attr-defined]
    return int(obj._pagechat_message_count)  # type: ignore[attr-defined]


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ["id", "title", "owner", "page", "tokens", "cost", "updated_at"]
    search_fields = ["title", "owner__username", "messages__content"]
    readonly_fields = ["owner", "created_at", "updated_at", "pinned_at", "is_eval", "records", "transcript"]  # a pin is its owner's own arrangement
    fieldsets = [
        (None, {"fields": ["title", "page", "thread_id", "owner", "created_at", "updated_at", "pinned_at", "is_eval", "records"]}),
        (_("Transcript"), {"fields": ["transcript"]}),
    ]
    inlines = [MessageInline, RunInline]
    list_select_related = ["owner"]
    # is_eval: the conversations evals ran (chat.evals), apart from people's
    list_filter = ["page", "is_eval", "updated_at", ("owner", admin.RelatedOnlyFieldListFilter)]
    actions = ["export_owners_conversations", "delete_owners_conversations"]  # chat.admin_evals adds its own

    # A data-access or erasure request names a person: these actions take every conversation of the owners of the
    # selected ones (filter by owner, select one, run the action), not only the selected rows.

    @admin.display(description=_("Messages and runs"))
    def records(self, obj: Conversation) -> str:
        """How many messages and runs the conversation has, each count a link to all of them (the inlines below list
        the latest INLINE_ROWS)."""
        if obj.pk is None:
            return "—"
        messages_url = reverse("admin:pagechat_message_changelist") + f"?conversation__id__exact={obj.pk}"
        runs_url = reverse("admin:pagechat_run_changelist") + f"?conversation__id__exact={obj.pk}"
        n_messages, n_runs = _message_count(obj), obj.runs.count()
        return format_html(
            '<a href="{}">{}</a> · <a href="{}">{}</a>{}', messages_url,
            ngettext("%(count)d message", "%(count)d messages", n_messages) % {"count": n_messages}, runs_url,
            ngettext("%(count)d run", "%(count)d runs", n_runs) % {"count": n_runs},
            " " + gettext("(the latest %(count)d of each are listed below)") % {"count": INLINE_ROWS}
            if max(n_messages, n_runs) > INLINE_ROWS else "")

    @admin.display(description=_("Transcript"))
    def transcript(self, obj: Conversation) -> str:
        """The conversation as its owner read it, its latest TRANSCRIPT_MESSAGES messages: questions as text, answers
        as the tray renders them (the same sanitised HTML), replaced answers and feedback marked."""
        if obj.pk is None:
            return "—"
        latest = list(obj.messages.order_by("-id")[:TRANSCRIPT_MESSAGES])[::-1]
        rows = format_html_join("", "<div class=\"pagechat-transcript__message\"><h4>{} <small>{}{}</small></h4>{}</div>", (
            (_role_label(m), timezone.localtime(m.created_at).strftime("%Y-%m-%d %H:%M"), _transcript_flags(m),
             # answers: render_markdown's sanitised HTML; questions: escaped, in paragraphs
             mark_safe(render_markdown(m.content) if m.role == Message.Role.ASSISTANT else linebreaks(m.content, autoescape=True)))
            for m in latest))
        # fewer than a full page: nothing earlier (no second count of a long conversation's messages)
        earlier = _message_count(obj) - len(latest) if len(latest) == TRANSCRIPT_MESSAGES else 0
        note = format_html("<p>{}</p>", ngettext("%(n)s earlier message: see all messages (above) or the export.",
                                                  "%(n)s earlier messages: see all messages (above) or the export.", earlier) % {"n": earlier})
        return format_html("<div class=\"pagechat-transcript\">{}{}</div>", note if earlier else "", rows)

    @admin.action(description=_("Export all conversations of the selected conversations' users (JSON)"), permissions=["view"])
    def export_owners_conversations(self, request: HttpRequest, queryset: QuerySet[Conversation]) -> HttpResponse:
        users = []
        for owner_id in sorted({c.owner_id for c in queryset}):
            convs = list(Conversation.objects.filter(owner_id=owner_id).select_related("owner").order_by("pk"))
            users.append({"user_id": owner_id, "username": convs[0].owner.get_username() if convs else "",
                          "conversations": [conversation_export(conversation=c) for c in convs]})
        body = {"exported_at": timezone.now().isoformat(), "users": users}
        response = HttpResponse(json.dumps(body, ensure_ascii=False, indent=2, default=str), content_type="application/json")
        response["Content-Disposition"] = 'attachment; filename="conversations-export.json"'
        return response

    @admin.action(description=_("Delete all conversations of the selected conversations' users (with files and run logs)"),
                  permissions=["delete"])
    def delete_owners_conversations(self, request: HttpRequest, queryset: QuerySet[Conversation]) -> HttpResponse | None:
        owners = sorted({c.owner for c in queryset.select_related("owner")}, key=lambda u: u.pk)
        if request.POST.get("confirmed") != "yes":
            counts = {u.pk: Conversation.objects.filter(owner=u).count() for u in owners}
            return TemplateResponse(request, "admin/pagechat/delete_owners_conversations.html", {
                **self.admin_site.each_context(request), "title": gettext("Delete all conversations of these users?"),
                "owners": [(u, counts[u.pk]) for u in owners], "selected": request.POST.getlist(ACTION_CHECKBOX_NAME),
                "action": "delete_owners_conversations", "opts": self.model._meta,
            })
        total = 0
        for owner in owners:
            total += user_conversations_remove(user=owner).conversations
        users = ngettext("%(count)d user", "%(count)d users", len(owners)) % {"count": len(owners)}
        self.message_user(request, ngettext("Deleted %(count)d conversation of %(users)s.", "Deleted %(count)d conversations of %(users)s.",
                                            total) % {"count": total, "users": users}, messages.SUCCESS)
        return None

    def get_queryset(self, request: HttpRequest) -> QuerySet[Conversation]:
        """Each conversation with its runs' summed tokens and cost (sortable columns)."""
        return super().get_queryset(request).annotate(
            total_tokens=Coalesce(Sum(F("runs__input_tokens") + F("runs__output_tokens") + F("runs__cache_read_tokens")
                                      + F("runs__cache_write_tokens")), 0),
            total_cost=Sum("runs__cost_usd"),
        )

    @admin.display(description=_("tokens"), ordering="total_tokens")
    def tokens(self, obj: Any) -> int:
        return int(obj.total_tokens or 0)

    @admin.display(description=_("cost (USD)"), ordering="total_cost")
    def cost(self, obj: Any) -> str:
        return _usd(obj.total_cost)


@admin.register(Message)
class MessageAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["id", "conversation", "role", "status", "interaction_type", "short", "feedback", "created_at"]
    list_filter = ["role", "status", "replaced", "interaction_type", "feedback", "payload_outcome", "stop_reason"]
    search_fields = ["content", "conversation__title"]
    readonly_fields = [*(f.name for f in Message._meta.fields), "attachments_list"]

    @admin.display(description=_("content"))
    def short(self, obj: Message) -> str:
        return obj.content[:80]

    @admin.display(description=_("attachments"))
    def attachments_list(self, obj: Message) -> str:
        """Name, type, size and checksum of each file sent with the message (its bytes stay with its owner)."""
        files = [attachment_summary(a) for a in obj.attachments.all()]
        if not files:
            return "—"
        line = gettext("%(name)s · %(type)s · %(size)s bytes · sha256 %(sha256)s")
        return format_html_join("", "<div>{}</div>", ((line % {"name": f["name"], "type": f["content_type"], "size": f["size"],
                                                                "sha256": f["sha256"]},) for f in files))


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
        return _usd(obj.cost_usd)

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


from chat import admin_quality  # noqa: E402, F401  (registers the quality dashboard, /admin/pagechat/quality/)
