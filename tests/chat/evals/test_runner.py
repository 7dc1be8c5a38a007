"""Eval runs through the real engine: each turn is the websocket's `chat.send` (limits, budgets, permissions, tokens),
as the case's user, persisted in an eval conversation the user's own list never shows."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from chat.evals.runner import EvalProgress, eval_run, eval_run_async
from chat.evals.spec import EvalSet, EvalSpecError, eval_set_parse
from chat.models import Conversation, Message, Run
from chat.providers.base import ProviderError, Usage
from chat.providers.scripted import ScriptedProvider, text, tool_call
from pages.demo.models import ResearchStream

pytestmark = pytest.mark.django_db(transaction=True)


def _set(*cases: dict[str, Any], name: str = "t") -> EvalSet:
    return eval_set_parse({"name": name, "cases": list(cases)}, source="test.yaml")


def _case(user: Any, *turns: Any, page: str = "home", name: str = "c", **fields: Any) -> dict[str, Any]:
    return {"name": name, "page": page, "user": user.username, "turns": list(turns) or ["hello"], **fields}


def _run(report: Any) -> Any:
    [case] = report.cases
    [run] = case.runs
    return run


def test_a_case_runs_as_its_user_through_the_turn_and_is_stored_as_an_eval(user: Any, scripted: Any) -> None:
    scripted.enqueue(text("You have ", "3 streams."))
    report = eval_run(_set(_case(user, "How many streams?", context={"tab": "x"}, expect={"contains": ["3 STREAMS"], "no_tools": True})),
                      provider="scripted")
    run = _run(report)
    assert (report.ok, report.pass_rate, run.status, run.answer) == (True, 1.0, "passed", "You have 3 streams.")
    assert [e.name for e in run.expectations] == ["contains", "no_tools", "error"]
    conversation = Conversation.objects.get(pk=run.conversation_id)
    assert (conversation.owner, conversation.is_eval, conversation.page) == (user, True, "home")
    question, answer = conversation.messages.order_by("id")
    assert (question.content, question.context) == ("How many streams?", {"tab": "x", "current_page": "home"})
    assert (answer.content, answer.status) == ("You have 3 streams.", Message.Status.COMPLETE)
    stored = Run.objects.get(conversation=conversation)
    assert (stored.provider, stored.status, str(stored.pk)) == ("scripted", Run.Status.COMPLETED, run.turns[0].run_id)
    assert (run.tokens.input, run.tokens.output) == (stored.input_tokens, stored.output_tokens) == (10, 2)
    assert "# CONTEXT" in scripted.requests[0].system or "home" in scripted.requests[0].system  # the page's prompt
    assert (report.provider, report.model) == ("scripted", "claude-sonnet-5")


def test_the_tools_a_model_calls_are_the_turns_tools(user: Any, scripted: Any) -> None:
    scripted.enqueue(tool_call("calculate", {"expression": "6*7"}), text("It is 42."))
    run = _run(eval_run(_set(_case(user, "what is 6*7?", expect={"tools": ["calculate"], "contains": ["42"]})), provider="scripted"))
    assert run.status == "passed" and run.tools == ["calculate"] and run.answer == "It is 42."
    assert run.turns[0].tokens.input == 20  # both model calls of the turn


def test_eval_conversations_are_kept_out_of_the_users_own_list_and_search(user: Any, scripted: Any, django_user_model: Any) -> None:
    scripted.enqueue(text("an eval answer about streams"), text("my own answer about streams"))
    eval_run(_set(_case(user, "streams, please")), provider="scripted")
    client = Client()
    client.force_login(user)
    own = client.post("/api/chat", {"message": "streams, please", "context": {"current_page": "home"}}, content_type="application/json")
    assert own.status_code == 200
    listed = client.get("/api/conversations/").json()
    found = client.get("/api/conversations/", {"q": "streams"}).json()
    assert Conversation.objects.filter(owner=user).count() == 2
    own_id = own.json()["conversation_id"]
    assert [c["id"] for c in listed] == [own_id] and [c["id"] for c in found] == [own_id]
    eval_id = Conversation.objects.get(owner=user, is_eval=True).pk
    assert client.get(f"/api/conversations/{eval_id}/").status_code == 404  # not the user's own either
    # staff find them in the admin, apart from people's
    staff = Client()
    staff.force_login(django_user_model.objects.create_superuser(username="root", password="pw"))
    assert 'href="?is_eval__exact=1"' in staff.get("/admin/pagechat/conversation/").content.decode()  # the list's filter
    evals = staff.get("/admin/pagechat/conversation/", {"is_eval__exact": "1"}).content.decode()
    people = staff.get("/admin/pagechat/conversation/", {"is_eval__exact": "0"}).content.decode()
    assert f"/admin/pagechat/conversation/{eval_id}/change/" in evals and f"/admin/pagechat/conversation/{own_id}/change/" not in evals
    assert f"/admin/pagechat/conversation/{own_id}/change/" in people and f"/admin/pagechat/conversation/{eval_id}/change/" not in people


def test_chips_and_server_actions_are_sent_as_the_tray_sends_them(user: Any) -> None:
    report = eval_run(_set(_case(
        user, "propose a stream template about sepsis", {"message": "check it", "action": "validate_form"}, page="new_stream",
        expect={"payload_type": "validation_results", "contains": ["passes the form's checks"]})), provider="offline")
    run = _run(report)
    assert run.status == "passed", run.failures
    first, second = run.turns
    assert first.actions == ["validate_form"] and first.payload_type == "stream_template"
    assert second.action_result == {"action": "validate_form", "status": "succeeded", "refresh": False}
    clicked = Message.objects.get(conversation_id=run.conversation_id, role="user", content="check it")
    assert clicked.interaction_type == "action_executed" and clicked.action_metadata["action_identifier"] == "validate_form"
    # a chip
    report = eval_run(_set(_case(user, "I want to create a research stream", {"message": "oncology research", "interaction_type": "value_selected"},
                                 expect={"payload_type": "research_stream_form", "suggested_values_min": 3})), provider="offline")
    run = _run(report)
    assert run.status == "passed", run.failures
    assert Message.objects.get(conversation_id=run.conversation_id, content="oncology research").interaction_type == "value_selected"


def test_an_action_the_previous_answer_did_not_offer_cannot_be_clicked(user: Any) -> None:
    # `user` may not add research streams: create_stream is never offered to them
    run = _run(eval_run(_set(_case(user, "Create a research stream about oncology", {"action": "create_stream"})), provider="offline"))
    assert run.status == "failed" and [e.name for e in run.expectations] == ["turns"]
    assert run.failures == ["turns: turn 2 of 2: the previous answer offers no server action 'create_stream' (it offers: none)"]
    assert not ResearchStream.objects.filter(owner=user).exists()


def test_tools_and_approvals(user: Any) -> None:
    user.user_permissions.add(Permission.objects.get(codename="change_researchstream"))
    stream = ResearchStream.objects.create(owner=user, name="Lung watch")
    refused, approved = (_case(user, {"message": f"rename stream {stream.pk} to Oncology Watch", "approve": approve}, page="streams_list",
                               name=f"approve {approve}", expect={"tools": ["rename_stream"]}) for approve in (False, True))
    report = eval_run(_set(refused, approved), provider="offline")
    no, yes = (_run_of(report, i) for i in (0, 1))
    assert (no.status, yes.status) == ("passed", "passed")
    assert "did not approve" in no.answer and "Oncology Watch" in yes.answer
    stream.refresh_from_db()
    assert stream.name == "Oncology Watch"


def _run_of(report: Any, index: int) -> Any:
    return report.cases[index].runs[0]


def test_how_a_turn_ends_is_its_error(user: Any, scripted: Any, settings: Any) -> None:
    scripted.enqueue([ProviderError("overloaded", "the model is overloaded")], text("fine"))
    report = eval_run(_set(_case(user, name="overloaded", expect={"error": "overloaded"}), _case(user, name="unexpected", expect={"error": "overloaded"})),
                      provider="scripted")
    assert [c.status for c in report.cases] == ["passed", "failed"]
    assert _run_of(report, 1).failures == ["error: ended without error; 'overloaded' expected"]
    # a refusal before any run: a page the user may not use
    report = eval_run(_set(_case(user, page="edit_research_stream", expect={"error": "forbidden"})), provider="scripted")
    run = _run(report)
    assert run.status == "passed" and run.turns[0].run_id is None and run.cost_usd == 0.0


def test_budgets_apply_a_refused_case_fails_with_budget_exceeded(user: Any, scripted: Any, settings: Any) -> None:
    settings.CHAT_DAILY_TOKEN_BUDGET = 15
    scripted.enqueue(text("twenty tokens", usage=Usage(10, 10)))
    report = eval_run(_set(_case(user, "one", "two", "three", name="over budget"), _case(user, name="refused", expect={"error": "budget_exceeded"})),
                      provider="scripted")
    over, refused = _run_of(report, 0), _run_of(report, 1)
    assert over.status == "failed" and over.failures[0].startswith("turns: turn 2 of 3 ended with error 'budget_exceeded': You have used today's budget")
    assert refused.status == "passed" and refused.error == "budget_exceeded"
    assert Run.objects.count() == 1


def test_the_message_rate_applies_and_is_waited_out_unless_expected(user: Any, scripted: Any, settings: Any) -> None:
    settings.CHAT_RATE_LIMIT_PER_MINUTE = 1
    scripted.enqueue(text("one"))
    run = _run(eval_run(_set(_case(user, "one", "two", expect={"error": "rate_limited"})), provider="scripted"))
    assert run.status == "passed" and [t.error for t in run.turns] == [None, "rate_limited"]


def test_max_seconds_and_the_turn_timeout(user: Any, scripted: Any) -> None:
    scripted.enqueue([0.3, *text("slow")], [5.0, *text("never")])
    report = eval_run(_set(_case(user, name="slow", expect={"max_seconds": 0.1}), _case(user, name="stuck")), provider="scripted", turn_timeout=1.0)
    slow, stuck = _run_of(report, 0), _run_of(report, 1)
    assert slow.status == "failed" and slow.failures[0].startswith("max_seconds: took 0.")
    assert stuck.status == "failed" and stuck.error == "timeout" and "the eval cancelled the run" in stuck.failures[0]
    assert Run.objects.get(pk=stuck.turns[0].run_id).status == Run.Status.CANCELLED


def test_repeat_runs_each_case_in_its_own_conversation_and_the_pass_rate_counts_every_run(user: Any, scripted: Any) -> None:
    scripted.enqueue(text("yes"), text("no"), text("yes"))
    seen: list[tuple[int, int, str]] = []
    report = eval_run(_set(_case(user, expect={"contains": ["yes"]})), provider="scripted", repeat=3, min_pass_rate=0.6,
                      on_progress=lambda p: seen.append((p.done, p.total, p.run.status)))
    [case] = report.cases
    assert [r.status for r in case.runs] == ["passed", "failed", "passed"] and case.status == "failed" and not case.passed
    assert len({r.conversation_id for r in case.runs}) == 3
    assert (report.passed, report.failed, round(report.pass_rate or 0, 3), report.ok) == (2, 1, 0.667, True)
    assert seen == [(1, 3, "passed"), (2, 3, "failed"), (3, 3, "passed")]


async def test_the_async_service_awaits_an_async_progress_callback(user: Any, scripted: Any) -> None:
    scripted.enqueue(text("hi"))
    seen: list[EvalProgress] = []

    async def progress(p: EvalProgress) -> None:
        await asyncio.sleep(0)
        seen.append(p)

    report = await eval_run_async(_set(_case(user)), provider="scripted", on_progress=progress)
    assert report.ok and [p.case for p in seen] == ["c"]


def test_users_are_checked_before_any_case_runs(user: Any, django_user_model: Any, scripted: Any) -> None:
    django_user_model.objects.create_user(username="gone", password="pw", is_active=False)
    sets = _set({"name": "a", "page": "home", "user": "ann", "turns": ["hi"]}, {"name": "b", "page": "home", "user": "nobody", "turns": ["hi"]},
                {"name": "c", "page": "home", "user": "gone", "turns": ["hi"]})
    with pytest.raises(EvalSpecError) as caught:
        eval_run(sets, provider="scripted")
    assert caught.value.problems == [
        "test.yaml: case \"b\" (cases[1]), user: no user 'nobody'",
        "test.yaml: case \"c\" (cases[2]), user: the user 'gone' is inactive (no turn of theirs is admitted)",
    ]
    assert not Conversation.objects.exists() and not ScriptedProvider.requests
    with pytest.raises(ImportError):
        eval_run(_set(_case(user)), provider="no.such.Provider")
    with pytest.raises(ValueError, match="repeat"):
        eval_run(_set(_case(user)), repeat=0)


def test_a_judged_case_is_graded_by_the_judge_provider(user: Any, settings: Any) -> None:
    criteria = "Says how many streams the user has."
    judged = _case(user, "How many streams do I have?", judge=criteria)
    ScriptedProvider.enqueue(text('Sure: {"score": 0.9, "reason": "It gives the number."}'))
    run = _run(eval_run(_set(judged), provider="offline", judge_provider="scripted"))
    assert run.status == "passed" and run.judge is not None
    assert (run.judge.score, run.judge.reason, run.judge.provider, run.judge.passed) == (0.9, "It gives the number.", "scripted", True)
    [request] = ScriptedProvider.requests  # the judge's one call: the offline model answered the case
    prompt = request.messages[0]["content"]
    assert criteria in prompt and "User: How many streams do I have?" in prompt and f"Assistant: {run.answer}" in prompt
    assert request.model == "claude-sonnet-5" and request.tools == []
    # a low score fails the case, with the judge's reason
    ScriptedProvider.enqueue(text('{"score": 0.2, "reason": "It invents a stream."}'))
    run = _run(eval_run(_set(judged), provider="offline", judge_provider="scripted"))
    assert run.status == "failed" and run.failures == ["judge (score 0.2 < 0.7): It invents a stream."]
    # a reply that is not the JSON asked for never passes
    ScriptedProvider.enqueue(text("Looks good to me!"))
    run = _run(eval_run(_set(judged), provider="offline", judge_provider="scripted"))
    assert run.status == "failed" and "not the JSON object asked for: Looks good to me!" in run.failures[0]
    # the provider by setting, asked for its model
    settings.CHAT_EVAL_JUDGE_PROVIDER, settings.CHAT_EVAL_JUDGE_MODEL = "scripted", "judge-model"
    ScriptedProvider.enqueue(text('{"score": 1, "reason": "ok"}'))
    report = eval_run(_set(judged), provider="offline")
    assert _run(report).status == "passed" and ScriptedProvider.requests[-1].model == "judge-model"
    assert (report.judge_provider, report.judge_model) == ("scripted", "judge-model")


def test_without_a_judge_provider_a_judged_case_is_skipped_not_passed(user: Any, scripted: Any) -> None:
    report = eval_run(_set(_case(user, judge="anything", name="judged")), provider="scripted")
    run = _run(report)
    assert (run.status, report.cases[0].status, report.cases[0].passed) == ("skipped", "skipped", False)
    assert "no judge provider" in run.skip_reason
    assert (report.passed, report.failed, report.skipped, report.pass_rate, report.ok) == (0, 0, 1, None, False)
    assert not Conversation.objects.exists() and not scripted.requests  # not run at all
