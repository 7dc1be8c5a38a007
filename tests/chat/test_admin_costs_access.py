"""The admin's cost report (/admin/pagechat/run/costs/) asks for the permission the run pages ask for: staff
without `pagechat.view_run` get 403 (no usernames, no usage), like on every model page."""
from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from chat.models import Conversation, Run

pytestmark = pytest.mark.django_db

COSTS = "/admin/pagechat/run/costs/"


@pytest.fixture
def spender(django_user_model: Any) -> Any:
    """A user with one priced turn, whose name and cost the report lists."""
    owner = django_user_model.objects.create_user("spender-zq", password="x")
    conversation = Conversation.objects.create(owner=owner, title="spent")
    Run.objects.create(conversation=conversation, status="completed", input_tokens=4321, output_tokens=5, cost_usd=Decimal("0.125"))
    return owner


def _staff(django_user_model: Any, *perms: str) -> Client:
    user = django_user_model.objects.create_user("staffer", password="x", is_staff=True)
    user.user_permissions.add(*(Permission.objects.get(content_type__app_label="pagechat", codename=p) for p in perms))
    client = Client()
    client.force_login(user)
    return client


def test_staff_without_permissions_get_403_and_no_usage(spender: Any, django_user_model: Any) -> None:
    client = _staff(django_user_model)
    assert client.get("/admin/pagechat/run/").status_code == 403  # the model page's answer ...
    response = client.get(COSTS)
    assert response.status_code == 403  # ... is the report's
    body = response.content.decode()
    assert "spender-zq" not in body and "4321" not in body and "0.125000" not in body


def test_staff_with_another_models_permission_get_403(spender: Any, django_user_model: Any) -> None:
    client = _staff(django_user_model, "view_conversation")
    assert client.get(COSTS).status_code == 403


@pytest.mark.parametrize("perm", ["view_run", "change_run"])
def test_staff_who_may_view_runs_read_the_report(spender: Any, django_user_model: Any, perm: str) -> None:
    response = _staff(django_user_model, perm).get(COSTS)
    assert response.status_code == 200
    body = response.content.decode()
    assert ">spender-zq<" in body and "4321" in body and "0.125000" in body


def test_a_superuser_reads_the_report(spender: Any, admin_client: Client) -> None:
    response = admin_client.get(COSTS)
    assert response.status_code == 200 and ">spender-zq<" in response.content.decode()


def test_anonymous_visitors_are_sent_to_the_login(spender: Any, client: Client) -> None:
    response = client.get(COSTS)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
