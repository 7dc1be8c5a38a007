"""Stored eval sets: cases, runs of a set against a provider, and each case's result."""
from __future__ import annotations

from django.conf import settings
from django.db import models

from chat.models.conversations import Conversation


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
