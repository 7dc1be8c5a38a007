"""The admin customizations speak the staff user's language: column headers, fieldsets and messages are translated."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import translation

from chat.models import Conversation, Message, Run

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _english_afterwards() -> Iterator[None]:
    """LocaleMiddleware leaves the last request's language active in this thread: the next test starts in English."""
    yield
    translation.deactivate()


def _staff_client() -> Client:
    staff = get_user_model().objects.create_superuser(username="staff", password="x", email="staff@example.com")
    convo = Conversation.objects.create(owner=staff, title="Hello", page="home")
    user_msg = Message.objects.create(conversation=convo, role="user", content="hi")
    Run.objects.create(conversation=convo, user_message=user_msg, provider="offline", model="pagechat-offline",
                       status="completed", duration_ms=1200.0)
    client = Client()
    client.force_login(staff)
    return client


def test_runs_changelist_column_headers_follow_the_staff_users_language() -> None:
    client = _staff_client()
    german = client.get("/admin/pagechat/run/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Kosten (USD)" in german and "Dauer" in german and "Cost (USD)" not in german
    english = client.get("/admin/pagechat/run/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Cost (USD)" in english and "Kosten (USD)" not in english  # the admin capitalizes headers


def test_cost_page_and_delete_message_are_translated() -> None:
    client = _staff_client()
    costs = client.get("/admin/pagechat/run/costs/", HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert "Coût par utilisateur et par jour" in costs and "coût (USD)" in costs and "Cliquez sur une colonne" in costs
    convo = Conversation.objects.get()
    confirm = client.post("/admin/pagechat/conversation/", {"action": "delete_owners_conversations", "_selected_action": [convo.pk]},
                          HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "staff: 1 Unterhaltung<" in confirm and "Ja, löschen" in confirm
    done = client.post("/admin/pagechat/conversation/", {"action": "delete_owners_conversations", "_selected_action": [convo.pk],
                                                         "confirmed": "yes"}, HTTP_ACCEPT_LANGUAGE="de", follow=True)
    assert "1 Unterhaltung von 1 Benutzer gelöscht." in [str(m) for m in done.context["messages"]]
