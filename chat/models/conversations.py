"""Conversations, their messages and attachments, and each user's preferences."""
from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


class Conversation(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations")
    title = models.CharField(max_length=200, blank=True)
    page = models.CharField(max_length=100, blank=True)
    # a standard client's name for it (AG-UI threadId, AI SDK chat id), unique per owner only
    thread_id = models.CharField(max_length=200, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # when its owner pinned it to the top of their list (None: not pinned); pinning leaves updated_at alone
    pinned_at = models.DateTimeField(null=True, blank=True)
    # a conversation an eval ran (chat.evals): persisted like any other, kept out of its owner's own list
    is_eval = models.BooleanField(default=False)
    # the last title the server generated for it: a title equal to it is the server's, any other its owner's
    generated_title = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["owner", "-updated_at"])]
        constraints = [
            models.UniqueConstraint(fields=["owner", "thread_id"], condition=Q(thread_id__isnull=False), name="unique_thread_id_per_owner")
        ]

    def __str__(self) -> str:
        return self.title or f"Conversation {self.pk}"

    @property
    def pinned(self) -> bool:
        return self.pinned_at is not None


class MessageQuerySet(models.QuerySet["Message"]):
    def shown(self) -> MessageQuerySet:
        """The messages the conversation shows, to the model and the reader: without the answers a regenerate replaced
        (selectors.history_window's SQL writes the same condition)."""
        return self.filter(replaced=False)


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"

    class Status(models.TextChoices):
        COMPLETE = "complete"
        STREAMING = "streaming"
        CANCELLED = "cancelled"
        ERROR = "error"
        INTERRUPTED = "interrupted"

    class Feedback(models.TextChoices):
        GOOD = "good"
        BAD = "bad"

    class PayloadOutcome(models.TextChoices):
        ACCEPTED = "accepted"
        REJECTED = "rejected"

    class StopReason(models.TextChoices):
        MAX_TOKENS = "max_tokens"  # the model reached CHAT_MAX_TOKENS
        MAX_ITERATIONS = "max_iterations"  # the turn reached CHAT_MAX_ITERATIONS model calls

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(blank=True)
    interaction_type = models.CharField(max_length=32, default="text_input")
    action_metadata = models.JSONField(null=True, blank=True)
    context = models.JSONField(default=dict, blank=True)
    suggested_values = models.JSONField(default=list, blank=True)
    suggested_actions = models.JSONField(default=list, blank=True)
    custom_payload = models.JSONField(null=True, blank=True)
    payloads = models.JSONField(default=list, blank=True)  # every payload of the turn, tool and llm
    tool_history = models.JSONField(default=list, blank=True)
    # exact provider blocks of this turn; empty for an answer that was one text block equal to `content` (history
    # rebuilds it from `content`: chat.turns.persistence.provider_messages_stored)
    provider_messages = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.COMPLETE)
    client_message_id = models.CharField(max_length=64, null=True, blank=True)
    run = models.ForeignKey("Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # the reader's verdict on an answer (the tray's "Good response"/"Bad response"), with an optional comment
    feedback = models.CharField(max_length=8, choices=Feedback.choices, blank=True, db_index=True)
    feedback_comment = models.TextField(blank=True, max_length=2000)
    # what the user did with the answer's proposal (custom_payload), so the tray shows it after a reload
    payload_outcome = models.CharField(max_length=8, choices=PayloadOutcome.choices, blank=True)
    # why a complete answer is unfinished (blank: it ended as the model meant it to), so the reader can ask it to go on
    stop_reason = models.CharField(max_length=16, choices=StopReason.choices, blank=True)
    # an answer a regenerate replaced: kept as an earlier version of the new one (the reader may go back to it), but out
    # of the conversation the model and the message list see
    replaced = models.BooleanField(default=False)

    objects = MessageQuerySet.as_manager()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "client_message_id"],
                condition=Q(client_message_id__isnull=False),
                name="unique_client_message_id_per_conversation",
            )
        ]
        indexes = [
            models.Index(fields=["conversation", "-id"]),
            # a resend's lookup for a new conversation (no conversation id yet): one probe, not one per conversation
            models.Index(fields=["client_message_id"], condition=Q(client_message_id__isnull=False), name="message_client_id"),
            # the answers with a verdict, by day (the quality dashboard's thumbs and comments): a few rows of many
            models.Index(fields=["created_at", "conversation", "feedback"], condition=~Q(feedback=""), name="message_rated"),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"


def attachment_path(instance: Attachment, filename: str) -> str:
    """A random name under the owner's folder: never the uploaded name (which is only shown, never trusted)."""
    return f"pagechat/attachments/{instance.owner_id}/{uuid.uuid4().hex}"


class Attachment(models.Model):
    """A file a user sent with a message (an image or a PDF); unsent (no message) until a chat.send claims it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_attachments")
    conversation = models.ForeignKey(Conversation, null=True, blank=True, on_delete=models.CASCADE, related_name="attachments")
    message = models.ForeignKey(Message, null=True, blank=True, on_delete=models.CASCADE, related_name="attachments")
    file = models.FileField(upload_to=attachment_path, max_length=200)
    thumbnail = models.FileField(upload_to=attachment_path, max_length=200, blank=True)
    name = models.CharField(max_length=200)  # the uploaded file's name, cleaned, for display only
    content_type = models.CharField(max_length=100)  # sniffed from the bytes, never taken from the request
    size = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    width = models.PositiveIntegerField(null=True, blank=True)
    height = models.PositiveIntegerField(null=True, blank=True)
    position = models.PositiveSmallIntegerField(default=0)  # its place among the message's attachments, as sent
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["position", "created_at"]
        indexes = [models.Index(fields=["owner", "message"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.content_type}, {self.size} bytes)"


PREFERENCES_MAX_CHARS = 1500  # as ChatGPT's custom instructions: a paragraph or two, sent with every turn


class UserPreferences(models.Model):
    """What a user wants every answer to take into account, in their own words (ChatGPT's custom instructions,
    Claude.ai's personal preferences); sent to the model as the user's data, with every turn."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_preferences")
    instructions = models.TextField(blank=True, max_length=PREFERENCES_MAX_CHARS)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "user preferences"
        verbose_name_plural = "user preferences"

    def __str__(self) -> str:
        return f"Preferences of user {self.user_id}"
