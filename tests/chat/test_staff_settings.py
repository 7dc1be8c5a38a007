"""Staff settings are read once per CHAT_STAFF_SETTINGS_TTL, and a change made in this process applies at once."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group

from chat.infra import staff_settings
from pages.access import page_group_restriction
from tools.access import tool_group_restrictions
from tools.models import Tool
from tools.services import tool_overrides

pytestmark = pytest.mark.django_db


def test_a_turns_staff_settings_cost_no_query_once_read(django_assert_num_queries: Any) -> None:
    Tool.objects.get_or_create(name="search_articles")
    tool_overrides(), tool_group_restrictions(), page_group_restriction("home")
    with django_assert_num_queries(0):
        tool_overrides(), tool_group_restrictions(), page_group_restriction("home")


def test_a_change_saved_in_this_process_applies_on_the_next_read() -> None:
    tool, _ = Tool.objects.get_or_create(name="search_articles")
    assert tool_overrides()["search_articles"].enabled
    tool.enabled = False
    tool.save()  # the admin saves this way
    assert not tool_overrides()["search_articles"].enabled
    group = Group.objects.create(name="editors")
    tool.groups.add(group)
    assert tool_group_restrictions()["search_articles"] == {group.pk: "editors"}
    group.name = "writers"
    group.save()
    assert tool_group_restrictions()["search_articles"] == {group.pk: "writers"}


def test_a_change_from_elsewhere_is_read_after_the_ttl(settings: Any, monkeypatch: Any) -> None:
    """Another process's change sends no signal here (simulated with .update()): it shows once the TTL is over."""
    tool, _ = Tool.objects.get_or_create(name="search_articles")
    now = [1000.0]
    monkeypatch.setattr(staff_settings.time, "monotonic", lambda: now[0])
    settings.CHAT_STAFF_SETTINGS_TTL = 5
    assert tool_overrides()["search_articles"].enabled
    Tool.objects.filter(pk=tool.pk).update(enabled=False)
    now[0] += 4.9
    assert tool_overrides()["search_articles"].enabled  # still the cached read
    now[0] += 0.2
    assert not tool_overrides()["search_articles"].enabled


def test_ttl_zero_reads_every_time(settings: Any) -> None:
    settings.CHAT_STAFF_SETTINGS_TTL = 0
    tool, _ = Tool.objects.get_or_create(name="search_articles")
    assert tool_overrides()["search_articles"].enabled
    Tool.objects.filter(pk=tool.pk).update(enabled=False)
    assert not tool_overrides()["search_articles"].enabled
