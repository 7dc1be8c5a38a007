"""Runs (one per assistant turn), their tool calls and approvals, and server actions' tokens and counts."""
from __future__ import annotations

import uuid

from django.db import IntegrityError, models, transaction
from django.db.models import Q

from chat.models.conversations import Conversation, Message


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
    cache_read_tokens = models.PositiveIntegerField(default=0)  # prompt-cache reads (not in input_tokens)
    cache_write_tokens = models.PositiveIntegerField(default=0)  # prompt-cache writes (not in input_tokens)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)  # None: the model has no price
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
        indexes = [
            models.Index(fields=["status", "heartbeat_at"]), models.Index(fields=["created_at"]),
            # the quality dashboard's columns (chat.admin.quality_report), so its GROUP BYs over a period read this index alone, never
            # the rows (whose diagnostics make them wide); `id` for the join to the tool calls
            models.Index(fields=["created_at", "conversation", "time_to_first_token_ms", "error_code", "input_tokens", "output_tokens",
                                 "cache_read_tokens", "cache_write_tokens", "cost_usd", "id"], name="run_quality"),
        ]

    def __str__(self) -> str:
        return f"Run {self.id} ({self.status})"


class Quality(Run):
    """The admin's quality dashboard (/admin/pagechat/quality/, chat.admin.quality_report): a place in the admin, its figures summed
    from the runs; no rows or permissions of its own (it asks for the runs' view permission)."""

    class Meta:
        proxy = True
        default_permissions = ()
        verbose_name = "quality dashboard"
        verbose_name_plural = "quality dashboard"


class ToolCall(models.Model):
    class Status(models.TextChoices):
        OK = "ok"
        ERROR = "error"
        STARTED = "started"  # recorded before the tool runs; still so only while it runs
        INTERRUPTED = "interrupted"  # its process stopped while it ran: never run again, reported as interrupted

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tool_calls")
    index = models.PositiveIntegerField()
    tool_use_id = models.CharField(max_length=128)
    name = models.CharField(max_length=100, db_index=True)
    input = models.JSONField(default=dict)
    output = models.TextField(blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.OK)
    duration_ms = models.FloatField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "tool_use_id"], name="unique_tool_use_per_run")]
        indexes = [models.Index(fields=["run", "status"], name="toolcall_run_status")]  # the quality dashboard's calls and failures


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


class ClientToolWait(models.Model):
    """A frontend tool call waiting for the tab that started the run (`tab_id`); answered exactly once, by that tab, by
    the page leaving, or by the run when it stops waiting. `result` is {output, is_error, payload, state}."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="client_tool_waits")
    tool_use_id = models.CharField(max_length=128)
    tool_name = models.CharField(max_length=100)
    tab_id = models.CharField(max_length=64)
    result = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "tool_use_id"], name="unique_client_tool_wait_per_tool_use")]


class UsedActionToken(models.Model):
    """Server-action tokens already spent; a replay finds its row and is refused."""

    nonce = models.CharField(max_length=64, unique=True)
    used_at = models.DateTimeField(auto_now_add=True)


class ActionStat(models.Model):
    """Per page and server action: how often it was offered, clicked, and how the clicks ended (admin analytics)."""

    page = models.CharField(max_length=100, blank=True)
    action = models.CharField(max_length=100)
    offered = models.PositiveIntegerField(default=0)
    clicked = models.PositiveIntegerField(default=0)
    succeeded = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    rejected = models.PositiveIntegerField(default=0)  # clicked but answered, not run (unknown, expired, used)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["page", "action"], name="unique_action_stat_per_page")]
        ordering = ["page", "action"]

    def __str__(self) -> str:
        return f"{self.page}/{self.action}"


ACTION_STAT_FIELDS = frozenset({"offered", "clicked", "succeeded", "failed", "rejected"})


def action_stat_count(*, page: str, action: str, fields: tuple[str, ...], by: int = 1) -> None:
    """Add `by` to the named counters of (page, action), atomically (F expressions; the row is made on first use)."""
    assert set(fields) <= ACTION_STAT_FIELDS, fields
    page, action = page[:100], action[:100]
    updates = {name: models.F(name) + by for name in fields}
    if not ActionStat.objects.filter(page=page, action=action).update(**updates):
        try:
            with transaction.atomic():
                ActionStat.objects.create(page=page, action=action, **{name: by for name in fields})
        except IntegrityError:  # created meanwhile by another turn
            ActionStat.objects.filter(page=page, action=action).update(**updates)
