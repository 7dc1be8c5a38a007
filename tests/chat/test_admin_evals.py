"""Evals from the admin: a conversation made into a case in one action, stored sets run by the command (`--set`) and
from the admin in a process of its own (its progress, then its results), and what changed since the previous run."""
from __future__ import annotations

import os
import time
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.utils import timezone

from chat.evals.stored import CaseRefused, case_from_conversation, eval_run_diff, stored_set_spec
from chat.models import Conversation, EvalCase, EvalCaseResult, EvalRun, EvalSet, Message
from chat.providers.scripted import text

pytestmark = pytest.mark.django_db(transaction=True)

CONVERSATIONS = "/admin/pagechat/conversation/"


def conversation(owner: Any, page: str = "home", *questions: tuple[str, str, dict[str, Any]], title: str = "Streams?") -> Conversation:
    """A conversation as people have them: each (question, interaction type, context) answered; the last answer thumbs-down."""
    conv = Conversation.objects.create(owner=owner, page=page, title=title)
    for i, (question, kind, context) in enumerate(questions or [("How many streams do I have?", "text_input", {"tab": "all"})]):
        Message.objects.create(conversation=conv, role="user", content=question, interaction_type=kind, context={"current_page": page, **context})
        Message.objects.create(conversation=conv, role="assistant", content=f"answer {i}", feedback="bad" if i == len(questions) - 1 else "")
    return conv


def _staff(django_user_model: Any, *perms: str) -> Client:
    user = django_user_model.objects.create_user("eval-staff", password="x", is_staff=True)
    user.user_permissions.add(*(Permission.objects.get(content_type__app_label="pagechat", codename=p) for p in perms))
    client = Client()
    client.force_login(user)
    return client


def _eval(*args: str) -> str:
    out = StringIO()
    call_command("chat_eval", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


# a conversation made into a case

def test_a_conversation_becomes_a_case_with_its_turns_page_context_and_user(user: Any) -> None:
    conv = conversation(user, "home", ("How many streams?", "text_input", {"tab": "all"}),
                        ("oncology", "value_selected", {"tab": "all", "stream": 7}))
    Message.objects.create(conversation=conv, role="assistant", content="a replaced answer", replaced=True)
    eval_set = EvalSet.objects.create(name="thumbs down")
    case, created = case_from_conversation(conv, eval_set)
    assert created and (case.page, case.user, case.context, case.source_conversation) == ("home", user, {"tab": "all"}, conv)
    assert case.turns == [{"message": "How many streams?"}, {"message": "oncology", "interaction_type": "value_selected", "context": {"stream": 7}}]
    assert case.reference_answer == "answer 1" and case.expect == {} and case.name == f"Streams? (#{conv.pk})"
    assert case_from_conversation(conv, eval_set) == (case, False)  # once a set
    spec = stored_set_spec(eval_set)  # what runs: the file format's set
    assert (spec.name, spec.cases[0].user, spec.cases[0].turns[1].interaction_type, spec.cases[0].page_context(spec.cases[0].turns[1])) == (
        "thumbs down", "ann", "value_selected", {"tab": "all", "stream": 7, "current_page": "home"})


@pytest.mark.parametrize(("page", "why"), [("", "on no page"), ("no-such-page", "no page 'no-such-page' is registered")])
def test_a_conversation_that_cannot_run_is_refused_with_why(user: Any, page: str, why: str) -> None:
    with pytest.raises(CaseRefused, match=why):
        case_from_conversation(conversation(user, page), EvalSet.objects.create(name="s"))
    assert not EvalCase.objects.exists()


def test_the_admin_action_makes_cases_in_one_step(user: Any, admin_client: Client) -> None:
    convs = [conversation(user), conversation(user, "")]
    selected = {"action": "add_to_eval_set", "_selected_action": [c.pk for c in convs]}
    asked = admin_client.post(CONVERSATIONS, selected)
    assert asked.status_code == 200 and "Make eval cases of these conversations" in asked.content.decode()
    done = admin_client.post(CONVERSATIONS, {**selected, "confirmed": "yes", "new_set": "thumbs down"}, follow=True)
    body = done.content.decode()
    eval_set = EvalSet.objects.get(name="thumbs down")
    assert [c.source_conversation_id for c in eval_set.cases.all()] == [convs[0].pk]
    assert "Added 1 case to the set" in body and f"conversation {convs[1].pk}: it was on no page" in body
    again = admin_client.post(CONVERSATIONS, {**selected, "confirmed": "yes", "eval_set": eval_set.pk}, follow=True)
    assert "1 conversation is already a case of this set." in again.content.decode() and eval_set.cases.count() == 1


def test_staff_who_may_not_add_cases_are_not_offered_the_action(user: Any, django_user_model: Any) -> None:
    client = _staff(django_user_model, "view_conversation", "change_conversation")
    conv = conversation(user)
    assert "add_to_eval_set" not in client.get(CONVERSATIONS).content.decode()
    client.post(CONVERSATIONS, {"action": "add_to_eval_set", "_selected_action": [conv.pk], "confirmed": "yes", "new_set": "x"})
    assert not EvalSet.objects.exists()
    allowed = _staff_with_add(django_user_model)
    assert "add_to_eval_set" in allowed.get(CONVERSATIONS).content.decode()


def _staff_with_add(django_user_model: Any) -> Client:
    user = django_user_model.objects.create_user("case-maker", password="x", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="pagechat",
                                                         codename__in=["view_conversation", "add_evalcase"]))
    client = Client()
    client.force_login(user)
    return client


def test_a_case_is_checked_as_the_file_format_checks_it(user: Any, admin_client: Client) -> None:
    case, _ = case_from_conversation(conversation(user), EvalSet.objects.create(name="s"))
    form = {"eval_set": case.eval_set_id, "name": case.name, "page": "home", "user": user.pk, "context": "{}",
            "turns": '[{"message": "hi"}]', "expect": '{"error": "forbiden"}', "judge": "null", "reference_answer": ""}
    refused = admin_client.post(f"/admin/pagechat/evalcase/{case.pk}/change/", form)
    assert refused.status_code == 200 and "&#x27;forbiden&#x27; is not an error code" in refused.content.decode()
    accepted = admin_client.post(f"/admin/pagechat/evalcase/{case.pk}/change/", {**form, "expect": '{"contains": ["3"]}'})
    assert accepted.status_code == 302
    case.refresh_from_db()
    assert case.expect == {"contains": ["3"]}


# runs of stored sets, and what changed

def test_the_command_runs_a_stored_set_and_the_admin_shows_what_changed(user: Any, scripted: Any, admin_client: Client) -> None:
    eval_set = EvalSet.objects.create(name="thumbs down")
    counts, _ = case_from_conversation(conversation(user, title="Counts"), eval_set)
    greets, _ = case_from_conversation(conversation(user, title="Greets"), eval_set)
    EvalCase.objects.filter(pk=counts.pk).update(expect={"contains": ["3"]})

    scripted.enqueue(text("You have 3 streams."), text("Hello."))
    assert "Pass rate" in _eval("--set", "thumbs down", "--provider", "scripted")
    first = EvalRun.objects.get()
    assert (first.status, first.pass_rate, first.done, first.total, first.provider_used) == ("completed", 1.0, 2, 2, "scripted")
    assert [(r.name, r.status, r.answer) for r in first.results.all()] == [(counts.name, "passed", "You have 3 streams."), (greets.name, "passed", "Hello.")]
    assert first.results.get(name=counts.name).conversation.is_eval

    scripted.enqueue(text("You have no streams."), text("Hello."))
    with pytest.raises(CommandError) as failed:  # below --min-pass-rate: exit 1, the run recorded all the same
        _eval("--set", "thumbs down", "--provider", "scripted")
    assert failed.value.returncode == 1
    second = EvalRun.objects.latest("created_at")
    diff = eval_run_diff(second)
    assert (second.pass_rate, diff.previous, diff.newly_failing, diff.newly_passing, diff.pass_rate_change) == (0.5, first, [counts.name], [], -0.5)
    failures = second.results.get(name=counts.name).failures
    assert len(failures) == 1 and failures[0].startswith("contains:")
    page = admin_client.get(f"/admin/pagechat/evalrun/{second.pk}/change/").content.decode()
    assert "50%" in page and "Newly failing (1)" in page and counts.name in page.split("Newly failing")[1] and "You have no streams." in page
    assert 'http-equiv="refresh"' not in page  # it has ended

    EvalCase.objects.filter(pk=greets.pk).delete()
    EvalCase.objects.create(eval_set=eval_set, name="new one", page="home", user=user, turns=[{"message": "hi"}])
    scripted.enqueue(text("You have 3 streams."), text("Hi."))
    _eval("--set", "thumbs down", "--provider", "scripted")
    third = eval_run_diff(EvalRun.objects.latest("created_at"))
    assert (third.previous, third.newly_passing, third.added, third.removed) == (second, [counts.name], ["new one"], [greets.name])
    listed = admin_client.get(f"/admin/pagechat/evalset/{eval_set.pk}/change/").content.decode()
    assert listed.count("/admin/pagechat/evalrun/") >= 3 and "100%" in listed and "50%" in listed


def test_a_stored_set_that_cannot_run_fails_its_run_with_why(user: Any, scripted: Any) -> None:
    eval_set = EvalSet.objects.create(name="s")
    case_from_conversation(conversation(user), eval_set)
    user.is_active = False
    user.save()
    with pytest.raises(CommandError) as refused:
        _eval("--set", "s", "--provider", "scripted")
    run = EvalRun.objects.get()
    assert refused.value.returncode == 2 and run.status == "failed" and "the user 'ann' is inactive" in run.error
    assert not scripted.requests
    with pytest.raises(CommandError, match="no stored eval set 'nope'"):
        _eval("--set", "nope")
    with pytest.raises(CommandError, match=f"no queued eval run {run.pk}"):  # runs only what is queued, once
        _eval("--eval-run", str(run.pk))


def test_a_run_whose_process_went_away_shows_as_stopped(user: Any, admin_client: Client) -> None:
    eval_set = EvalSet.objects.create(name="s")
    run = EvalRun.objects.create(eval_set=eval_set, status="running", total=4, done=1)
    EvalRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timezone.timedelta(minutes=30))
    page = admin_client.get(f"/admin/pagechat/evalrun/{run.pk}/change/").content.decode()
    assert "stopped (no progress since" in page and 'http-equiv="refresh"' not in page
    EvalRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())
    page = admin_client.get(f"/admin/pagechat/evalrun/{run.pk}/change/").content.decode()
    assert "Running: 1 of 4" in page and '<meta http-equiv="refresh" content="3">' in page  # the progress, refreshed


def _database_url() -> str:
    """This test database as a URL, for the run's own process."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    login = f"{s['USER']}:{s['PASSWORD']}" if s.get("PASSWORD") else s["USER"]
    return f"postgres://{login}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


def test_the_admin_runs_a_set_in_a_process_of_its_own(user: Any, admin_client: Client, monkeypatch: Any) -> None:
    """From the set's list: the run is queued, a `chat_eval --eval-run` process runs it (the offline model answers) and
    writes its progress and results, which its page shows."""
    monkeypatch.setenv("DATABASE_URL", _database_url())
    eval_set = EvalSet.objects.create(name="offline")
    case, _ = case_from_conversation(conversation(user), eval_set)
    EvalCase.objects.create(eval_set=eval_set, name="must fail", page="home", user=user, turns=[{"message": "hello"}],
                            expect={"contains": ["no offline answer says this"]})
    action = {"action": "run_sets", "_selected_action": [eval_set.pk]}
    form = admin_client.post("/admin/pagechat/evalset/", action).content.decode()
    assert "Run these eval sets" in form and 'name="provider"' in form
    unknown = admin_client.post("/admin/pagechat/evalset/", {**action, "confirmed": "yes", "provider": "no.such.Provider", "repeat": 1})
    assert "Unknown provider" in unknown.content.decode() and not EvalRun.objects.exists()
    started = admin_client.post("/admin/pagechat/evalset/", {**action, "confirmed": "yes", "provider": "offline", "repeat": 1}, follow=True)
    run = EvalRun.objects.get()
    assert "Started:" in started.content.decode() and (run.provider, run.total) == ("offline", 2)
    deadline = time.monotonic() + 120
    while run.status in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.5)
        run.refresh_from_db()
    assert run.status == "completed", (run.status, run.error)
    assert (run.done, run.passed, run.failed, run.pass_rate, run.provider_used) == (2, 1, 1, 0.5, "offline")
    assert EvalCaseResult.objects.get(eval_run=run, name=case.name).status == "passed"
    page = admin_client.get(f"/admin/pagechat/evalrun/{run.pk}/change/").content.decode()
    assert "50%" in page and "must fail" in page and "first completed run" in page
    assert os.environ["DATABASE_URL"] == _database_url()
