"""Conversation export: the file formats, their schemas, and the download built from retention's export."""
from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse, StreamingHttpResponse
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request

from chat.models import Conversation
from chat.userdata import retention


class ExportNegotiation(DefaultContentNegotiation):
    """The export's `?format=` names the file format (json|markdown), not a DRF renderer: ignore it here."""

    def select_renderer(self, request: Request, renderers: list[Any], format_suffix: str | None = None) -> Any:
        return renderers[0], renderers[0].media_type


EXPORT_JSON_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["id", "title", "created_at", "messages"],
    "properties": {
        "id": {"type": "integer"}, "title": {"type": "string"}, "created_at": {"type": ["string", "null"]}, "pinned": {"type": "boolean"},
        "messages": {"type": "array", "items": {
            "type": "object",
            "required": ["role", "content", "created_at", "tool_history", "payload", "feedback", "attachments"],
            "properties": {"role": {"type": "string"}, "content": {"type": "string"}, "created_at": {"type": ["string", "null"]},
                           "tool_history": {"type": "array"}, "payload": {}, "feedback": {}, "attachments": {"type": "array"}},
        }},
    },
}
EXPORT_ALL_JSON_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["exported_at", "username", "preferences", "conversations"],
    "properties": {"exported_at": {"type": "string"}, "username": {"type": "string"},
                   "preferences": {"type": "object", "required": ["instructions"], "properties": {"instructions": {"type": "string"}}},
                   "conversations": {"type": "array", "items": EXPORT_JSON_SCHEMA}},
}
EXPORT_FORMATS = {"json": ("application/json", "json"), "markdown": ("text/markdown; charset=utf-8", "md")}


def export_response(conversation: Conversation, fmt: str) -> HttpResponse:
    """The conversation as a download in `fmt` (a key of EXPORT_FORMATS)."""
    data = retention.conversation_export(conversation=conversation)
    content_type, extension = EXPORT_FORMATS[fmt]
    body = json.dumps(data, ensure_ascii=False, indent=2, default=str) if fmt == "json" else retention.conversation_markdown(data)
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="conversation-{conversation.pk}.{extension}"'
    return response


def export_all_response(user: Any) -> StreamingHttpResponse:
    """Every conversation of the user as one JSON download, streamed a conversation at a time."""
    response = StreamingHttpResponse(retention.user_conversations_export(user=user), content_type="application/json")
    response["Content-Disposition"] = 'attachment; filename="conversations.json"'
    return response
