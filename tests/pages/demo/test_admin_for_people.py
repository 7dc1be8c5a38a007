"""The demo's staff account can read the chat's records in the admin; the runs list has what support needs, with
rounded times and the model that really answered."""
from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from chat.admin.runs import RunAdmin
from chat.models import Conversation, Message, Run

pytestmark = pytest.mark.django_db


def test_demo_staff_can_view_chat_records_but_not_change_them(settings: Any) -> None:
    settings.DEBUG = True  # a development copy (with DEBUG off demo_setup refuses without --force)
    call_command("demo_setup", stdout=StringIO())
    demo = get_user_model().objects.get(username="demo")
    convo = Conversation.objects.create(owner=demo, title="Hello", page="home")
    user_msg = Message.objects.create(conversation=convo, role="user", content="hi")
    run = Run.objects.create(conversation=convo, user_message=user_msg, provider="offline", model="pagechat-offline",
                             status="completed", duration_ms=1234.5678, time_to_first_token_ms=87.654321)
    client = Client()
    client.force_login(demo)
    for path in ("/admin/pagechat/conversation/", "/admin/pagechat/run/", f"/admin/pagechat/run/{run.pk}/change/",
                 "/admin/pagechat/message/", "/admin/pagechat/toolcall/", "/admin/pagechat_demo/researchstream/"):
        assert client.get(path).status_code == 200, path
    runs = client.get("/admin/pagechat/run/").content.decode()
    assert "pagechat-offline" in runs and "claude" not in runs
    assert "1.23 s" in runs and "1234.5678" not in runs
    detail = client.get(f"/admin/pagechat/run/{run.pk}/change/").content.decode()
    assert "0.09 s" in detail and "87.654321" not in detail
    assert demo.has_perm("pagechat.view_run") and not demo.has_perm("pagechat.change_run")
    assert not demo.has_perm("pagechat.delete_conversation")
    call_command("demo_setup", stdout=StringIO())  # idempotent
    assert not get_user_model().objects.get(username="alice").has_perm("pagechat.view_run")  # not staff: no chat records


def test_runs_list_has_at_most_seven_columns() -> None:
    assert len(RunAdmin.list_display) <= 7
    assert {"user", "outcome", "model", "duration"} <= set(RunAdmin.list_display)
