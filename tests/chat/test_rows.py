"""chat.infra.rows: single-row statements written once must store exactly what the ORM stores (field by field)."""
from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import pytest
from django.db.models.signals import post_save

from chat.infra.rows import _create_plan, row_create, row_insert, row_update, row_values
from chat.models import Attachment, Conversation, Message, Run

pytestmark = pytest.mark.django_db


def _fields(obj: Any, *skip: str) -> dict[str, Any]:
    obj.refresh_from_db()
    out = {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields if f.attname not in ("id", *skip)}
    return out


def test_an_insert_stores_what_save_stores(user: Any) -> None:
    conv = row_insert(Conversation(owner=user, title="t", page="home", thread_id=None))
    orm_conv = Conversation.objects.create(owner=user, title="t", page="home", thread_id=None)
    assert isinstance(conv.pk, int) and conv.pk != orm_conv.pk and not conv._state.adding
    assert abs((conv.created_at - orm_conv.created_at).total_seconds()) < 5
    kwargs: dict[str, Any] = dict(role=Message.Role.USER, content="héllo ✓", context={"current_page": "p", "n": [1, 2]},
                                  action_metadata={"action_identifier": "a", "action_data": None}, client_message_id="c-1",
                                  provider_messages=[{"role": "user", "content": [{"type": "text", "text": "x"}]}])
    fast = row_insert(Message(conversation=conv, **kwargs))
    orm = Message.objects.create(conversation=conv, **{**kwargs, "client_message_id": "c-2"})
    a, b = _fields(fast, "created_at", "updated_at", "client_message_id"), _fields(orm, "created_at", "updated_at", "client_message_id")
    assert a == b
    assert fast.created_at.tzinfo is not None and fast.updated_at.tzinfo is not None
    run = row_insert(Run(conversation=conv, user_message=fast, provider="bench", model="m", owner_process="p",
                         heartbeat_at=dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC)))
    assert isinstance(run.pk, uuid.UUID)
    stored = Run.objects.get(pk=run.pk)
    assert stored.heartbeat_at == dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
    assert (stored.status, stored.diagnostics, stored.user_message_id) == (Run.Status.RUNNING, {}, fast.pk)


def test_an_insert_goes_through_save_when_a_receiver_listens(user: Any) -> None:
    seen: list[Any] = []

    def receiver(sender: Any, instance: Any, created: bool, **kw: Any) -> None:
        seen.append((instance.pk, created))

    post_save.connect(receiver, sender=Conversation, dispatch_uid="test-rows")
    try:
        conv = row_insert(Conversation(owner=user, title="t"))
    finally:
        post_save.disconnect(dispatch_uid="test-rows", sender=Conversation)
    assert seen == [(conv.pk, True)]


def test_a_create_stores_what_save_stores_without_an_instance(user: Any) -> None:
    conv_id = row_create(Conversation, {"owner_id": user.pk, "title": "t", "page": "home"})
    orm_conv = Conversation.objects.create(owner=user, title="t", page="home")
    assert isinstance(conv_id, int) and conv_id != orm_conv.pk
    conv = Conversation.objects.get(pk=conv_id)
    assert _fields(conv, "created_at", "updated_at") == _fields(orm_conv, "created_at", "updated_at")
    assert conv.created_at == conv.updated_at and abs((conv.created_at - orm_conv.created_at).total_seconds()) < 5
    kwargs: dict[str, Any] = dict(role=Message.Role.USER, content="héllo ✓", context={"current_page": "p", "n": [1, 2]},
                                  action_metadata={"action_identifier": "a", "action_data": None},
                                  provider_messages=[{"role": "user", "content": [{"type": "text", "text": "x"}]}])
    fast = Message.objects.get(pk=row_create(Message, {"conversation_id": conv_id, "client_message_id": "c-1", **kwargs}))
    orm = Message.objects.create(conversation=conv, client_message_id="c-2", **kwargs)
    assert _fields(fast, "created_at", "updated_at", "client_message_id") == _fields(orm, "created_at", "updated_at", "client_message_id")
    assert fast.created_at.tzinfo is not None and fast.created_at == fast.updated_at
    # a row given few values: every other column takes its default, as save() writes it
    bare = Message.objects.get(pk=row_create(Message, {"conversation_id": conv_id, "role": Message.Role.ASSISTANT}))
    orm_bare = Message.objects.create(conversation=conv, role=Message.Role.ASSISTANT)
    assert _fields(bare, "created_at", "updated_at") == _fields(orm_bare, "created_at", "updated_at")
    assert (bare.suggested_values, bare.context, bare.custom_payload, bare.status) == ([], {}, None, Message.Status.COMPLETE)
    heartbeat = dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
    run_ids = [row_create(Run, {"conversation_id": conv_id, "user_message_id": fast.pk, "provider": "bench", "heartbeat_at": heartbeat,
                                **extra}) for extra in ({}, {"status": Run.Status.COMPLETED})]  # one running run per conversation
    assert all(isinstance(r, uuid.UUID) for r in run_ids) and run_ids[0] != run_ids[1]  # a callable default: one per row
    stored = Run.objects.get(pk=run_ids[0])
    assert (stored.heartbeat_at, stored.status, stored.diagnostics, stored.user_message_id, stored.provider) == (
        heartbeat, Run.Status.RUNNING, {}, fast.pk, "bench")


def test_a_create_refuses_a_name_that_is_not_a_column(user: Any) -> None:
    with pytest.raises(TypeError, match="'owner'"):
        row_create(Conversation, {"owner": user, "title": "t"})  # a foreign key goes by its attname, owner_id
    with pytest.raises(TypeError, match="'nope'"):
        row_create(Conversation, {"owner_id": user.pk, "nope": 1})
    assert not Conversation.objects.exists()


def test_a_create_goes_through_save_when_a_receiver_listens_or_a_field_needs_the_orm(user: Any) -> None:
    seen: list[Any] = []

    def receiver(sender: Any, instance: Any, created: bool, **kw: Any) -> None:
        seen.append((instance.pk, created, instance.title))

    post_save.connect(receiver, sender=Conversation, dispatch_uid="test-rows-create")
    try:
        pk = row_create(Conversation, {"owner_id": user.pk, "title": "t"})
    finally:
        post_save.disconnect(dispatch_uid="test-rows-create", sender=Conversation)
    assert seen == [(pk, True, "t")]
    assert _create_plan(Attachment, "default") is None  # a file field's pre_save stores the file: save() does it


def test_an_update_changes_only_the_matching_row_as_update_would(user: Any) -> None:
    conv = Conversation.objects.create(owner=user)
    msg = Message.objects.create(conversation=conv, role=Message.Role.USER, content="q")
    run = Run.objects.create(conversation=conv, user_message=msg)
    other = Run.objects.create(conversation=Conversation.objects.create(owner=user), user_message=msg, status=Run.Status.COMPLETED)
    values = {"status": Run.Status.COMPLETED, "cost_usd": Decimal("0.00012345"), "diagnostics": {"a": [1, "ü"]},
              "finished_at": dt.datetime(2026, 5, 6, 7, 8, 9, tzinfo=dt.UTC), "assistant_message": msg.pk, "error_code": ""}
    assert row_update(Run, str(run.pk), {"status": Run.Status.RUNNING}, values) == 1
    assert row_update(Run, str(run.pk), {"status": Run.Status.RUNNING}, values) == 0  # no longer running
    assert row_update(Run, run.pk, {}, {"last_seq": 7}) == 1  # a UUID as well as its text
    run.refresh_from_db()
    assert (run.status, run.cost_usd, run.diagnostics, run.finished_at, run.assistant_message_id, run.last_seq) == (
        Run.Status.COMPLETED, Decimal("0.00012345"), {"a": [1, "ü"]}, dt.datetime(2026, 5, 6, 7, 8, 9, tzinfo=dt.UTC), msg.pk, 7)
    other.refresh_from_db()
    assert (other.diagnostics, other.last_seq) == ({}, 0)


def test_values_are_scoped_by_every_condition(user: Any, other_user: Any) -> None:
    conv = Conversation.objects.create(owner=user, title="mine", thread_id="t1")
    assert row_values(Conversation, ("id", "title", "thread_id"), {"id": conv.pk, "owner": user.pk}) == (conv.pk, "mine", "t1")
    assert row_values(Conversation, ("id",), {"id": conv.pk, "owner": other_user.pk}) is None
