"""The demo's users may use every demo flow (as demo_setup gives demo and alice); tests of refusals make their own."""
from __future__ import annotations

from typing import Any

import pytest


def grant_demo_permissions(user: Any) -> Any:
    """Give `user` every permission of the demo app's models."""
    from django.contrib.auth.models import Permission

    user.user_permissions.set(Permission.objects.filter(content_type__app_label="pagechat_demo"))
    return user


@pytest.fixture
def user(django_user_model: Any) -> Any:
    return grant_demo_permissions(django_user_model.objects.create_user(username="ann", password="pw"))
