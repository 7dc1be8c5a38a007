"""0016 copies a title a run recorded as generated (diagnostics `title`, the record before the column) onto its
conversation, so that an edit of the first question after the upgrade still retitles it."""
from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import pytest
from django.apps import apps
from django.db import connection

from chat.models import Conversation, Run

pytestmark = pytest.mark.django_db


def test_a_recorded_generated_title_is_copied_and_a_renamed_one_is_not(django_user_model: Any) -> None:
    owner = django_user_model.objects.create_user(username="m", password="pw")
    kept = Conversation.objects.create(owner=owner, title="Gene Editing Basics")
    Run.objects.create(conversation=kept, status=Run.Status.COMPLETED, diagnostics={"title": "Oncology Overview"})
    Run.objects.create(conversation=kept, status=Run.Status.COMPLETED, diagnostics={"title": "Gene Editing Basics"})  # the latest one
    renamed = Conversation.objects.create(owner=owner, title="My notes")
    Run.objects.create(conversation=renamed, status=Run.Status.COMPLETED, diagnostics={"title": "Oncology Overview"})
    migration = importlib.import_module("chat.migrations.0016_conversation_generated_title")
    migration.generated_titles_copy(apps, SimpleNamespace(connection=connection))
    assert Conversation.objects.get(pk=kept.pk).generated_title == "Gene Editing Basics"
    assert Conversation.objects.get(pk=renamed.pk).generated_title == ""
