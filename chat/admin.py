"""Staff views of conversations, messages, runs (with readable diagnostics) and tool calls."""
from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.utils.html import format_html

from chat.models import Conversation, Message, PendingApproval, Run, ToolCall


def pretty(value: Any, limit: int = 200_000) -> str:
    """JSON/text shown escaped in a <pre> (model output is untrusted)."""
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[:limit] + "\n… (truncated)"
    return format_html('<pre style="white-space:pre-wrap;max-height:40em;overflow:auto">{}</pre>', text)


_MESSAGE_INLINE_FIELDS: tuple[str, ...] = (
    "role", "status", "interaction_type", "content", "suggested_values", "suggested_actions", "custom_payload", "created_at")
_RUN_INLINE_FIELDS: tuple[str, ...] = (
    "id", "status", "provider", "model", "input_tokens", "output_tokens", "time_to_first_token_ms", "duration_ms", "created_at")
_TOOL_CALL_INLINE_FIELDS: tuple[str, ...] = ("index", "name", "status", "duration_ms", "input", "output")


class ReadOnlyMixin:
    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False


class MessageInline(ReadOnlyMixin, admin.StackedInline):
    model = Message
    extra = 0
    fields = _MESSAGE_INLINE_FIELDS
    readonly_fields = _MESSAGE_INLINE_FIELDS
    show_change_link = True


class RunInline(ReadOnlyMixin, admin.TabularInline):
    model = Run
    extra = 0
    fields = _RUN_INLINE_FIELDS
    readonly_fields = _RUN_INLINE_FIELDS
    show_change_link = True
    fk_name = "conversation"


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ["id", "title", "owner", "page", "updated_at"]
    list_filter = ["page", "updated_at"]
    search_fields = ["title", "owner__username", "messages__content"]
    readonly_fields = ["owner", "created_at", "updated_at"]
    inlines = [MessageInline, RunInline]
    list_select_related = ["owner"]


@admin.register(Message)
class MessageAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["id", "conversation", "role", "status", "interaction_type", "short", "created_at"]
    list_filter = ["role", "status", "interaction_type"]
    search_fields = ["content", "conversation__title"]
    readonly_fields = [f.name for f in Message._meta.fields]

    @admin.display(description="content")
    def short(self, obj: Message) -> str:
        return obj.content[:80]


class ToolCallInline(ReadOnlyMixin, admin.TabularInline):
    model = ToolCall
    extra = 0
    fields = _TOOL_CALL_INLINE_FIELDS
    readonly_fields = _TOOL_CALL_INLINE_FIELDS


@admin.register(Run)
class RunAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["id", "conversation", "user", "status", "provider", "model", "input_tokens", "output_tokens",
                    "time_to_first_token_ms", "duration_ms", "created_at"]
    list_filter = ["status", "provider", "model", "created_at", ("conversation__owner", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["id", "conversation__title", "conversation__owner__username", "error_message"]
    date_hierarchy = "created_at"
    list_select_related = ["conversation__owner"]
    inlines = [ToolCallInline]
    fieldsets = [
        (None, {"fields": ["id", "conversation", "status", "provider", "model", "error_code", "error_message"]}),
        ("Usage and timings", {"fields": ["input_tokens", "output_tokens", "time_to_first_token_ms", "duration_ms", "created_at",
                                          "finished_at", "owner_process", "heartbeat_at", "last_seq"]}),
        ("Diagnostics", {"fields": ["d_settings", "d_tools", "d_system_prompt", "d_messages", "d_context", "d_raw", "d_errors"]}),
    ]
    readonly_fields = [
        "id", "conversation", "status", "provider", "model", "error_code", "error_message", "input_tokens", "output_tokens",
        "time_to_first_token_ms", "duration_ms", "created_at", "finished_at", "owner_process", "heartbeat_at", "last_seq",
        "d_settings", "d_tools", "d_system_prompt", "d_messages", "d_context", "d_raw", "d_errors",
    ]

    @admin.display(description="user", ordering="conversation__owner__username")
    def user(self, obj: Run) -> str:
        return obj.conversation.owner.get_username()

    @admin.display(description="model settings")
    def d_settings(self, obj: Run) -> str:
        d = obj.diagnostics or {}
        return pretty({k: d.get(k) for k in ("model", "max_tokens", "max_iterations", "temperature", "page", "provider", "iterations", "usage", "timings")})

    @admin.display(description="tools")
    def d_tools(self, obj: Run) -> str:
        return pretty((obj.diagnostics or {}).get("tools", []))

    @admin.display(description="system prompt")
    def d_system_prompt(self, obj: Run) -> str:
        return pretty((obj.diagnostics or {}).get("system_prompt", ""))

    @admin.display(description="messages sent")
    def d_messages(self, obj: Run) -> str:
        return pretty((obj.diagnostics or {}).get("messages", []))

    @admin.display(description="context")
    def d_context(self, obj: Run) -> str:
        return pretty((obj.diagnostics or {}).get("context", {}))

    @admin.display(description="raw model output")
    def d_raw(self, obj: Run) -> str:
        return pretty((obj.diagnostics or {}).get("raw_llm_response", []))

    @admin.display(description="parse errors / error")
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
