"""The REST resources: the user's own conversations (list, read, rename, pin, delete, export) and messages (marks)."""
from __future__ import annotations

from typing import Any

from django.http import Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, inline_serializer
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from chat import selectors, services
from chat.api.auth import Authenticated
from chat.api.bodies import StrictJSONParser
from chat.api.errors import ErrorMapped
from chat.api.export import EXPORT_ALL_JSON_SCHEMA, EXPORT_FORMATS, EXPORT_JSON_SCHEMA, ExportNegotiation, export_all_response, export_response
from chat.api.openapi import described_actions, drf_error_responses, operation
from chat.api.serializers import (
    ConversationDetailQuery,
    ConversationDetailSerializer,
    ConversationListItemSerializer,
    ConversationListQuery,
    ConversationSerializer,
    MessageMarkSerializer,
    MessageSerializer,
)
from chat.events.errors import NotFound
from chat.models import Conversation, Message


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
class ConversationViewSet(Authenticated, ErrorMapped, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                          mixins.UpdateModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """The user's own conversations; anyone else's id is a 404."""

    parser_classes = [StrictJSONParser]  # the API takes JSON (as documented); form posts are refused with 415
    queryset = Conversation.objects.none()  # for the schema's types only: get_queryset() below is what is served

    def get_queryset(self) -> Any:
        return selectors.conversation_list(user=self.request.user)

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        conversation = self.get_object()
        params = ConversationDetailQuery(data=request.query_params)
        params.is_valid(raise_exception=True)
        staff = bool(getattr(request.user, "is_staff", False))
        messages = selectors.conversation_messages(conversation=conversation, with_runs=staff, **params.validated_data)
        context = {**self.get_serializer_context(), "messages": messages, "staff": staff}
        return Response(ConversationDetailSerializer(conversation, context=context).data)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        params = ConversationListQuery(data=request.query_params)
        params.is_valid(raise_exception=True)
        found = selectors.conversation_list(user=request.user, query=params.validated_data.get("q", "").strip())
        start, limit = params.validated_data["offset"], params.validated_data.get("limit")
        page = list(found[start:start + limit] if limit is not None else found[start:])
        snippets = {c.pk: selectors.conversation_snippet(getattr(c, "snippet", "")) for c in page}
        return Response(ConversationListItemSerializer(page, many=True, context={"snippets": snippets}).data)

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
        return export_response(self.get_object(), fmt)  # someone else's id: the same 404 as a missing one

    @operation(
        operation_id="conversations_export_all",
        summary="Export every conversation of the user as one JSON download",
        responses={(200, "application/json"): OpenApiResponse(EXPORT_ALL_JSON_SCHEMA, description="All the user's conversations, as a download"),
                   **drf_error_responses()},
    )
    @action(detail=False, methods=["get"], url_path="export")
    def export_all(self, request: Request) -> StreamingHttpResponse:
        """GET <api>conversations/export/: every conversation of the user, oldest first, streamed a conversation at a time."""
        return export_all_response(request.user)

    @operation(summary="Delete every conversation of the user", request=None,
                   responses={200: inline_serializer("DeletedAll", {"deleted": serializers.IntegerField()}), **drf_error_responses()})
    @action(detail=False, methods=["post"], url_path="delete-all")
    def delete_all(self, request: Request) -> Response:
        """POST <api>conversations/delete-all/: delete every conversation of the user; {"deleted": n}."""
        return Response({"deleted": services.conversations_delete_all(user=request.user)})


class MessageViewSet(Authenticated, ErrorMapped, viewsets.GenericViewSet):
    """The user's own assistant messages: mark them (feedback, the proposal's outcome); read them via conversations."""

    parser_classes = [StrictJSONParser]
    serializer_class = MessageMarkSerializer
    queryset = Message.objects.none()  # for the schema's types only: partial_update looks the message up as the user
    schema = AutoSchema()

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
