"""Conversations, messages, runs (one per assistant turn) and tool calls."""
from __future__ import annotations

import uuid

from django.conf import settings
from django.db import IntegrityError, models, transaction
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
            # the quality dashboard's columns (chat.quality), so its GROUP BYs over a period read this index alone, never
            # the rows (whose diagnostics make them wide); `id` for the join to the tool calls
            models.Index(fields=["created_at", "conversation", "time_to_first_token_ms", "error_code", "input_tokens", "output_tokens",
                                 "cache_read_tokens", "cache_write_tokens", "cost_usd", "id"], name="run_quality"),
        ]

    def __str__(self) -> str:
        return f"Run {self.id} ({self.status})"


class Quality(Run):
    """The admin's quality dashboard (/admin/pagechat/quality/, chat.quality): a place in the admin, its figures summed
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


class EvalSet(models.Model):
    """A set of eval cases kept in the database, built in the admin (chat.evals.stored makes it a chat.evals.spec.EvalSet,
    the file format's, so it runs like a file: `manage.py chat_eval --set NAME`)."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "eval set"

    def __str__(self) -> str:
        return self.name


class EvalCase(models.Model):
    """One case of a stored set, in the file format's terms (docs/evals.md): its turns, page, context and user, what its
    last turn must show, and the answer the conversation it was made from had (a reference, not an expectation)."""

    eval_set = models.ForeignKey(EvalSet, on_delete=models.CASCADE, related_name="cases")
    name = models.CharField(max_length=200)
    page = models.CharField(max_length=100)
    # the case runs as this user (their permissions and data); a user deleted takes the cases run as them along
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_eval_cases")
    context = models.JSONField(default=dict, blank=True)
    turns = models.JSONField(default=list)  # the file format's turns: [{"message": ..., "interaction_type": ..., ...}]
    expect = models.JSONField(default=dict, blank=True)
    judge = models.JSONField(null=True, blank=True)  # {"criteria": ..., "min_score": ...}; None: no judge
    reference_answer = models.TextField(blank=True)
    source_conversation = models.ForeignKey(Conversation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["eval_set", "id"]
        verbose_name = "eval case"
        constraints = [models.UniqueConstraint(fields=["eval_set", "name"], name="unique_eval_case_name_per_set")]

    def __str__(self) -> str:
        return self.name


class EvalRun(models.Model):
    """One run of a stored set against a provider: queued by the admin or the command, its progress while it runs, its
    pass rate and report once it ends."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        COMPLETED = "completed"
        FAILED = "failed"  # it could not run (a case's user gone, an unknown provider, the process failed): see `error`

    eval_set = models.ForeignKey(EvalSet, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    # asked for (blank: the settings' CHAT_PROVIDER, CHAT_MODEL, CHAT_EVAL_JUDGE_PROVIDER) ...
    provider = models.CharField(max_length=200, blank=True)
    model = models.CharField(max_length=200, blank=True)
    judge_provider = models.CharField(max_length=200, blank=True)
    repeat = models.PositiveSmallIntegerField(default=1)
    # ... and what answered, from the report
    provider_used = models.CharField(max_length=200, blank=True)
    model_used = models.CharField(max_length=200, blank=True)
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)  # the last progress written
    done = models.PositiveIntegerField(default=0)  # runs of cases done, of `total`
    total = models.PositiveIntegerField(default=0)
    passed = models.PositiveIntegerField(default=0)  # runs of cases, as the report counts them
    failed = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    pass_rate = models.FloatField(null=True, blank=True)  # passed / (passed + failed); None: nothing scored
    error = models.TextField(blank=True)
    report = models.JSONField(null=True, blank=True)  # the JSON report (chat.evals.results.EvalReport)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["eval_set", "-created_at"], name="evalrun_set_latest")]
        verbose_name = "eval run"

    def __str__(self) -> str:
        return f"{self.eval_set.name} #{self.pk}"


class EvalCaseResult(models.Model):
    """A case's result in one eval run (over its `repeat` runs): what the diff with the set's previous run compares, by
    the case's name."""

    class Status(models.TextChoices):
        PASSED = "passed"
        FAILED = "failed"
        SKIPPED = "skipped"

    eval_run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    case = models.ForeignKey(EvalCase, null=True, blank=True, on_delete=models.SET_NULL, related_name="results")
    name = models.CharField(max_length=200)  # the case's name when it ran
    status = models.CharField(max_length=8, choices=Status.choices)
    failures = models.JSONField(default=list, blank=True)  # why, one line per expectation (and judge) that did not hold
    answer = models.TextField(blank=True)  # the last run's last answer
    seconds = models.FloatField(default=0)
    tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    conversation = models.ForeignKey(Conversation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")  # the last run's
    detail = models.JSONField(default=dict, blank=True)  # the report's CaseResult: every run, expectation and turn

    class Meta:
        ordering = ["eval_run", "id"]
        verbose_name = "eval case result"
        constraints = [models.UniqueConstraint(fields=["eval_run", "name"], name="unique_eval_case_result_per_run")]

    def __str__(self) -> str:
        return f"{self.name}: {self.status}"
