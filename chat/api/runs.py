"""Run control over HTTP: cancel a run, answer its tool approval or a frontend tool call (the twins of chat.cancel,
chat.approve and chat.tool_result)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_POST
from drf_spectacular.utils import inline_serializer
from pydantic import ValidationError
from rest_framework import serializers

from chat import services
from chat.api.auth import endpoint
from chat.api.bodies import body
from chat.api.errors import error, error_response
from chat.api.openapi import described, error_responses
from chat.api.stream import RUN_ID
from chat.conf import chat_settings
from chat.events import FrameError, ToolResultBody
from chat.events.client import ClientJSONError, client_json

if TYPE_CHECKING:
    from django.contrib.auth.models import User


@described(methods=["POST"], summary="Cancel a run, wherever it runs", tags=["chat"], request=None, parameters=[RUN_ID],
           responses={202: inline_serializer("RunCancelled", {"ok": serializers.BooleanField(), "run_id": serializers.CharField()}),
                      **error_responses("not_found")})
@require_POST
@endpoint
async def run_cancel(request: HttpRequest, user: User, run_id: str) -> HttpResponse:
    """POST /api/chat/runs/<id>/cancel."""
    await services.run_cancel(user=user, run_id=run_id)
    return JsonResponse({"ok": True, "run_id": run_id}, status=202)


@described(methods=["POST"], summary="Answer a tool_approval", tags=["chat"], parameters=[RUN_ID],
           request=inline_serializer("ApprovalAnswer", {"tool_use_id": serializers.CharField(), "approved": serializers.BooleanField()}),
           responses={200: inline_serializer("ApprovalAnswered", {"ok": serializers.BooleanField()}),
                      **error_responses("bad_json", "bad_frame", "not_found")})
@require_POST
@endpoint
async def run_approve(request: HttpRequest, user: User, run_id: str) -> HttpResponse:
    """POST /api/chat/runs/<id>/approve {tool_use_id, approved}: the HTTP twin of chat.approve."""
    raw = body(request)
    if isinstance(raw, FrameError):
        return error_response(raw)
    try:
        data = client_json(raw or b"{}", chat_settings.CHAT_MAX_FRAME_BYTES, what="body")
    except ClientJSONError as exc:
        return error_response(exc.error)
    try:
        tool_use_id, approved = data["tool_use_id"], data["approved"]
        if not isinstance(approved, bool) or not isinstance(tool_use_id, str) or not 0 < len(tool_use_id) <= 128:
            raise ValueError  # strict: "yes" is not true, 7 is not "7"
    except (ValueError, KeyError, TypeError):
        return error("bad_frame", "body must be {tool_use_id: str, approved: bool}")
    await services.approval_answer(user=user, run_id=run_id, tool_use_id=tool_use_id, approved=approved)
    return JsonResponse({"ok": True})


@described(methods=["POST"], summary="Answer a client_tool_call (the tab that started the run)", tags=["chat"], parameters=[RUN_ID],
           request=ToolResultBody, responses={202: inline_serializer("ToolResultAccepted", {"status": serializers.CharField()}),
                                              **error_responses("bad_json", "bad_frame", "not_found")})
@require_POST
@endpoint
async def run_tool_result(request: HttpRequest, user: User, run_id: str) -> HttpResponse:
    """POST /api/chat/runs/<id>/tool_result {tool_use_id, tab_id, output, is_error?, payload?, state?}: the HTTP twin of
    chat.tool_result (the tray sends it when its page is left while a call runs)."""
    raw = body(request)
    if isinstance(raw, FrameError):
        return error_response(raw)
    try:
        data = client_json(raw or b"{}", chat_settings.CHAT_MAX_FRAME_BYTES, what="body")
        answer = ToolResultBody.model_validate(data)
    except ClientJSONError as exc:
        return error_response(exc.error)
    except ValidationError as exc:
        first = exc.errors()[0]
        return error("bad_frame", f"{'.'.join(str(p) for p in first.get('loc', ()))}: {first.get('msg', 'invalid')}"[:300])
    await services.tab_answer(user=user, run_id=run_id, answer=answer)
    return JsonResponse({"status": "accepted"}, status=202)
