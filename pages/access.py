"""Page and server-action access: the page's `permissions`, staff's group restriction, each action's `permissions`."""
from __future__ import annotations

from typing import Any

from chat.infra.staff_settings import staff_setting
from pages.registry import PageSpec, ServerAction, registry
from tools.access import Access, access_for

__all__ = ["Access", "access_for", "page_denied", "page_group_restriction", "server_action_denied", "user_page_denied"]


def page_group_restriction(name: str) -> dict[int, str]:
    """Staff's group restriction of the page called `name` (group id -> name; empty: none; read-only). One query at
    most every CHAT_STAFF_SETTINGS_TTL."""
    from pages.models import ChatPage

    return staff_setting(f"pages.groups.{name}", lambda: dict(
        ChatPage.groups.through.objects.filter(chatpage__name=name).values_list("group_id", "group__name")))


def page_denied(access: Access, page: PageSpec) -> str | None:
    """Why this user may not chat on `page`, or None (staff restrict registered pages only: the default page is open)."""
    return access.denied(page.permissions, page_group_restriction(page.name) if page.name in registry else None)


def user_page_denied(user: Any, page: PageSpec) -> str | None:
    """`page_denied` for a user object (reads their permissions now)."""
    return page_denied(access_for(user), page)


def server_action_denied(access: Access, action: ServerAction) -> str | None:
    """Why this user may not run `action`, or None."""
    return access.denied(action.permissions)
