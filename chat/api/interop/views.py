"""The standard clients' endpoints: thin views over the same services as the v1 transports."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.views.decorators.http import require_GET, require_POST
from drf_spectacular.utils import OpenApiResponse

from chat import selectors, services
from chat.api.auth import endpoint
from chat.api.interop import agui, aisdk
from chat.api.interop.common import turn_start_with_files
from chat.api.openapi import described, error_responses
from chat.api.stream import sse_response
from chat.conf import chat_settings
from chat.events.client import ClientJSONError, client_json
from chat.events.errors import BadRequest, ErrorCode, NotFound

if TYPE_CHECKING:
    from django.contrib.auth.models import User

_START_ERRORS: tuple[ErrorCode, ...] = ("bad_json", "bad_frame", "too_large", "forbidden", "not_found", "busy", "rate_limited", "budget_exceeded")
_AGUI_INPUT: dict[str, Any] = {
    "type": "object", "required": ["threadId", "runId", "messages"], "additionalProperties": True,
    "description": "AG-UI `RunAgentInput` (docs/ag-ui.md): only the trailing new input of `messages` is taken.",
    "properties": {"threadId": {"type": "string"}, "runId": {"type": "string"}, "messages": {"type": "array", "items": {"type": "object"}},
                   "tools": {"type": "array", "items": {"type": "object"}}, "context": {"type": "array", "items": {"type": "object"}},
                   "forwardedProps": {"type": "object", "properties": {"page": {"type": "string"}, "context": {"type": "object"}}}},
}
_AISDK_INPUT: dict[str, Any] = {
    "type": "object", "required": ["id", "messages"], "additionalProperties": True,
    "description": "The AI SDK default chat transport's body (docs/ai-sdk.md) plus `page` and `context`.",
    "properties": {"id": {"type": "string"}, "messages": {"type": "array", "items": {"type": "object"}},
                   "trigger": {"enum": ["submit-message", "regenerate-message"]}, "messageId": {"type": "string"},
                   "page": {"type": "string"}, "context": {"type": "object"}},
}
_AGUI_STREAM = {"type": "string", "description": "`text/event-stream` of AG-UI events: `data: <camelCase event JSON>` frames "
                                                 "from RUN_STARTED to RUN_FINISHED or RUN_ERROR (docs/ag-ui.md)."}
_UI_STREAM = {"type": "string", "description": "`text/event-stream` of AI SDK UI message chunks (header "
                                               "`x-vercel-ai-ui-message-stream: v1`), ending with `data: [DONE]` (docs/ai-sdk.md)."}
_CANCELS: set[asyncio.Task[None]] = set()  # cancel tasks started as a client hangs up (kept until they finish)


def _json_body(request: HttpRequest) -> Any:
    """The JSON body read as every v1 transport reads one (`client_json`), up to CHAT_MAX_CLIENT_BODY_BYTES; a refusal
    (`too_large`, `bad_json`, `bad_frame`) is answered with its v1 code and nothing is started or stored."""
    try:
        return client_json(request.body or b"{}", chat_settings.CHAT_MAX_CLIENT_BODY_BYTES, what="body")
    except ClientJSONError as exc:
        raise BadRequest(exc.error.message, code=exc.error.code) from None


async def cancel_on_close(stream: AsyncIterator[str], *, user: User, run_id: str) -> AsyncIterator[str]:
    """The stream; when the client closes the request before the run's end, the run is cancelled."""
    finished = False
    try:
        async for chunk in stream:
            yield chunk
        finished = True
    finally:
        if not finished:  # a task of its own: this generator is being cancelled or closed
            task = asyncio.get_running_loop().create_task(services.run_cancel(user=user, run_id=run_id))
            _CANCELS.add(task)
            task.add_done_callback(_CANCELS.discard)


@described(methods=["POST"], summary="Run the agent for an AG-UI client (SSE)", tags=["standard clients"],
           request={"application/json": _AGUI_INPUT}, responses={(200, "text/event-stream"): _AGUI_STREAM, **error_responses(*_START_ERRORS)})
@require_POST
@endpoint
async def agui_run(request: HttpRequest, user: User) -> HttpResponseBase:
    """POST <api>chat/ag-ui: an AG-UI RunAgentInput; answers the run as AG-UI events (SSE)."""
    run_input = agui.run_input_parse(_json_body(request))
    started = await turn_start_with_files(user=user, files=agui.inline_files(run_input),
                                          build=lambda ids: agui.turn_input(run_input, attachments=ids))
    stream = agui.AguiStream(thread_id=run_input.thread_id, run_id=run_input.run_id, pagechat_run_id=started.run_id,
                             state=agui.state_of(run_input))
    return sse_response(cancel_on_close(stream.sse(user=user), user=user, run_id=started.run_id))


def _ui_stream_response(stream: AsyncIterator[str]) -> StreamingHttpResponse:
    """The SSE response with the AI SDK's UI message stream headers."""
    response = sse_response(stream)
    for name, value in aisdk.HEADERS.items():
        response[name] = value
    return response


@described(methods=["POST"], summary="Chat for the AI SDK's default transport (UI message stream)", tags=["standard clients"],
           request={"application/json": _AISDK_INPUT}, responses={(200, "text/event-stream"): _UI_STREAM, **error_responses(*_START_ERRORS)})
@require_POST
@endpoint
async def aisdk_chat(request: HttpRequest, user: User) -> HttpResponseBase:
    """POST <api>chat/ai-sdk: the AI SDK default chat transport's request; answers a UI message stream (SSE)."""
    req = aisdk.request_parse(_json_body(request))
    if req.trigger == "regenerate-message":
        conversation = await selectors.conversation_by_thread(user=user, thread_id=req.id)
        if conversation is None:
            raise NotFound("conversation not found")
        message_id = int(req.messageId) if req.messageId and req.messageId.isdigit() else None
        if req.messageId and message_id is None:
            raise BadRequest("only the last answer can be regenerated")
        started = await services.turn_regenerate(user=user, conversation_id=conversation.pk, context=aisdk.regenerate_context(req),
                                                 message_id=message_id)
    else:
        started = await turn_start_with_files(user=user, files=aisdk.inline_files(req),
                                              build=lambda ids: aisdk.turn_input(req, attachments=ids))
    stream = aisdk.UIMessageStream(run_id=started.run_id, base_url=request.build_absolute_uri("/"))
    return _ui_stream_response(cancel_on_close(stream.sse(user=user), user=user, run_id=started.run_id))


@described(methods=["GET"], summary="Resume the AI SDK stream of a running turn", tags=["standard clients"],
           responses={(200, "text/event-stream"): _UI_STREAM, 204: OpenApiResponse(description="No turn of this chat is running."),
                      **error_responses()})
@require_GET
@endpoint
async def aisdk_resume(request: HttpRequest, user: User, chat_id: str) -> HttpResponseBase:
    """GET <api>chat/ai-sdk/<id>/stream: the transport's resume: the running turn's stream from its start, else 204."""
    conversation = await selectors.conversation_by_thread(user=user, thread_id=chat_id)
    run_id = await selectors.conversation_running_run_id(conversation_id=conversation.pk) if conversation else None
    if run_id is None:
        return HttpResponse(status=204)
    return _ui_stream_response(aisdk.UIMessageStream(run_id=run_id, base_url=request.build_absolute_uri("/")).sse(user=user))  # following does not own the run

