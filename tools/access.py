"""Who may use what: Django permission strings (all required) in code, group restrictions set by staff.

One `Access` is read per turn (fresh from the database: a change in the admin applies to the next turn,
without a restart) and answers for tools, pages, server actions and anything else that carries
`permissions` and staff's `groups`; a tool of an MCP server (tools/mcp.py) also needs the server's groups.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from chat.infra.staff_settings import staff_setting
from tools.spec import ToolSpec

# ModelBackend caches a user's permissions on the user object; a websocket keeps one user object for hours
_PERM_CACHES = ("_perm_cache", "_user_perm_cache", "_group_perm_cache")


class Access:
    """A user's permissions and groups, read from the database once per Access when first needed (so a change
    in the admin applies to the next turn); `denied` says why something is refused, or None."""

    def __init__(self, user: Any) -> None:
        self.user = user
        self.authenticated = user is not None and bool(getattr(user, "is_authenticated", False))
        self.superuser = self.authenticated and bool(getattr(user, "is_superuser", False)) and bool(getattr(user, "is_active", True))

    @cached_property
    def perms(self) -> frozenset[str]:
        if not self.authenticated:
            return frozenset()
        for attr in _PERM_CACHES:  # not the ones cached on a user object a websocket has kept for hours
            self.user.__dict__.pop(attr, None)
        return frozenset(self.user.get_all_permissions())

    @cached_property
    def group_ids(self) -> frozenset[int]:
        if not self.authenticated or self.user.pk is None:
            return frozenset()
        return frozenset(self.user.groups.values_list("id", flat=True))

    def missing(self, permissions: Iterable[str]) -> list[str]:
        """The permissions of `permissions` this user lacks (none for an active superuser)."""
        permissions = list(permissions)
        if self.superuser or not permissions:
            return []
        return [p for p in permissions if p not in self.perms]

    def denied(self, permissions: Sequence[str] = (), groups: Mapping[int, str] | None = None) -> str | None:
        """Why this user may not use a thing needing `permissions` and restricted to `groups` (id -> name), or None."""
        missing = self.missing(permissions)
        if missing:
            return "missing permission " + ", ".join(missing)
        if groups and not self.superuser and not (self.group_ids & set(groups)):
            return "restricted to group " + ", ".join(sorted(groups.values()))
        return None


def access_for(user: Any) -> Access:
    """The user's access, read fresh (not from the permission cache Django keeps on the user object)."""
    return Access(user)


@dataclass
class ToolAccess:
    """The tools a user is offered and the ones withheld (name -> why)."""

    allowed: list[ToolSpec] = field(default_factory=list)
    withheld: dict[str, str] = field(default_factory=dict)


def tool_group_restrictions() -> dict[str, dict[int, str]]:
    """Staff's group restrictions by tool name (one query at most every CHAT_STAFF_SETTINGS_TTL; read-only)."""
    from tools.models import Tool

    return staff_setting("tools.groups", lambda: _by_name(
        Tool.groups.through.objects.values_list("tool__name", "group_id", "group__name")))


def mcp_server_group_restrictions() -> dict[str, dict[int, str]]:
    """Staff's group restrictions by MCP server name (one query at most every CHAT_STAFF_SETTINGS_TTL; read-only)."""
    from tools.models import McpServer

    return staff_setting("tools.mcp_groups", lambda: _by_name(
        McpServer.groups.through.objects.values_list("mcpserver__name", "group_id", "group__name")))


def _by_name(rows: Iterable[tuple[str, int, str]]) -> dict[str, dict[int, str]]:
    """(name, group id, group name) rows -> name -> {group id: group name}."""
    found: dict[str, dict[int, str]] = {}
    for name, group_id, group_name in rows:
        found.setdefault(name, {})[group_id] = group_name
    return found


def tools_filter(access: Access, specs: Iterable[ToolSpec]) -> ToolAccess:
    """Split `specs` into those this user may be offered and those withheld, with the reason of each."""
    specs = list(specs)
    restrictions = tool_group_restrictions()
    servers = mcp_server_group_restrictions() if any(spec.mcp_server for spec in specs) else {}
    out = ToolAccess()
    for spec in specs:
        # a tool of an MCP server: the tool's own restriction and the server's, both
        reason = access.denied(spec.permissions, restrictions.get(spec.name)) or (
            access.denied((), servers.get(spec.mcp_server)) if spec.mcp_server else None)
        if reason is None:
            out.allowed.append(spec)
        else:
            out.withheld[spec.name] = reason
    return out


def known_permissions() -> frozenset[str]:
    """Every "app_label.codename" the installed models define (default and Meta.permissions), without the database."""
    from django.apps import apps
    from django.contrib.auth import get_permission_codename

    names: set[str] = set()
    for model in apps.get_models():
        opts = model._meta
        names.update(f"{opts.app_label}.{get_permission_codename(action, opts)}" for action in opts.default_permissions)
        names.update(f"{opts.app_label}.{codename}" for codename, _ in opts.permissions)
    return frozenset(names)


def unknown_permissions(permissions: Iterable[str], known: frozenset[str]) -> list[str]:
    """The permission strings of `permissions` that name no existing permission (not "app_label.codename" of a model)."""
    return [p for p in permissions if not isinstance(p, str) or p not in known]
