"""POST <api>chat: one non-streaming turn, answered with its final `complete` payload (or the error it ended with)."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from django.http import HttpResponse, JsonResponse
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework.request import Request
from rest_framework.views import APIView

from chat import services
from chat.api.auth import Authenticated
from chat.api.bodies import StrictJSONParser, body, send_frame
from chat.api.errors import ErrorMapped, error_response, refused
from chat.api.follow import run_follow
from chat.api.openapi import CHAT_SEND_BODY, error_responses, operation
from chat.api.stream import SEND_ERRORS
from chat.events import ChatSend, CompletePayload, FrameError, error_event
from chat.events.errors import ServiceError, error_code

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class ChatView(Authenticated, ErrorMapped, APIView):
    """POST /api/chat: one non-streaming turn; the body is the final `complete` event's payload (or an error)."""

    error_frames = True  # DRF's own refusals answer like every chat endpoint: an error frame as the body
    parser_classes = [StrictJSONParser]
    schema = AutoSchema()

    @operation(summary="One turn, answered when it ends", tags=["chat"], request={"application/json": CHAT_SEND_BODY}, responses={
        200: OpenApiResponse(CompletePayload, description="The final `complete` event's payload."),
        **error_responses(*SEND_ERRORS, "cancelled", "interrupted", "internal", "provider_error", "provider_unavailable",
                          "overloaded", "timeout", "bad_request", "auth_error", "streaming_required"),
    })
    def post(self, request: Request) -> HttpResponse:
        frame = send_frame(body(request._request))
        if isinstance(frame, FrameError):
            return error_response(frame)
        if frame.client_tools:  # their calls need a stream to reach the tab and come back
            return error_response(error_event("streaming_required", "client_tools need a streaming transport: the websocket or "
                                              "POST /api/chat/stream (SSE)"))
        return async_to_sync(turn_to_completion)(request.user, frame)


async def turn_to_completion(user: User, frame: ChatSend) -> HttpResponse:
    """Run the turn and answer with its terminal event: `complete`'s payload, or the error it ended with."""
    try:
        started = await services.turn_start(user=user, frame=frame)
    except ServiceError as exc:
        return refused(exc)
    last: str | None = None
    async for _seq, data in run_follow(user=user, run_id=started.run_id, after_seq=0):
        last = data
    event: dict[str, Any] = json.loads(last) if last else {"type": "error", "code": "internal", "message": "no result"}
    if event["type"] == "complete":
        return JsonResponse(event["payload"])  # built by chat.events.complete_payload_build
    if event["type"] == "cancelled":
        return error_response(error_event("cancelled", "the run was cancelled", run_id=started.run_id))
    code = error_code(str(event.get("code", "internal")))
    return error_response(error_event(code, str(event.get("message") or ""), run_id=started.run_id))
