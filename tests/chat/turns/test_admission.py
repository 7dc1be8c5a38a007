"""Admission's database job: what the acknowledgement waits for is stored in one transaction."""
from __future__ import annotations

from typing import Any

import pytest

from chat.events import ChatSend
from chat.events.errors import NotFound
from chat.models import Conversation, Message, Run
from chat.turns.admission import _regenerate_db, _turn_start_db, turn_started_by_client_id
from chat.turns.clients import NO_EXTRAS, TurnExtras

pytestmark = pytest.mark.django_db


def _answer_of(run_id: str) -> Message:
    return Message.objects.get(run_id=run_id, role=Message.Role.ASSISTANT)


def test_a_new_message_is_stored_with_its_run_and_the_empty_answer_it_streams_into(user: Any, scripted: Any) -> None:
    started, record = _turn_start_db(user, ChatSend(client_message_id="c-1", message="hi"), scripted(), NO_EXTRAS)
    assert record is not None and started.created
    answer = _answer_of(record.run_id)
    assert answer.pk == record.assistant_message_id
    assert (answer.conversation_id, answer.status, answer.content) == (record.conversation_id, Message.Status.STREAMING, "")
    question = Message.objects.get(pk=record.user_message_id)
    assert question.pk < answer.pk and question.content == "hi"  # the history up to the answer holds the question
    assert Run.objects.get(pk=record.run_id).user_message_id == question.pk


def test_a_refused_message_stores_no_answer(user: Any, other_user: Any, scripted: Any) -> None:
    theirs = Conversation.objects.create(owner=other_user)
    with pytest.raises(Exception, match="not found"):
        _turn_start_db(user, ChatSend(client_message_id="c-1", message="hi", conversation_id=theirs.pk), scripted(), NO_EXTRAS)
    assert not Message.objects.exists() and not Run.objects.exists()


def test_a_resend_starts_nothing_and_stores_no_second_answer(user: Any, scripted: Any) -> None:
    frame = ChatSend(client_message_id="c-1", message="hi")
    first, record = _turn_start_db(user, frame, scripted(), NO_EXTRAS)
    assert record is not None
    again, none = _turn_start_db(user, frame.model_copy(update={"conversation_id": first.conversation_id}), scripted(), NO_EXTRAS)
    assert none is None and (again.run_id, again.created) == (first.run_id, False)
    assert Message.objects.filter(role=Message.Role.ASSISTANT).count() == 1


def test_a_resend_is_found_by_its_id_among_the_users_own_messages_only(user: Any, other_user: Any, scripted: Any) -> None:
    first, record = _turn_start_db(user, ChatSend(client_message_id="c-1", message="hi"), scripted(), NO_EXTRAS)
    assert record is not None
    _, theirs = _turn_start_db(other_user, ChatSend(client_message_id="c-2", message="hi"), scripted(), NO_EXTRAS)
    assert theirs is not None
    found = turn_started_by_client_id(user=user, client_message_id="c-1", conversation_id=None)  # a new conversation's resend
    assert found is not None and (found.run_id, found.conversation_id, found.created) == (first.run_id, first.conversation_id, False)
    assert turn_started_by_client_id(user=user, client_message_id="c-1", conversation_id=first.conversation_id) == found
    # another conversation, another user's id, no id: nothing
    assert turn_started_by_client_id(user=user, client_message_id="c-1", conversation_id=theirs.conversation_id) is None
    assert turn_started_by_client_id(user=user, client_message_id="c-2", conversation_id=None) is None
    assert turn_started_by_client_id(user=user, client_message_id=None, conversation_id=None) is None
    # a regenerated question: the latest of its runs
    Run.objects.filter(pk=record.run_id).update(status=Run.Status.COMPLETED)
    _, again, _ = _regenerate_db(user, record.conversation_id, None, None, scripted())
    latest = turn_started_by_client_id(user=user, client_message_id="c-1", conversation_id=None)
    assert latest is not None and latest.run_id == again.run_id != first.run_id
    Run.objects.filter(user_message_id=record.user_message_id).update(user_message=None)
    with pytest.raises(NotFound):
        turn_started_by_client_id(user=user, client_message_id="c-1", conversation_id=None)


def test_a_resend_in_a_named_thread_is_found_in_that_thread_only(user: Any, scripted: Any) -> None:
    first, record = _turn_start_db(user, ChatSend(client_message_id="c-1", message="hi"), scripted(), TurnExtras(thread_id="t-1"))
    assert record is not None
    found = turn_started_by_client_id(user=user, client_message_id="c-1", conversation_id=None, thread_id="t-1")
    assert found is not None and found.run_id == first.run_id
    assert turn_started_by_client_id(user=user, client_message_id="c-1", conversation_id=None, thread_id="t-2") is None


def test_a_regenerate_replaces_the_answer_with_a_new_empty_one(user: Any, scripted: Any) -> None:
    _, record = _turn_start_db(user, ChatSend(client_message_id="c-1", message="hi"), scripted(), NO_EXTRAS)
    assert record is not None
    Run.objects.filter(pk=record.run_id).update(status=Run.Status.COMPLETED)
    Message.objects.filter(pk=record.assistant_message_id).update(status=Message.Status.COMPLETE, content="hello")
    _, again, _ = _regenerate_db(user, record.conversation_id, None, None, scripted())
    assert Message.objects.get(pk=record.assistant_message_id).replaced  # kept, as an earlier version
    answer = _answer_of(again.run_id)
    assert (answer.pk, answer.status, answer.content) == (again.assistant_message_id, Message.Status.STREAMING, "")
