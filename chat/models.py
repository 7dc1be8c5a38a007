"""Conversations, messages, runs (one per assistant turn) and tool calls."""
from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


class Conversation(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations")
    title = models.CharField(max_length=200, blank=True)
    page = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["owner", "-updated_at"])]

    def __str__(self) -> str:
        return self.title or f"Conversation {self.pk}"


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
    provider_messages = models.JSONField(default=list, blank=True)  # exact provider blocks of this turn
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.COMPLETE)
    client_message_id = models.CharField(max_length=64, null=True, blank=True)
    run = models.ForeignKey("Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
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
        indexes = [models.Index(fields=["conversation", "-id"])]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"


class Run(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running"
        COMPLETED = "completed"
        CANCELLED = "cancelled"
        ERROR = "error"
        INTERRUPTED = "interrupted"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="runs")
    user_message = models.ForeignKey(Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    assistant_message = models.ForeignKey(Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    provider = models.CharField(max_length=100, blank=True)
    model = models.CharField(max_length=100, blank=True)
    owner_process = models.CharField(max_length=64, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    time_to_first_token_ms = models.FloatField(null=True, blank=True)
    duration_ms = models.FloatField(null=True, blank=True)
    last_seq = models.PositiveIntegerField(default=0)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    diagnostics = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation"], condition=Q(status="running"), name="one_running_run_per_conversation"
            )
        ]
        indexes = [models.Index(fields=["status", "heartbeat_at"])]

    def __str__(self) -> str:
        return f"Run {self.id} ({self.status})"


class ToolCall(models.Model):
    class Status(models.TextChoices):
        OK = "ok"
        ERROR = "error"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tool_calls")
    index = models.PositiveIntegerField()
    tool_use_id = models.CharField(max_length=128)
    name = models.CharField(max_length=100, db_index=True)
    input = models.JSONField(default=dict)
    output = models.TextField(blank=True)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OK)
    duration_ms = models.FloatField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "tool_use_id"], name="unique_tool_use_per_run")]


class PendingApproval(models.Model):
    """A tool call waiting for the user's yes/no; answered exactly once."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="approvals")
    tool_use_id = models.CharField(max_length=128)
    tool_name = models.CharField(max_length=100)
    input = models.JSONField(default=dict)
    approved = models.BooleanField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "tool_use_id"], name="unique_approval_per_tool_use")]


class UsedActionToken(models.Model):
    """Server-action tokens already spent; a replay finds its row and is refused."""

    nonce = models.CharField(max_length=64, unique=True)
    used_at = models.DateTimeField(auto_now_add=True)
