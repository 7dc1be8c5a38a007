"""The REST resources' serializers: conversations, messages, attachments and preferences as clients read them."""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from chat.events.rendering import render_markdown
from chat.models import PREFERENCES_MAX_CHARS, Conversation, Message, UserPreferences
from chat.userdata import attachments, blocks


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
        return blocks.attachment_data(instance)


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
        return str(self.context.get("snippets", {}).get(obj.pk, ""))  # the view's, as the reader sees it


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

    def get_messages(self, obj: Conversation) -> list[dict[str, Any]]:
        # the messages the view read (context `messages`: the part asked for, and whether older ones exist)
        messages: list[Message] = self.context["messages"][0]
        return MessageSerializer(messages, many=True, context={"staff": self.context.get("staff", False)}).data

    def get_has_earlier(self, obj: Conversation) -> bool:
        return bool(self.context["messages"][1])


class MessageMarkSerializer(serializers.Serializer):
    """PATCH <api>/messages/<id>/: feedback ("good", "bad" or "" to clear), its comment, the proposal's outcome."""

    feedback = serializers.ChoiceField(choices=["good", "bad", ""], required=False)
    feedback_comment = serializers.CharField(max_length=2000, allow_blank=True, required=False)
    payload_outcome = serializers.ChoiceField(choices=["accepted", "rejected", ""], required=False)


class PreferencesSerializer(serializers.ModelSerializer):
    instructions = serializers.CharField(
        max_length=PREFERENCES_MAX_CHARS, allow_blank=True, help_text=(
            "what every answer should take into account, in the user's words (who they are, how to answer); sent to "
            "the model with every turn as the user's data; \"\" clears it"))

    class Meta:
        model = UserPreferences
        fields = ["instructions", "updated_at"]
        read_only_fields = ["updated_at"]


class AttachmentUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="an image (PNG, JPEG, WebP, GIF) or a PDF, at most CHAT_MAX_ATTACHMENT_BYTES")
