"""HTTP transports: SSE (plain async views) and REST (DRF), both thin over the services."""
from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from django.core.exceptions import RequestDataTooBig
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse, StreamingHttpResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.urls import reverse
from django.utils import translation
from django.utils.translation import check_for_language
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from django.views.i18n import JavaScriptCatalog
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema_field, inline_serializer
from rest_framework import mixins, serializers, viewsets
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.decorators import action
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated, ParseError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chat import attachments, metrics, retention, selectors, services
from chat.auth import user_for_authorization
from chat.conf import chat_settings
from chat.errors import ErrorCode, NotFound, ServiceError, error_code, http_status
from chat.events import ChatSend, CompletePayload, FrameError, error_event, parse_frame
from chat.events.client import ClientJSONError, client_json
from chat.languages import language_normalize
from chat.models import PREFERENCES_MAX_CHARS, Conversation, Message, UserPreferences
from chat.openapi import CHAT_SEND_BODY, SSE_EVENT_SCHEMA, described, described_actions, drf_error_responses, error_responses, operation
from chat.rendering import render_markdown
from chat.runs import ResyncRequired, manager

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def _error_response(error: FrameError) -> HttpResponse:
    """Every HTTP error body is a frame-level error (chat.events), with its code's HTTP status (and Retry-After when
    the refusal says when to try again)."""
    response = HttpResponse(error.wire(), status=http_status(error.code), content_type="application/json")
    if error.retry_after is not None:
        response["Retry-After"] = str(error.retry_after)
    return response


def _error(code: ErrorCode, message: str) -> HttpResponse:
    return _error_response(error_event(code, message))


def _refused(exc: ServiceError) -> HttpResponse:
    """A service's refusal as an HTTP error."""
    return _error_response(error_event(exc.code, exc.message, retry_after=exc.retry_after))


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


def _body(request: HttpRequest) -> bytes | FrameError:
    """The request's body, or `too_large` past Django's DATA_UPLOAD_MAX_MEMORY_SIZE or CHAT_MAX_FRAME_BYTES
    (instead of Django's HTML 400 page)."""
    limit = chat_settings.CHAT_MAX_FRAME_BYTES
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > limit:  # refused before reading it
        return error_event("too_large", f"body is larger than {limit} bytes")
    try:
        body = request.body
    except RequestDataTooBig:
        return error_event("too_large", f"body is larger than {limit} bytes")
    if len(body) > limit:
        return error_event("too_large", f"body is larger than {limit} bytes")
    return body


def _send_frame(body: bytes | FrameError) -> ChatSend | FrameError:
    if isinstance(body, FrameError):
        return body
    try:
        data = client_json(body or b"{}", chat_settings.CHAT_MAX_FRAME_BYTES, what="body")
    except ClientJSONError as exc:
        return exc.error
    if not isinstance(data, dict):
        return error_event("bad_frame", "body must be a JSON object")
    data.setdefault("type", "chat.send")
    frame = parse_frame(json.dumps(data), chat_settings.CHAT_MAX_FRAME_BYTES)
    if not isinstance(frame, (ChatSend, FrameError)):
        return error_event("unknown_type", "this endpoint takes chat.send")
    return frame


async def _sse(user: User, run_id: str, after_seq: int) -> AsyncIterator[str]:
    sent = 0  # counted once per stream, not per event
    last = after_seq  # the last seq this stream has: a resync mid-stream must not skip to the stored terminal event
    try:
        async for seq, data in manager.follow(run_id, after_seq):
            yield f"id: {run_id}:{seq}\ndata: {data}\n\n"
            sent += 1
            last = seq
    except ResyncRequired:
        yield f"data: {await services.run_replay_or_resync(user=user, run_id=run_id, after_seq=last)}\n\n"
        sent += 1
    finally:
        metrics.SSE_EVENTS.inc(sent)


def _sse_response(stream: AsyncIterator[str]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(stream, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def _endpoint(view: Callable[..., Coroutine[Any, Any, HttpResponseBase]]) -> Callable[..., Coroutine[Any, Any, HttpResponseBase]]:
    """Authenticate (token, or session + CSRF), call the view with the user, map refusals to JSON errors."""

    @functools.wraps(view)
    async def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            user, refused = await _authenticate(request)  # the session's CSRF check may read a form body
            if refused:
                return refused
            return await view(request, user, *args, **kwargs)
        except ServiceError as exc:
            return _refused(exc)
        except RequestDataTooBig:
            return _error("too_large", f"body is larger than {chat_settings.CHAT_MAX_FRAME_BYTES} bytes")

    return csrf_exempt(wrapper)  # CSRF is enforced in _authenticate for session users only


SSE_RESPONSE = OpenApiResponse(
    response=SSE_EVENT_SCHEMA,
    description="`text/event-stream`: each event is `id: <run_id>:<seq>` and `data: <event JSON>` (a protocol v1 run "
                "event, docs/protocol/events.schema.json; described in docs/protocol/asyncapi.yaml), ending with the "
                "terminal `complete`, `error` or `cancelled` event. Reconnect with `Last-Event-ID` to resume gaplessly.",
)
RUN_ID = OpenApiParameter("run_id", OpenApiTypes.STR, OpenApiParameter.PATH, description="the run's id (`run_id` of its events)")
_SEND_ERRORS: tuple[ErrorCode, ...] = ("bad_json", "bad_frame", "unknown_type", "too_large", "not_found", "busy", "rate_limited",
                                       "action_rejected", "forbidden", "budget_exceeded")


@described(methods=["GET"], authenticated=False, summary="Where the endpoints are", tags=["api"], responses={200: inline_serializer(
    "ApiRoot", {"protocol": serializers.IntegerField(), "websocket": serializers.CharField(), "chat": serializers.CharField(),
                "chat_stream": serializers.CharField(), "ag_ui": serializers.CharField(), "ai_sdk": serializers.CharField(),
                "conversations": serializers.CharField(), "preferences": serializers.CharField()})})
@csrf_exempt  # reads nothing; any other method is a 405, not a CSRF page
@require_GET
async def api_root(request: HttpRequest) -> HttpResponse:
    """GET <api>/: where the endpoints are (for programs; the tray gets the same from its config)."""
    return JsonResponse({
        "protocol": 1,
        "websocket": reverse("pagechat:websocket"),
        "chat": reverse("pagechat:chat"),
        "chat_stream": reverse("pagechat:chat-stream"),
        "ag_ui": reverse("pagechat:ag-ui"),
        "ai_sdk": reverse("pagechat:ai-sdk"),
        "conversations": reverse("pagechat:conversation-list"),
        "preferences": reverse("pagechat:preferences"),
    })


async def websocket_info(request: HttpRequest) -> HttpResponse:
    """<api>/ws/ over plain HTTP: the websocket lives here; answer 426 Upgrade Required."""
    response = _error("bad_frame", "this address takes a websocket connection")
    response.status_code = 426
    response["Upgrade"] = "websocket"
    return response


@described(methods=["POST"], summary="Start a turn and stream its events (SSE)", tags=["chat"], request={"application/json": CHAT_SEND_BODY},
           responses={(200, "text/event-stream"): SSE_RESPONSE, **error_responses(*_SEND_ERRORS)})
@require_POST
@_endpoint
async def chat_stream(request: HttpRequest, user: User) -> HttpResponseBase:
    """POST /api/chat/stream: start a turn and stream its events as SSE."""
    frame = _send_frame(_body(request))
    if isinstance(frame, FrameError):
        return _error_response(frame)
    started = await services.turn_start(user=user, frame=frame)
    return _sse_response(_sse(user, started.run_id, 0))


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
@_endpoint
async def run_events(request: HttpRequest, user: User, run_id: str) -> HttpResponseBase:
    """GET /api/chat/runs/<id>/events: replay after Last-Event-ID (`<run_id>:<seq>`), then follow.

    A Last-Event-ID at or past the run's terminal event answers 204, so EventSource clients stop reconnecting."""
    last = request.headers.get("Last-Event-ID") or request.GET.get("last_event_id") or ""
    if last:
        named, sep, seq_text = last.rpartition(":")
        if not sep or named != run_id or not seq_text.isdigit() or len(seq_text) > 19:
            return _error("bad_frame", "Last-Event-ID must be <run_id>:<seq> of this run")
        after_seq = int(seq_text)
    else:
        try:
            after_seq = int(request.GET.get("after_seq", "0"))
        except ValueError:
            return _error("bad_frame", "after_seq must be an integer")
    run = await selectors.run_for_user(user=user, run_id=run_id)
    if last and selectors.run_stream_ended(run=run, after_seq=after_seq):
        return HttpResponse(status=204)
    return _sse_response(_sse(user, run_id, max(after_seq, 0)))


@described(methods=["POST"], summary="Cancel a run, wherever it runs", tags=["chat"], request=None, parameters=[RUN_ID],
           responses={202: inline_serializer("RunCancelled", {"ok": serializers.BooleanField(), "run_id": serializers.CharField()}),
                      **error_responses("not_found")})
@require_POST
@_endpoint
async def run_cancel(request: HttpRequest, user: User, run_id: str) -> HttpResponse:
    """POST /api/chat/runs/<id>/cancel."""
    await services.run_cancel(user=user, run_id=run_id)
    return JsonResponse({"ok": True, "run_id": run_id}, status=202)


@described(methods=["POST"], summary="Answer a tool_approval", tags=["chat"], parameters=[RUN_ID],
           request=inline_serializer("ApprovalAnswer", {"tool_use_id": serializers.CharField(), "approved": serializers.BooleanField()}),
           responses={200: inline_serializer("ApprovalAnswered", {"ok": serializers.BooleanField()}),
                      **error_responses("bad_json", "bad_frame", "not_found")})
@require_POST
@_endpoint
async def run_approve(request: HttpRequest, user: User, run_id: str) -> HttpResponse:
    """POST /api/chat/runs/<id>/approve {tool_use_id, approved}: the HTTP twin of chat.approve."""
    raw = _body(request)
    if isinstance(raw, FrameError):
        return _error_response(raw)
    try:
        body = client_json(raw or b"{}", chat_settings.CHAT_MAX_FRAME_BYTES, what="body")
    except ClientJSONError as exc:
        return _error_response(exc.error)
    try:
        tool_use_id, approved = body["tool_use_id"], body["approved"]
        if not isinstance(approved, bool) or not isinstance(tool_use_id, str) or not 0 < len(tool_use_id) <= 128:
            raise ValueError  # strict: "yes" is not true, 7 is not "7"
    except (ValueError, KeyError, TypeError):
        return _error("bad_frame", "body must be {tool_use_id: str, approved: bool}")
    await services.approval_answer(user=user, run_id=run_id, tool_use_id=tool_use_id, approved=approved)
    return JsonResponse({"ok": True})


# ---- REST (DRF) ---------------------------------------------------------------------------------


class AttachmentSerializer(serializers.Serializer):
    """An attachment as clients see it (chat.attachments.attachment_data)."""

    id = serializers.CharField()
    name = serializers.CharField()
    content_type = serializers.ChoiceField(choices=list(attachments.ACCEPTED_TYPES))
    size = serializers.IntegerField()
    width = serializers.IntegerField(allow_null=True)
    height = serializers.IntegerField(allow_null=True)
    url = serializers.CharField(help_text="the file (owner only; images inline, PDFs as a download)")
    thumbnail_url = serializers.CharField(allow_null=True, help_text="a small JPEG of an image; null for a PDF")

    def to_representation(self, instance: Any) -> dict[str, Any]:
        return attachments.attachment_data(instance)


@extend_schema_field({"type": ["object", "null"]})
class ObjectOrNullField(serializers.JSONField):
    """A JSON object or null (drf-spectacular would say `oneOf: [{}, null]`, which null matches twice)."""


class EarlierVersionSerializer(serializers.ModelSerializer):
    """An answer a regenerate replaced: read-only, kept so the reader can go back to it."""

    message_html = serializers.SerializerMethodField()

    class Meta:
        model = Message
        fields = ["id", "content", "message_html", "tool_history", "stop_reason", "created_at"]
        read_only_fields = fields

    def get_message_html(self, obj: Message) -> str:
        return render_markdown(obj.content)


class MessageSerializer(serializers.ModelSerializer):
    message_html = serializers.SerializerMethodField()
    custom_payload = ObjectOrNullField(read_only=True)
    run_id = serializers.SerializerMethodField()
    diagnostics = serializers.SerializerMethodField(help_text="The run's diagnostics; staff only (null for everyone else)")
    attachments = AttachmentSerializer(many=True, read_only=True)
    earlier_versions = serializers.SerializerMethodField(
        help_text="An answer's earlier versions, replaced by regenerating it, oldest first (empty for questions)")
    sources = serializers.SerializerMethodField(help_text=(
        "Addition: what the answer's searches found, numbered as it cites them (`[n]`), as in `complete.payload.sources`; "
        "null when it searched no source"))

    class Meta:
        model = Message
        fields = ["id", "role", "content", "message_html", "interaction_type", "suggested_values", "suggested_actions",
                  "custom_payload", "tool_history", "status", "run_id", "feedback", "feedback_comment", "payload_outcome",
                  "stop_reason", "diagnostics", "attachments", "earlier_versions", "sources", "created_at"]

    @extend_schema_field({"type": ["array", "null"], "items": {"$ref": "#/components/schemas/SourceRef"}})
    def get_sources(self, obj: Message) -> list[dict[str, Any]] | None:
        """Addition: an answer's sources as its `complete.payload.sources` listed them (read with the conversation;
        null for questions, answers that searched no source and a message read on its own)."""
        sources = getattr(obj, "run_sources", None)
        return list(sources) if isinstance(sources, list) and sources and obj.role == Message.Role.ASSISTANT else None

    @extend_schema_field(EarlierVersionSerializer(many=True))
    def get_earlier_versions(self, obj: Message) -> list[dict[str, Any]]:
        """Filled in by selectors.conversation_messages; a message read on its own lists none."""
        return list(EarlierVersionSerializer(getattr(obj, "earlier_versions", []), many=True).data)

    def get_run_id(self, obj: Message) -> str | None:
        return str(obj.run_id) if obj.run_id else None

    def get_diagnostics(self, obj: Message) -> dict[str, Any] | None:
        """Staff see a reloaded answer's diagnostics as they saw the live one's (context `staff`, runs selected)."""
        if not self.context.get("staff") or obj.role != Message.Role.ASSISTANT or obj.run_id is None:
            return None
        return dict(obj.run.diagnostics) if obj.run is not None else None

    def get_message_html(self, obj: Message) -> str:
        return render_markdown(obj.content) if obj.role == Message.Role.ASSISTANT else ""


class ConversationSerializer(serializers.ModelSerializer):
    pinned = serializers.BooleanField(required=False, help_text="pinned to the top of its owner's list (set it to pin or unpin)")

    class Meta:
        model = Conversation
        fields = ["id", "title", "page", "created_at", "updated_at", "pinned"]
        read_only_fields = ["id", "created_at", "updated_at"]


class ConversationListItemSerializer(ConversationSerializer):
    snippet = serializers.SerializerMethodField(help_text=(
        "with `q`: where the conversation's first message that contains it says it (about 200 characters, \"…\" where "
        "the message goes on); \"\" when only the title matches, and without `q`"))

    class Meta(ConversationSerializer.Meta):
        fields = [*ConversationSerializer.Meta.fields, "snippet"]

    def get_snippet(self, obj: Conversation) -> str:
        return selectors.conversation_snippet(getattr(obj, "snippet", ""))


class ConversationListQuery(serializers.Serializer):
    """The list's query parameters: what to find, and which part of the list (all of it when no limit is given)."""

    q = serializers.CharField(required=False, allow_blank=True, max_length=200,
                              help_text="only conversations whose title or any message contains this text (case-insensitive)")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=200, help_text="at most this many conversations")
    # bounded: a database's OFFSET is a 64-bit integer (a larger one was a server error)
    offset = serializers.IntegerField(required=False, min_value=0, max_value=1_000_000_000, default=0, help_text="skip this many first")


class ConversationDetailQuery(serializers.Serializer):
    """Which of the conversation's messages: all of them by default, or the latest part (a long conversation is read
    a page at a time)."""

    limit = serializers.IntegerField(required=False, min_value=1, max_value=500, help_text="only the latest this many messages")
    before = serializers.IntegerField(required=False, min_value=1, max_value=2**63 - 1,
                                      help_text="only messages older than the message with this id (the first one of the part already read)")


class ConversationDetailSerializer(ConversationSerializer):
    messages = serializers.SerializerMethodField()
    has_earlier = serializers.SerializerMethodField(help_text=(
        "older messages than those returned exist (with `limit`): ask again with `before` set to the first one's id"))

    class Meta(ConversationSerializer.Meta):
        fields = [*ConversationSerializer.Meta.fields, "messages", "has_earlier"]

    def _window(self, obj: Conversation) -> tuple[list[Message], bool]:
        """The messages asked for (the view's validated `window` parameters), read once for both fields."""
        if "_read" not in self.context:
            self.context["_read"] = selectors.conversation_messages(
                conversation=obj, with_runs=self._staff(), **self.context.get("window", {}))
        read: tuple[list[Message], bool] = self.context["_read"]
        return read

    def _staff(self) -> bool:
        request = self.context.get("request")
        return bool(request is not None and getattr(request.user, "is_staff", False))

    def get_messages(self, obj: Conversation) -> list[dict[str, Any]]:
        return MessageSerializer(self._window(obj)[0], many=True, context={"staff": self._staff()}).data

    def get_has_earlier(self, obj: Conversation) -> bool:
        return self._window(obj)[1]


def _rest_exception(view: APIView, exc: Exception) -> HttpResponse:
    """Bodies DRF could not read answer with the chat error envelope (not DRF's `{detail}` or Django's HTML 400)."""
    if isinstance(exc, RequestDataTooBig):
        return _error("too_large", f"body is larger than {chat_settings.CHAT_MAX_FRAME_BYTES} bytes")
    if isinstance(exc, RefusedJSON):
        return _error_response(exc.error)
    if isinstance(exc, ParseError):
        return _error("bad_json", "body is not valid JSON")
    response: HttpResponse = APIView.handle_exception(view, exc)
    return response


class RefusedJSON(ParseError):
    """A body `client_json` refused; `error` answers it (bad_json, bad_frame), as on every other transport."""

    def __init__(self, error: FrameError) -> None:
        super().__init__(error.message)
        self.error = error


class StrictJSONParser(JSONParser):
    """DRF's JSON parser reading bodies as every transport does (`client_json`: no NaN/Infinity, NUL or lone
    surrogates, depth and CHAT_MAX_FRAME_BYTES), where DRF's own takes NaN and hands NUL to the database."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        data = stream.read(chat_settings.CHAT_MAX_FRAME_BYTES + 1) if stream is not None else b""  # one byte over is too_large
        try:
            return client_json(data, chat_settings.CHAT_MAX_FRAME_BYTES, what="body") if data else {}
        except ClientJSONError as exc:
            raise RefusedJSON(exc.error) from None


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


@described_actions(
    list={"summary": "The user's conversations, the pinned ones first, then the most recently updated first", "parameters": [ConversationListQuery],
          "responses": {200: ConversationListItemSerializer(many=True), **drf_error_responses(400)}},
    create={"summary": "Create a conversation", "responses": {201: ConversationSerializer, **drf_error_responses(400)}},
    retrieve={"summary": "A conversation with its messages (all, or the latest part: `limit`, `before`)", "parameters": [ConversationDetailQuery],
              "responses": {200: ConversationDetailSerializer, **drf_error_responses(400, 404)}},
    update={"summary": "Rename, pin or unpin a conversation", "responses": {200: ConversationSerializer, **drf_error_responses(400, 404)}},
    partial_update={"summary": "Rename, pin or unpin a conversation", "responses": {200: ConversationSerializer, **drf_error_responses(400, 404)}},
    destroy={"summary": "Delete a conversation and its runs", "responses": {204: None, **drf_error_responses(404)}},
)
class ConversationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                          mixins.UpdateModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """The user's own conversations; anyone else's id is a 404."""

    # Declared here, not taken from the host's DRF defaults (which may be AllowAny).
    authentication_classes = [TokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]
    parser_classes = [StrictJSONParser]  # the API takes JSON (as documented); form posts are refused with 415
    queryset = Conversation.objects.none()  # for the schema's types only: get_queryset() below is what is served

    def handle_exception(self, exc: Exception) -> HttpResponse:
        return _rest_exception(self, exc)

    def get_queryset(self) -> Any:
        return selectors.conversation_list(user=self.request.user)

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        conversation = self.get_object()
        params = ConversationDetailQuery(data=request.query_params)
        params.is_valid(raise_exception=True)
        context = {**self.get_serializer_context(), "window": dict(params.validated_data)}
        return Response(ConversationDetailSerializer(conversation, context=context).data)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        params = ConversationListQuery(data=request.query_params)
        params.is_valid(raise_exception=True)
        found = selectors.conversation_list(user=request.user, query=params.validated_data.get("q", "").strip())
        start, limit = params.validated_data["offset"], params.validated_data.get("limit")
        page = found[start:start + limit] if limit is not None else found[start:]
        return Response(ConversationListItemSerializer(page, many=True).data)

    def get_serializer_class(self) -> Any:
        return ConversationDetailSerializer if self.action == "retrieve" else ConversationSerializer

    def perform_create(self, serializer: Any) -> None:
        serializer.instance = services.conversation_create(
            user=self.request.user, title=serializer.validated_data.get("title", ""), page=serializer.validated_data.get("page", ""),
            pinned=serializer.validated_data.get("pinned", False))

    def perform_update(self, serializer: Any) -> None:
        data = serializer.validated_data
        serializer.instance = services.conversation_update(
            user=self.request.user, conversation_id=serializer.instance.pk, title=data.get("title"), pinned=data.get("pinned"))

    def perform_destroy(self, instance: Conversation) -> None:
        services.conversation_delete(user=self.request.user, conversation_id=instance.pk)

    @operation(
        summary="Export a conversation as a download (JSON or Markdown)",
        parameters=[OpenApiParameter("format", str, enum=["json", "markdown"], required=False,
                                     description="the file format (default json); not DRF's renderer choice here")],
        responses={(200, "application/json"): OpenApiResponse(EXPORT_JSON_SCHEMA, description="The conversation, as a download"),
                   (200, "text/markdown"): OpenApiResponse(OpenApiTypes.STR, description="A readable transcript, as a download"),
                   **drf_error_responses(400, 404)},
    )
    @action(detail=True, methods=["get"], content_negotiation_class=ExportNegotiation)
    def export(self, request: Request, pk: str | None = None) -> HttpResponse:
        """GET <api>conversations/<id>/export/?format=json|markdown: the conversation as a download (owner only)."""
        fmt = request.query_params.get("format", "json")
        if fmt not in EXPORT_FORMATS:
            return JsonResponse({"detail": "format must be json or markdown"}, status=400)
        conversation = self.get_object()  # someone else's id: the same 404 as a missing one
        data = retention.conversation_export(conversation=conversation)
        content_type, extension = EXPORT_FORMATS[fmt]
        body = json.dumps(data, ensure_ascii=False, indent=2, default=str) if fmt == "json" else retention.conversation_markdown(data)
        response = HttpResponse(body, content_type=content_type)
        response["Content-Disposition"] = f'attachment; filename="conversation-{conversation.pk}.{extension}"'
        return response

    @operation(
        operation_id="conversations_export_all",
        summary="Export every conversation of the user as one JSON download",
        responses={(200, "application/json"): OpenApiResponse(EXPORT_ALL_JSON_SCHEMA, description="All the user's conversations, as a download"),
                   **drf_error_responses()},
    )
    @action(detail=False, methods=["get"], url_path="export")
    def export_all(self, request: Request) -> StreamingHttpResponse:
        """GET <api>conversations/export/: every conversation of the user, oldest first, streamed a conversation at a time."""
        response = StreamingHttpResponse(retention.user_conversations_export(user=request.user), content_type="application/json")
        response["Content-Disposition"] = 'attachment; filename="conversations.json"'
        return response

    @operation(summary="Delete every conversation of the user", request=None,
                   responses={200: inline_serializer("DeletedAll", {"deleted": serializers.IntegerField()}), **drf_error_responses()})
    @action(detail=False, methods=["post"], url_path="delete-all")
    def delete_all(self, request: Request) -> Response:
        """POST <api>conversations/delete-all/: delete every conversation of the user; {"deleted": n}."""
        return Response({"deleted": services.conversations_delete_all(user=request.user)})


class MessageMarkSerializer(serializers.Serializer):
    """PATCH <api>/messages/<id>/: feedback ("good", "bad" or "" to clear), its comment, the proposal's outcome."""

    feedback = serializers.ChoiceField(choices=["good", "bad", ""], required=False)
    feedback_comment = serializers.CharField(max_length=2000, allow_blank=True, required=False)
    payload_outcome = serializers.ChoiceField(choices=["accepted", "rejected", ""], required=False)


class MessageViewSet(viewsets.GenericViewSet):
    """The user's own assistant messages: mark them (feedback, the proposal's outcome); read them via conversations."""

    authentication_classes = [TokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]
    parser_classes = [StrictJSONParser]
    serializer_class = MessageMarkSerializer
    queryset = Message.objects.none()  # for the schema's types only: partial_update looks the message up as the user
    schema = AutoSchema()

    def handle_exception(self, exc: Exception) -> HttpResponse:
        return _rest_exception(self, exc)

    @operation(summary="Mark an answer: feedback (good/bad + comment) or what the user did with its proposal", tags=["conversations"],
               request=MessageMarkSerializer, responses={200: MessageSerializer, **drf_error_responses(400, 404)})
    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        try:
            message_id = int(pk or "")
        except ValueError:
            raise Http404 from None
        marks = MessageMarkSerializer(data=request.data)
        marks.is_valid(raise_exception=True)
        try:
            msg = services.message_mark(user=request.user, message_id=message_id, **marks.validated_data)
        except NotFound:
            raise Http404 from None
        return Response(MessageSerializer(msg).data)


class PreferencesSerializer(serializers.ModelSerializer):
    instructions = serializers.CharField(
        max_length=PREFERENCES_MAX_CHARS, allow_blank=True, help_text=(
            "what every answer should take into account, in the user's words (who they are, how to answer); sent to "
            "the model with every turn as the user's data; \"\" clears it"))

    class Meta:
        model = UserPreferences
        fields = ["instructions", "updated_at"]
        read_only_fields = ["updated_at"]


class PreferencesView(APIView):
    """GET/PUT <api>preferences/: the user's own standing instructions for the assistant (ChatGPT's custom instructions)."""

    authentication_classes = [TokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]
    parser_classes = [StrictJSONParser]
    schema = AutoSchema()

    def handle_exception(self, exc: Exception) -> HttpResponse:
        return _rest_exception(self, exc)

    @operation(summary="The user's preferences: what every answer should take into account", tags=["preferences"],
               responses={200: PreferencesSerializer, **drf_error_responses()})
    def get(self, request: Request) -> Response:
        return Response(PreferencesSerializer(selectors.preferences_get(user=request.user)).data)

    @operation(summary="Set the user's preferences", tags=["preferences"], request=PreferencesSerializer,
               responses={200: PreferencesSerializer, **drf_error_responses(400)})
    def put(self, request: Request) -> Response:
        body = PreferencesSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        preferences = services.preferences_update(user=request.user, instructions=body.validated_data["instructions"])
        return Response(PreferencesSerializer(preferences).data)


class ChatView(APIView):
    """POST /api/chat: one non-streaming turn; the body is the final `complete` event's payload (or an error)."""

    authentication_classes = [TokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]
    parser_classes = [StrictJSONParser]
    schema = AutoSchema()

    @operation(summary="One turn, answered when it ends", tags=["chat"], request={"application/json": CHAT_SEND_BODY}, responses={
        200: OpenApiResponse(CompletePayload, description="The final `complete` event's payload."),
        **error_responses(*_SEND_ERRORS, "cancelled", "interrupted", "internal", "provider_error", "provider_unavailable",
                          "overloaded", "timeout", "bad_request", "auth_error"),
    })
    def post(self, request: Request) -> HttpResponse:
        frame = _send_frame(_body(request._request))
        if isinstance(frame, FrameError):
            return _error_response(frame)
        return async_to_sync(_turn_to_completion)(request.user, frame)

    def handle_exception(self, exc: Exception) -> HttpResponse:
        """DRF's own refusals answer like every chat endpoint: an error frame as the body."""
        if isinstance(exc, (NotAuthenticated, AuthenticationFailed)):
            return _error("unauthorized", str(exc.detail))
        return _rest_exception(self, exc)


async def _turn_to_completion(user: User, frame: ChatSend) -> HttpResponse:
    """Run the turn and answer with its terminal event: `complete`'s payload, or the error it ended with."""
    try:
        started = await services.turn_start(user=user, frame=frame)
    except ServiceError as exc:
        return _refused(exc)
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


# ---- attachments ----------------------------------------------------------------------------------

ATTACHMENT_ID = OpenApiParameter("attachment_id", OpenApiTypes.STR, OpenApiParameter.PATH, description="the attachment's id")
_UPLOAD_OVERHEAD = 64 * 1024  # multipart headers and boundaries around the file


class AttachmentUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="an image (PNG, JPEG, WebP, GIF) or a PDF, at most CHAT_MAX_ATTACHMENT_BYTES")


class _AttachmentView(APIView):
    """The user's own attachments; anyone else's id gets the same `not_found` as a missing one."""

    authentication_classes = [TokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]
    schema = AutoSchema()

    def handle_exception(self, exc: Exception) -> HttpResponse:
        if isinstance(exc, (NotAuthenticated, AuthenticationFailed)):
            return _error("unauthorized", str(exc.detail))
        if isinstance(exc, ServiceError):
            return _refused(exc)
        return _rest_exception(self, exc)


def _file_response(att: Any, field: Any, *, content_type: str, download: bool) -> FileResponse:
    """The stored bytes with the sniffed type; never rendered as a page (nosniff, a sandboxing CSP)."""
    response = FileResponse(field.open("rb"), content_type=content_type, as_attachment=download, filename=att.name)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = "private, max-age=3600"
    return response


class AttachmentUploadView(_AttachmentView):
    parser_classes = [MultiPartParser]

    @operation(summary="Upload an attachment (an image or a PDF) to send with a message", tags=["attachments"],
               request={"multipart/form-data": AttachmentUploadSerializer},
               responses={201: AttachmentSerializer, **error_responses("bad_frame", "too_large", "unsupported_type", "rate_limited")})
    def post(self, request: Request) -> HttpResponse:
        """POST <api>attachments/ (multipart, field `file`): the user's unsent attachment, judged by its bytes."""
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > chat_settings.CHAT_MAX_ATTACHMENT_BYTES + _UPLOAD_OVERHEAD:  # refused before reading it
            return _error("too_large", f"The file is larger than {chat_settings.CHAT_MAX_ATTACHMENT_BYTES} bytes.")
        upload = request.FILES.get("file")
        if upload is None:
            return _error("bad_frame", "send the file as the multipart field `file`")
        att = services.attachment_upload(user=request.user, upload=upload)
        return JsonResponse(attachments.attachment_data(att), status=201)


class AttachmentFileView(_AttachmentView):
    @operation(summary="An attachment's file (its owner only)", tags=["attachments"], parameters=[ATTACHMENT_ID],
               responses={(200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY, description="The file, with its type"),
                          **error_responses("not_found")})
    def get(self, request: Request, attachment_id: str) -> HttpResponseBase:
        """GET <api>attachments/<id>/: the file; images inline, PDFs as a download."""
        att = selectors.attachment_get(user=request.user, attachment_id=attachment_id)
        if att is None:
            return _error("not_found", "attachment not found")
        return _file_response(att, att.file, content_type=att.content_type, download=att.content_type == attachments.PDF)

    @operation(summary="Remove an attachment not sent yet", tags=["attachments"], parameters=[ATTACHMENT_ID],
               responses={204: None, **error_responses("not_found")})
    def delete(self, request: Request, attachment_id: str) -> HttpResponse:
        """DELETE <api>attachments/<id>/: an unsent upload goes (a sent one stays with its message: `not_found`)."""
        services.attachment_discard(user=request.user, attachment_id=attachment_id)
        return HttpResponse(status=204)


class AttachmentThumbnailView(_AttachmentView):
    @operation(summary="An image attachment's thumbnail (its owner only)", tags=["attachments"], parameters=[ATTACHMENT_ID],
               responses={(200, "image/jpeg"): OpenApiResponse(OpenApiTypes.BINARY, description="A JPEG at most 320 pixels wide and high"),
                          **error_responses("not_found")})
    def get(self, request: Request, attachment_id: str) -> HttpResponseBase:
        """GET <api>attachments/<id>/thumbnail/: a small JPEG of an image (a PDF has none: `not_found`)."""
        att = selectors.attachment_get(user=request.user, attachment_id=attachment_id)
        if att is None or not att.thumbnail:
            return _error("not_found", "attachment not found")
        return _file_response(att, att.thumbnail, content_type="image/jpeg", download=False)


class TrayCatalog(JavaScriptCatalog):
    """The tray's translations (the `djangojs` domain of every installed app) for the language `?lang=` names: the
    page's language, which the tray tag puts in the URL, so the tray speaks it whatever negotiated this request."""

    domain = "djangojs"

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        lang = language_normalize(request.GET.get("lang"))
        if lang is None or not check_for_language(lang):
            return super().get(request, *args, **kwargs)
        with translation.override(lang):
            return super().get(request, *args, **kwargs)
