"""Evals in the admin: a conversation made into a case in one action, cases collected into stored sets, a set run
against a provider in the background (its progress shown), and each run's pass rate, per-case results and what
changed since the set's previous run (chat.evals.stored does the work).

Imported by the app's `ready()` when the admin is installed, not by chat.admin: chat.evals sits above chat.admin in
the import layers (pyproject's import-linter contract). It adds its action to the conversations' admin.
"""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext, gettext_lazy as _, ngettext

from chat.admin.conversations import ConversationAdmin
from chat.evals.judge import provider_class
from chat.evals.spec import EvalSpecError, eval_set_parse
from chat.evals.stored import CaseRefused, case_from_conversation, eval_run_diff, eval_run_stalled, eval_run_start
from chat.models import Conversation, EvalCase, EvalCaseResult, EvalRun, EvalSet

MAX_REPEAT = 10
RUNS_LISTED = 20  # a set's page lists its latest runs, at most this many
ANSWER_SHOWN = 300  # characters of each case's answer in a run's results


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _run_state(run: EvalRun) -> str:
    """A run's status as staff read it: the progress while it runs, `stopped` when its process went away."""
    if eval_run_stalled(run):
        return gettext("stopped (no progress since %(when)s)") % {"when": (run.heartbeat_at or run.created_at).strftime("%Y-%m-%d %H:%M")}
    if run.status in (EvalRun.Status.QUEUED, EvalRun.Status.RUNNING):
        return gettext("%(status)s: %(done)d of %(total)d") % {"status": run.get_status_display(), "done": run.done, "total": run.total}
    return str(run.get_status_display())


# conversations -> cases

class AddToSetForm(forms.Form):
    eval_set = forms.ModelChoiceField(label=_("Add to the set"), queryset=EvalSet.objects.all(), required=False)
    new_set = forms.CharField(label=_("or to a new set named"), max_length=200, required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if bool(data.get("eval_set")) == bool((data.get("new_set") or "").strip()):
            raise forms.ValidationError(_("Choose a set, or name a new one (not both)."))
        name = (data.get("new_set") or "").strip()
        if name and EvalSet.objects.filter(name=name).exists():
            raise forms.ValidationError(_("A set is already named %(name)s: choose it above.") % {"name": name})
        return data


@admin.action(description=_("Make eval cases of the selected conversations"), permissions=["add_evalcase"])
def add_to_eval_set(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Conversation]) -> HttpResponse | None:
    """Each selected conversation becomes a case of a stored set (its questions, page, context and user; its answer kept
    as the reference), after the set is chosen or named."""
    form = AddToSetForm(request.POST if request.POST.get("confirmed") == "yes" else None)
    if not form.is_valid():
        return TemplateResponse(request, "admin/pagechat/add_to_eval_set.html", {
            **modeladmin.admin_site.each_context(request), "title": gettext("Make eval cases of these conversations"),
            "form": form, "conversations": queryset.order_by("pk"), "selected": request.POST.getlist(ACTION_CHECKBOX_NAME),
            "action": "add_to_eval_set", "opts": modeladmin.model._meta,
        })
    eval_set = form.cleaned_data["eval_set"] or EvalSet.objects.create(name=form.cleaned_data["new_set"].strip())
    added: list[EvalCase] = []
    already: list[EvalCase] = []
    refused: list[str] = []
    for conversation in queryset.select_related("owner").order_by("pk"):
        try:
            case, created = case_from_conversation(conversation, eval_set)
        except CaseRefused as exc:
            refused.append(gettext("conversation %(id)d: %(why)s") % {"id": conversation.pk, "why": exc})
            continue
        (added if created else already).append(case)
    link = reverse("admin:pagechat_evalset_change", args=[eval_set.pk], current_app=modeladmin.admin_site.name)
    if added:
        modeladmin.message_user(request, format_html('{} <a href="{}">{}</a>', ngettext(
            "Added %(count)d case to the set", "Added %(count)d cases to the set", len(added)) % {"count": len(added)}, link, eval_set.name),
            messages.SUCCESS)
    if already:
        modeladmin.message_user(request, ngettext("%(count)d conversation is already a case of this set.",
                                                  "%(count)d conversations are already cases of this set.", len(already)) % {"count": len(already)},
                                messages.INFO)
    for why in refused:
        modeladmin.message_user(request, gettext("Not made a case: %(why)s") % {"why": why}, messages.WARNING)
    return None


# sets and cases

class EvalCaseForm(forms.ModelForm):
    """A case is checked as the file format checks it (page registered, turns, expectations, judge)."""

    class Meta:
        model = EvalCase
        fields = "__all__"

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        user, eval_set = data.get("user"), data.get("eval_set")
        if user is None or eval_set is None or self.errors:
            return data
        spec = {"name": data.get("name"), "page": data.get("page"), "context": data.get("context") or {}, "user": user.get_username(),
                "turns": data.get("turns"), "expect": data.get("expect") or {}}
        if data.get("judge"):
            spec["judge"] = data["judge"]
        try:
            eval_set_parse({"name": eval_set.name, "cases": [spec]}, source="this case")
        except EvalSpecError as exc:
            raise forms.ValidationError([p.split(": ", 1)[-1] if p.startswith("this case: ") else p for p in exc.problems]) from None
        return data


class EvalCaseInline(admin.TabularInline):
    model = EvalCase
    extra = 0
    fields = ("name", "page", "user", "created_at")
    readonly_fields = fields
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # cases come from conversations (their action) or the case form


class RunForm(forms.Form):
    provider = forms.CharField(label=_("Provider"), max_length=200, required=False,
                               help_text=_("A CHAT_PROVIDER name or dotted path; empty: the site's own."))
    model = forms.CharField(label=_("Model"), max_length=200, required=False, help_text=_("Empty: the site's CHAT_MODEL."))
    repeat = forms.IntegerField(label=_("Runs of each case"), min_value=1, max_value=MAX_REPEAT, initial=1)
    judge_provider = forms.CharField(label=_("Judge provider"), max_length=200, required=False,
                                     help_text=_("For judged cases; empty: CHAT_EVAL_JUDGE_PROVIDER (none: they are skipped)."))

    def _provider(self, name: str) -> str:
        value = (self.cleaned_data.get(name) or "").strip()
        if value:
            try:
                provider_class(value)
            except ImportError as exc:
                raise forms.ValidationError(_("Unknown provider: %(why)s") % {"why": exc}) from None
        return value

    def clean_provider(self) -> str:
        return self._provider("provider")

    def clean_judge_provider(self) -> str:
        return self._provider("judge_provider")


@admin.register(EvalSet)
class EvalSetAdmin(admin.ModelAdmin):
    list_display = ["name", "case_count", "last_run", "updated_at"]
    search_fields = ["name", "description"]
    fields = ["name", "description", "runs_list"]
    readonly_fields = ["runs_list"]
    inlines = [EvalCaseInline]
    actions = ["run_sets"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[EvalSet]:
        return super().get_queryset(request).prefetch_related("cases")

    @admin.display(description=_("cases"))
    def case_count(self, obj: EvalSet) -> int:
        return len(obj.cases.all())

    @admin.display(description=_("last run"))
    def last_run(self, obj: EvalSet) -> str:
        run = obj.runs.first()
        if run is None:
            return "—"
        url = reverse("admin:pagechat_evalrun_change", args=[run.pk], current_app=self.admin_site.name)
        return format_html('<a href="{}">{}</a> · {}', url, run.created_at.strftime("%Y-%m-%d %H:%M"),
                           _rate(run.pass_rate) if run.status == EvalRun.Status.COMPLETED else _run_state(run))

    @admin.display(description=_("Runs"))
    def runs_list(self, obj: EvalSet) -> str:
        """The set's latest runs: when, against what, how far or how well."""
        if obj.pk is None:
            return "—"
        runs = list(obj.runs.all()[:RUNS_LISTED])
        if not runs:
            return gettext("Not run yet: select the set in the list and choose “Run the selected eval sets”.")
        return format_html("<table><thead><tr><th>{}</th><th>{}</th><th>{}</th><th>{}</th></tr></thead><tbody>{}</tbody></table>",
                           gettext("started"), gettext("provider / model"), gettext("status"), gettext("pass rate"),
                           format_html_join("", '<tr><td><a href="{}">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>', (
                               (reverse("admin:pagechat_evalrun_change", args=[r.pk], current_app=self.admin_site.name),
                                r.created_at.strftime("%Y-%m-%d %H:%M"), " / ".join(x for x in (r.provider_used or r.provider, r.model_used or r.model) if x)
                                or gettext("the site's"), _run_state(r), _rate(r.pass_rate)) for r in runs)))

    def has_run_permission(self, request: HttpRequest) -> bool:
        """Running a set sends its cases' turns as their users (and spends tokens): who may add eval runs."""
        return bool(request.user.has_perm("pagechat.add_evalrun"))

    @admin.action(description=_("Run the selected eval sets"), permissions=["run"])
    def run_sets(self, request: HttpRequest, queryset: QuerySet[EvalSet]) -> HttpResponse | None:
        """Each selected set runs in a process of its own; its run's page shows the progress."""
        form = RunForm(request.POST if request.POST.get("confirmed") == "yes" else None)
        if not form.is_valid():
            return TemplateResponse(request, "admin/pagechat/run_eval_sets.html", {
                **self.admin_site.each_context(request), "title": gettext("Run these eval sets"), "form": form,
                "sets": queryset.order_by("name"), "selected": request.POST.getlist(ACTION_CHECKBOX_NAME), "action": "run_sets",
                "opts": self.model._meta,
            })
        for eval_set in queryset.order_by("name"):
            if not eval_set.cases.exists():
                self.message_user(request, gettext("The set %(name)s has no case: not run.") % {"name": eval_set.name}, messages.WARNING)
                continue
            run = eval_run_start(eval_set, started_by=request.user, **form.cleaned_data)  # type: ignore[arg-type]
            url = reverse("admin:pagechat_evalrun_change", args=[run.pk], current_app=self.admin_site.name)
            level = messages.ERROR if run.status == EvalRun.Status.FAILED else messages.SUCCESS
            self.message_user(request, format_html('{} <a href="{}">{}</a>', gettext("Started:"), url, str(run)) if level == messages.SUCCESS
                              else format_html("{} {}", str(run), run.error), level)
        return None


@admin.register(EvalCase)
class EvalCaseAdmin(admin.ModelAdmin):
    form = EvalCaseForm
    list_display = ["name", "eval_set", "page", "user", "source", "updated_at"]
    list_filter = ["eval_set", "page"]
    search_fields = ["name", "eval_set__name", "reference_answer"]
    raw_id_fields = ["user", "source_conversation"]
    fieldsets = [
        (None, {"fields": ["eval_set", "name", "page", "user", "context", "turns"]}),
        (_("What the last turn must show"), {"fields": ["expect", "judge"],
                                              "description": _("As in an eval file (docs/evals.md): expect: contains, not_contains, matches, tools, "
                                                               "no_tools, suggested_values_min, actions, payload_type, error, max_seconds; "
                                                               "judge: {\"criteria\": ..., \"min_score\": 0.7}.")}),
        (_("Where it came from"), {"fields": ["reference_answer", "source"]}),
    ]
    readonly_fields = ["source"]

    @admin.display(description=_("from conversation"))
    def source(self, obj: EvalCase) -> str:
        if obj.source_conversation_id is None:
            return "—"
        url = reverse("admin:pagechat_conversation_change", args=[obj.source_conversation_id], current_app=self.admin_site.name)
        return format_html('<a href="{}">{}</a>', url, gettext("Conversation %(id)d") % {"id": obj.source_conversation_id})


# runs

@admin.register(EvalRun)
class EvalRunAdmin(admin.ModelAdmin):
    list_display = ["__str__", "eval_set", "created_at", "state", "rate", "answered_by", "started_by"]
    list_filter = ["eval_set", "status"]
    list_select_related = ["eval_set", "started_by"]
    fieldsets = [
        (None, {"fields": ["eval_set", "state", "rate", "counts", "answered_by", "asked", "started_by", "created_at", "started_at",
                           "finished_at", "error"]}),
        (_("Since the previous run"), {"fields": ["changes"]}),
        (_("Cases"), {"fields": ["results_table"]}),
    ]
    readonly_fields = ["eval_set", "state", "rate", "counts", "answered_by", "asked", "started_by", "created_at", "started_at",
                       "finished_at", "error", "changes", "results_table"]
    change_form_template = "admin/pagechat/evalrun/change_form.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a run is started from its set (or `manage.py chat_eval --set NAME`)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description=_("status"))
    def state(self, obj: EvalRun) -> str:
        return _run_state(obj)

    @admin.display(description=_("pass rate"), ordering="pass_rate")
    def rate(self, obj: EvalRun) -> str:
        return _rate(obj.pass_rate)

    @admin.display(description=_("runs of cases"))
    def counts(self, obj: EvalRun) -> str:
        return gettext("%(passed)d passed, %(failed)d failed, %(skipped)d skipped") % {"passed": obj.passed, "failed": obj.failed,
                                                                                    "skipped": obj.skipped}

    @admin.display(description=_("answered by"))
    def answered_by(self, obj: EvalRun) -> str:
        return " / ".join(x for x in (obj.provider_used, obj.model_used) if x) or "—"

    @admin.display(description=_("asked for"))
    def asked(self, obj: EvalRun) -> str:
        parts = [obj.provider or gettext("the site's provider"), obj.model or gettext("the site's model"),
                 ngettext("%(n)d run of each case", "%(n)d runs of each case", obj.repeat) % {"n": obj.repeat}]
        if obj.judge_provider:
            parts.append(gettext("judged by %(name)s") % {"name": obj.judge_provider})
        return ", ".join(parts)

    @admin.display(description=_("Changes"))
    def changes(self, obj: EvalRun) -> str:
        """Which cases newly fail or pass against the set's previous completed run."""
        if obj.status != EvalRun.Status.COMPLETED:
            return "—"
        diff = eval_run_diff(obj)
        if diff.previous is None:
            return gettext("The set's first completed run: nothing to compare with.")
        url = reverse("admin:pagechat_evalrun_change", args=[diff.previous.pk], current_app=self.admin_site.name)
        change = "" if diff.pass_rate_change is None else f" ({diff.pass_rate_change:+.0%})"
        lines = [format_html('{} <a href="{}">{}</a>: {} → {}{}', gettext("Against"), url, str(diff.previous), _rate(diff.previous.pass_rate),
                             _rate(obj.pass_rate), change)]
        for label, names, css in ((gettext("Newly failing"), diff.newly_failing, "pagechat-eval-newly-failing"),
                                  (gettext("Newly passing"), diff.newly_passing, "pagechat-eval-newly-passing"),
                                  (gettext("Still failing"), diff.still_failing, "pagechat-eval-still-failing"),
                                  (gettext("New cases"), diff.added, "pagechat-eval-added"),
                                  (gettext("Cases no longer in the set"), diff.removed, "pagechat-eval-removed")):
            if names:
                lines.append(format_html('<div class="{}"><strong>{} ({})</strong>: {}</div>', css, label, len(names), ", ".join(names)))
        if len(lines) == 1:
            lines.append(format_html("<div>{}</div>", gettext("No case changed.")))
        return format_html_join("", "{}", ((line,) for line in lines))

    @admin.display(description=_("Results"))
    def results_table(self, obj: EvalRun) -> str:
        """Each case: passed or not, why not, the answer, its time, tokens, cost and its eval conversation."""
        results = list(obj.results.select_related("case").order_by("id"))
        if not results:
            return obj.error or "—"

        def conversation(r: EvalCaseResult) -> str:
            if r.conversation_id is None:
                return "—"
            url = reverse("admin:pagechat_conversation_change", args=[r.conversation_id], current_app=self.admin_site.name)
            return format_html('<a href="{}">{}</a>', url, r.conversation_id)

        def case(r: EvalCaseResult) -> str:
            if r.case_id is None:
                return r.name
            return format_html('<a href="{}">{}</a>', reverse("admin:pagechat_evalcase_change", args=[r.case_id], current_app=self.admin_site.name), r.name)

        head = [gettext("case"), gettext("result"), gettext("why it failed"), gettext("answer"), gettext("seconds"), gettext("tokens"),
                gettext("cost (USD)"), gettext("conversation")]
        return format_html('<table class="pagechat-eval-results"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>',
                           format_html_join("", '<th scope="col">{}</th>', ((h,) for h in head)),
                           format_html_join("", '<tr class="pagechat-eval-{}"><th scope="row">{}</th><td>{}</td><td>{}</td><td>{}</td>'
                                                '<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>', (
                               (r.status, case(r), r.get_status_display(), format_html_join("", "<div>{}</div>", ((f,) for f in r.failures)) or "—",
                                (r.answer[:ANSWER_SHOWN] + ("…" if len(r.answer) > ANSWER_SHOWN else "")) or "—", f"{r.seconds:.2f}", r.tokens,
                                "—" if r.cost_usd is None else f"{r.cost_usd:.6f}", conversation(r)) for r in results)))

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None) -> HttpResponse:
        run = self.get_object(request, object_id)
        going = run is not None and run.status in (EvalRun.Status.QUEUED, EvalRun.Status.RUNNING) and not eval_run_stalled(run)
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), "pagechat_refresh": going})


def _may_add_cases(self: ConversationAdmin, request: HttpRequest) -> bool:
    """Making eval cases of conversations asks for the cases' add permission."""
    return bool(request.user.has_perm("pagechat.add_evalcase"))


ConversationAdmin.actions = [*ConversationAdmin.actions, add_to_eval_set]
ConversationAdmin.has_add_evalcase_permission = _may_add_cases  # type: ignore[attr-defined]
