"""Staff views of conversations and messages: a conversation's transcript, its owner's export and removal."""
from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db.models import F, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join, linebreaks
from django.utils.safestring import mark_safe
from django.utils.translation import gettext, gettext_lazy as _, ngettext

from chat.admin.common import INLINE_ROWS, LatestRowsFormSet, ReadOnlyMixin, RunTimes, usd
from chat.events.rendering import render_markdown
from chat.models import Conversation, Message, Run
from chat.userdata.blocks import attachment_summary
from chat.userdata.retention import conversation_export, user_conversations_remove

_MESSAGE_INLINE_FIELDS: tuple[str, ...] = (
    "role", "status", "replaced", "interaction_type", "content", "suggested_values", "suggested_actions", "custom_payload", "created_at")
_RUN_INLINE_FIELDS: tuple[str, ...] = (
    "id", "status", "provider", "model", "input_tokens", "output_tokens", "first_token", "duration", "created_at")


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
    actions = ["export_owners_conversations", "delete_owners_conversations"]  # chat.admin.evals adds its own

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
        return usd(obj.total_cost)


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
