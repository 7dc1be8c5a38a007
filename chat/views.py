"""HTTP transports: SSE (plain async views) and REST (DRF), both thin over the services."""
from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse, StreamingHttpResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from rest_framework import mixins, serializers, viewsets
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.views import APIView

from chat import selectors, services
from chat.auth import user_for_authorization
from chat.conf import chat_settings
from chat.errors import ErrorCode, ServiceError, error_code, http_status
from chat.events import ChatSend, FrameError, error_event, parse_frame
from chat.models import Conversation, Message
from chat.rendering import render_markdown
from chat.runs import ResyncRequired, manager

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def _error_response(error: FrameError) -> HttpResponse:
    """Every HTTP error body is a frame-level error (chat.events), with its code's HTTP status."""
    return HttpResponse(error.wire(), status=http_status(error.code), content_type="application/json")


def _error(code: ErrorCode, message: str) -> HttpResponse:
    return _error_response(error_event(code, message))


def _csrf_probe(request: HttpRequest) -> HttpResponse:
    """A view that is not csrf_exempt, for the CSRF middleware's check of a session user's request."""
    return HttpResponse()


async def _authenticate(request: HttpRequest) -> tuple[Any, HttpResponse | None]:
    """A DRF token or the session (then with the CSRF check a browser form would get)."""
    auth = request.headers.get("Authorization", "")
    if auth:
        user = await user_for_authorization(auth)
        return (user, None) if user is not None else (None, _error("unauthorized", "invalid token"))
    user = await request.auser()
    if not user.is_authenticated:
        return None, _error("unauthorized", "authentication required")
    if request.method not in ("GET", "HEAD", "OPTIONS"):
        refused = CsrfViewMiddleware(_csrf_probe).process_view(request, _csrf_probe, (), {})
        if refused is not None:
            return None, _error("unauthorized", "CSRF check failed")
    return user, None


def _send_frame(body: bytes) -> ChatSend | FrameError:
    try:
        data = json.loads(body or b"{}")
    except (ValueError, RecursionError):
        return error_event("bad_json", "body is not valid JSON")
    if not isinstance(data, dict):
        return error_event("bad_frame", "body must be a JSON object")
    data.setdefault("type", "chat.send")
    frame = parse_frame(json.dumps(data), chat_settings.CHAT_MAX_FRAME_BYTES)
    if not isinstance(frame, (ChatSend, FrameError)):
        return error_event("unknown_type", "this endpoint takes chat.send")
    return frame


async def _sse(user: User, run_id: str, after_seq: int) -> AsyncIterator[str]:
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


def _endpoint(view: Callable[..., Coroutine[Any, Any, HttpResponseBase]]) -> Callable[..., Coroutine[Any, Any, HttpResponseBase]]:
    """Authenticate (token, or session + CSRF), call the view with the user, map refusals to JSON errors."""

    @functools.wraps(view)
    async def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        user, refused = await _authenticate(request)
        if refused:
            return refused
        try:
            return await view(request, user, *args, **kwargs)
        except ServiceError as exc:
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
async def chat_stream(request: HttpRequest, user: User) -> HttpResponseBase:
    """POST /api/chat/stream: start a turn and stream its events as SSE."""
    frame = _send_frame(request.body)
    if isinstance(frame, FrameError):
        return _error_response(frame)
    started = await services.turn_start(user=user, frame=frame)
    return _sse_response(_sse(user, started.run_id, 0))


@require_GET
@_endpoint
async def run_events(request: HttpRequest, user: User, run_id: str) -> HttpResponseBase:
    """GET /api/chat/runs/<id>/events: replay after Last-Event-ID (`<run_id>:<seq>`), then follow."""
    last = request.headers.get("Last-Event-ID") or request.GET.get("last_event_id") or ""
    try:
        after_seq = int(last.rpartition(":")[2] or request.GET.get("after_seq", "0"))
    except ValueError:
        return _error("bad_frame", "Last-Event-ID must be <run_id>:<seq>")
    await selectors.run_for_user(user=user, run_id=run_id)
    return _sse_response(_sse(user, run_id, max(after_seq, 0)))


@require_POST
@_endpoint
async def run_cancel(request: HttpRequest, user: User, run_id: str) -> HttpResponse:
    """POST /api/chat/runs/<id>/cancel."""
    await services.run_cancel(user=user, run_id=run_id)
    return JsonResponse({"ok": True, "run_id": run_id}, status=202)


@require_POST
@_endpoint
async def run_approve(request: HttpRequest, user: User, run_id: str) -> HttpResponse:
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
    """POST /api/chat: one non-streaming turn; the body is the final `complete` event's payload (or an error)."""

    authentication_classes = [TokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]

    def post(self, request: Request) -> HttpResponse:
        frame = _send_frame(request.body)
        if isinstance(frame, FrameError):
            return _error_response(frame)
        return async_to_sync(_turn_to_completion)(request.user, frame)

    def handle_exception(self, exc: Exception) -> HttpResponse:
        """DRF's own refusals answer like every chat endpoint: an error frame as the body."""
        if isinstance(exc, (NotAuthenticated, AuthenticationFailed)):
            return _error("unauthorized", str(exc.detail))
        response: HttpResponse = super().handle_exception(exc)
        return response


async def _turn_to_completion(user: User, frame: ChatSend) -> HttpResponse:
    """Run the turn and answer with its terminal event: `complete`'s payload, or the error it ended with."""
    try:
        started = await services.turn_start(user=user, frame=frame)
    except ServiceError as exc:
        return _error(exc.code, exc.message)
    last: str | None = None
    try:
        async for _seq, data in manager.follow(started.run_id, 0):
            last = data
    except ResyncRequired:
        last = await services.run_replay_or_resync(user=user, run_id=started.run_id, after_seq=0)
    event: dict[str, Any] = json.loads(last) if last else {"type": "error", "code": "internal", "message": "no result"}
    if event["type"] == "complete":
        return JsonResponse(event["payload"])  # built by chat.events.complete_payload_build
    if event["type"] == "cancelled":
        return _error_response(error_event("cancelled", "the run was cancelled", run_id=started.run_id))
    code = error_code(str(event.get("code", "internal")))
    return _error_response(error_event(code, str(event.get("message") or ""), run_id=started.run_id))
