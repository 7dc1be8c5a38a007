"""HTTP transports: SSE (plain async views) and REST (DRF), both thin over the services."""
from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.urls import reverse
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from rest_framework import mixins, serializers, viewsets
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chat import selectors, services
from chat.auth import user_for_authorization
from chat.events import ChatSend, FrameError, parse_frame
from chat.models import Conversation, Message
from chat.runs import ResyncRequired, manager

HTTP_STATUS = {
    "bad_json": 400, "bad_frame": 400, "unknown_type": 400, "too_large": 413, "not_found": 404, "busy": 409,
    "rate_limited": 429, "action_rejected": 403, "unauthorized": 401, "resync": 410,
}


def _error(code: str, message: str) -> JsonResponse:
    return JsonResponse({"type": "error", "code": code, "message": message}, status=HTTP_STATUS.get(code, 500))


async def _authenticate(request: HttpRequest) -> tuple[Any, JsonResponse | None]:
    """A DRF token or the session (then with the CSRF check a browser form would get)."""
    auth = request.headers.get("Authorization", "")
    if auth:
        user = await user_for_authorization(auth)
        return (user, None) if user is not None else (None, _error("unauthorized", "invalid token"))
    user = await request.auser()
    if not user.is_authenticated:
        return None, _error("unauthorized", "authentication required")
    if request.method not in ("GET", "HEAD", "OPTIONS"):
        refused = CsrfViewMiddleware(lambda r: HttpResponse()).process_view(request, None, (), {})
        if refused is not None:
            return None, _error("unauthorized", "CSRF check failed")
    return user, None


def _send_frame(body: bytes) -> ChatSend | FrameError:
    try:
        data = json.loads(body or b"{}")
    except (ValueError, RecursionError):
        return FrameError(code="bad_json", message="body is not valid JSON")
    if isinstance(data, dict):
        data.setdefault("type", "chat.send")
    frame = parse_frame(json.dumps(data), settings.CHAT_MAX_FRAME_BYTES) if isinstance(data, dict) else FrameError(code="bad_frame", message="body must be a JSON object")
    if not isinstance(frame, (ChatSend, FrameError)):
        return FrameError(code="unknown_type", message="this endpoint takes chat.send")
    return frame


async def _sse(user: Any, run_id: str, after_seq: int) -> AsyncIterator[str]:
    try:
        async for seq, data in manager.follow(run_id, after_seq):
            yield f"id: {run_id}:{seq}\ndata: {data}\n\n"
    except ResyncRequired:
        yield f"data: {await services.run_replay_or_resync(user=user, run_id=run_id, after_seq=after_seq)}\n\n"


def _sse_response(stream: AsyncIterator[str]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(stream, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def _endpoint(view: Callable[..., Awaitable[HttpResponse]]) -> Callable[..., Awaitable[HttpResponse]]:
    """Authenticate (token, or session + CSRF), call the view with the user, map refusals to JSON errors."""

    @functools.wraps(view)
    async def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        user, refused = await _authenticate(request)
        if refused:
            return refused
        try:
            return await view(request, user, *args, **kwargs)
        except services.ServiceError as exc:
            return _error(exc.code, exc.message)

    return csrf_exempt(wrapper)  # CSRF is enforced in _authenticate for session users only


@require_GET
async def api_root(request: HttpRequest) -> HttpResponse:
    """GET <api>/: where the endpoints are (for programs; the tray gets the same from its config)."""
    return JsonResponse({
        "protocol": 1,
        "websocket": reverse("pagechat:websocket"),
        "chat": reverse("pagechat:chat"),
        "chat_stream": reverse("pagechat:chat-stream"),
        "conversations": reverse("pagechat:conversation-list"),
    })


async def websocket_info(request: HttpRequest) -> HttpResponse:
    """<api>/ws/ over plain HTTP: the websocket lives here; answer 426 Upgrade Required."""
    response = _error("bad_frame", "this address takes a websocket connection")
    response.status_code = 426
    response["Upgrade"] = "websocket"
    return response


@require_POST
@_endpoint
async def chat_stream(request: HttpRequest, user: Any) -> HttpResponse:
    """POST /api/chat/stream: start a turn and stream its events as SSE."""
    frame = _send_frame(request.body)
    if isinstance(frame, FrameError):
        return _error(frame.code, frame.message)
    started = await services.turn_start(user=user, frame=frame)
    return _sse_response(_sse(user, started.run_id, 0))


@require_GET
@_endpoint
async def run_events(request: HttpRequest, user: Any, run_id: str) -> HttpResponse:
    """GET /api/chat/runs/<id>/events: replay after Last-Event-ID (`<run_id>:<seq>`), then follow."""
    last = request.headers.get("Last-Event-ID") or request.GET.get("last_event_id") or ""
    try:
        after_seq = int(last.rpartition(":")[2] or request.GET.get("after_seq", 0))
    except ValueError:
        return _error("bad_frame", "Last-Event-ID must be <run_id>:<seq>")
    await selectors.run_for_user(user=user, run_id=run_id)
    return _sse_response(_sse(user, run_id, max(after_seq, 0)))


@require_POST
@_endpoint
async def run_cancel(request: HttpRequest, user: Any, run_id: str) -> HttpResponse:
    """POST /api/chat/runs/<id>/cancel."""
    await services.run_cancel(user=user, run_id=run_id)
    return JsonResponse({"ok": True, "run_id": run_id}, status=202)


@require_POST
@_endpoint
async def run_approve(request: HttpRequest, user: Any, run_id: str) -> HttpResponse:
    """POST /api/chat/runs/<id>/approve {tool_use_id, approved}: the HTTP twin of chat.approve."""
    try:
        body = json.loads(request.body or b"{}")
        tool_use_id, approved = str(body["tool_use_id"]), body["approved"]
        if not isinstance(approved, bool):
            raise ValueError
    except (ValueError, KeyError, TypeError):
        return _error("bad_frame", "body must be {tool_use_id: str, approved: bool}")
    await services.approval_answer(user=user, run_id=run_id, tool_use_id=tool_use_id, approved=approved)
    return JsonResponse({"ok": True})


# ---- REST (DRF) ---------------------------------------------------------------------------------


class MessageSerializer(serializers.ModelSerializer):
    message_html = serializers.SerializerMethodField()
    run_id = serializers.SerializerMethodField()

    class Meta:
        model = Message
        fields = ["id", "role", "content", "message_html", "interaction_type", "suggested_values", "suggested_actions",
                  "custom_payload", "tool_history", "status", "run_id", "created_at"]

    def get_run_id(self, obj: Message) -> str | None:
        return str(obj.run_id) if obj.run_id else None

    def get_message_html(self, obj: Message) -> str:
        from chat.rendering import render_markdown

        return render_markdown(obj.content) if obj.role == Message.Role.ASSISTANT else ""


class ConversationSerializer(serializers.ModelSerializer):
    class Meta:
        model = Conversation
        fields = ["id", "title", "page", "created_at", "updated_at"]
        read_only_fields = ["id", "created_at", "updated_at"]


class ConversationDetailSerializer(ConversationSerializer):
    messages = serializers.SerializerMethodField()

    class Meta(ConversationSerializer.Meta):
        fields = [*ConversationSerializer.Meta.fields, "messages"]

    def get_messages(self, obj: Conversation) -> list[dict[str, Any]]:
        return MessageSerializer(selectors.conversation_messages(conversation=obj), many=True).data


class ConversationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                          mixins.UpdateModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """The user's own conversations; anyone else's id is a 404."""

    # Declared here, not taken from the host's DRF defaults (which may be AllowAny).
    authentication_classes = [TokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]

    def get_queryset(self) -> Any:
        return selectors.conversation_list(user=self.request.user)

    def get_serializer_class(self) -> Any:
        return ConversationDetailSerializer if self.action == "retrieve" else ConversationSerializer

    def perform_create(self, serializer: Any) -> None:
        serializer.instance = services.conversation_create(
            user=self.request.user, title=serializer.validated_data.get("title", ""), page=serializer.validated_data.get("page", "")
        )

    def perform_update(self, serializer: Any) -> None:
        serializer.instance = services.conversation_rename(
            user=self.request.user, conversation_id=serializer.instance.pk, title=serializer.validated_data.get("title", serializer.instance.title)
        )

    def perform_destroy(self, instance: Conversation) -> None:
        services.conversation_delete(user=self.request.user, conversation_id=instance.pk)


class ChatView(APIView):
    """POST /api/chat: one non-streaming turn; the body of the final `complete` (or an error)."""

    authentication_classes = [TokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]

    def post(self, request: Request) -> Response:
        frame = _send_frame(request.body)
        if isinstance(frame, FrameError):
            return Response(frame.model_dump(exclude_none=True), status=HTTP_STATUS.get(frame.code, 400))
        event = async_to_sync(_turn_to_completion)(request.user, frame)
        if event["type"] == "complete":
            return Response(event["payload"])
        code = event.get("code", "cancelled")
        return Response({"type": "error", "code": code, "message": event.get("message", "cancelled"), "run_id": event.get("run_id")},
                        status=HTTP_STATUS.get(code, 502 if event["type"] == "error" else 409))


async def _turn_to_completion(user: Any, frame: ChatSend) -> dict[str, Any]:
    try:
        started = await services.turn_start(user=user, frame=frame)
    except services.ServiceError as exc:
        return {"type": "error", "code": exc.code, "message": exc.message}
    last: str | None = None
    try:
        async for _seq, data in manager.follow(started.run_id, 0):
            last = data
    except ResyncRequired:
        last = await services.run_replay_or_resync(user=user, run_id=started.run_id, after_seq=0)
    return json.loads(last) if last else {"type": "error", "code": "internal", "message": "no result"}
