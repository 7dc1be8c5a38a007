"""SSE: start a turn and stream its events, or replay and follow a run's events after Last-Event-ID."""
from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.views.decorators.http import require_GET, require_POST
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse

from chat import selectors, services
from chat.api.auth import endpoint
from chat.api.bodies import body, send_frame
from chat.api.errors import error, error_response
from chat.api.follow import run_follow
from chat.api.openapi import CHAT_SEND_BODY, SSE_EVENT_SCHEMA, described, error_responses
from chat.events import FrameError
from chat.events.errors import ErrorCode
from chat.infra import metrics

if TYPE_CHECKING:
    from django.contrib.auth.models import User


async def sse_events(user: User, run_id: str, after_seq: int) -> AsyncIterator[str]:
    """The run's events after `after_seq` as SSE `id:`/`data:` frames (the resync answer has no id)."""
    sent = 0  # counted once per stream, not per event
    try:
        async for seq, data in run_follow(user=user, run_id=run_id, after_seq=after_seq):
            yield f"id: {run_id}:{seq}\ndata: {data}\n\n" if seq is not None else f"data: {data}\n\n"
            sent += 1
    finally:
        metrics.SSE_EVENTS.inc(sent)


def sse_response(stream: AsyncIterator[str]) -> StreamingHttpResponse:
    """`stream` as an unbuffered, uncached `text/event-stream`."""
    response = StreamingHttpResponse(stream, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


SSE_RESPONSE = OpenApiResponse(
    response=SSE_EVENT_SCHEMA,
    description="`text/event-stream`: each event is `id: <run_id>:<seq>` and `data: <event JSON>` (a protocol v1 run "
                "event, docs/protocol/events.schema.json; described in docs/protocol/asyncapi.yaml), ending with the "
                "terminal `complete`, `error` or `cancelled` event. Reconnect with `Last-Event-ID` to resume gaplessly.",
)
RUN_ID = OpenApiParameter("run_id", OpenApiTypes.STR, OpenApiParameter.PATH, description="the run's id (`run_id` of its events)")
SEND_ERRORS: tuple[ErrorCode, ...] = ("bad_json", "bad_frame", "unknown_type", "too_large", "not_found", "busy", "rate_limited",
                                      "action_rejected", "forbidden", "budget_exceeded")


@described(methods=["POST"], summary="Start a turn and stream its events (SSE)", tags=["chat"], request={"application/json": CHAT_SEND_BODY},
           responses={(200, "text/event-stream"): SSE_RESPONSE, **error_responses(*SEND_ERRORS)})
@require_POST
@endpoint
async def chat_stream(request: HttpRequest, user: User) -> HttpResponseBase:
    """POST /api/chat/stream: start a turn and stream its events as SSE."""
    frame = send_frame(body(request))
    if isinstance(frame, FrameError):
        return error_response(frame)
    started = await services.turn_start(user=user, frame=frame)
    return sse_response(sse_events(user, started.run_id, 0))


@described(methods=["GET"], summary="Replay and follow a run's events (SSE)", tags=["chat"], parameters=[
    RUN_ID,
    OpenApiParameter("Last-Event-ID", OpenApiTypes.STR, OpenApiParameter.HEADER, pattern=r"^[^:]+:[0-9]+$",
                     description="`<run_id>:<seq>` of this run: resume after that event; at or past the terminal event the "
                                 "answer is 204 (anything else, another run's id included, is `bad_frame`)"),
    OpenApiParameter("last_event_id", OpenApiTypes.STR, pattern=r"^[^:]+:[0-9]+$",
                     description="the same as the header, for clients that cannot set it"),
    OpenApiParameter("after_seq", OpenApiTypes.INT, description="resume after this seq (when no Last-Event-ID is given)"),
], responses={(200, "text/event-stream"): SSE_RESPONSE,
              204: OpenApiResponse(description="The Last-Event-ID is at or past the run's terminal event: nothing more will come "
                                               "(EventSource clients stop reconnecting)."),
              **error_responses("bad_frame", "not_found")})
@require_GET
@endpoint
async def run_events(request: HttpRequest, user: User, run_id: str) -> HttpResponseBase:
    """GET /api/chat/runs/<id>/events: replay after Last-Event-ID (`<run_id>:<seq>`), then follow.

    A Last-Event-ID at or past the run's terminal event answers 204, so EventSource clients stop reconnecting."""
    last = request.headers.get("Last-Event-ID") or request.GET.get("last_event_id") or ""
    if last:
        named, sep, seq_text = last.rpartition(":")
        if not sep or named != run_id or not seq_text.isdigit() or len(seq_text) > 19:
            return error("bad_frame", "Last-Event-ID must be <run_id>:<seq> of this run")
        after_seq = int(seq_text)
    else:
        try:
            after_seq = int(request.GET.get("after_seq", "0"))
        except ValueError:
            return error("bad_frame", "after_seq must be an integer")
    run = await selectors.run_for_user(user=user, run_id=run_id)
    if last and selectors.run_stream_ended(run=run, after_seq=after_seq):
        return HttpResponse(status=204)
    return sse_response(sse_events(user, run_id, max(after_seq, 0)))
