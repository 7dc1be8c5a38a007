"""A signed-in user for tests of the tray's template tags that need no database row."""
from __future__ import annotations


class TagUser:
    """Signed in as alice, in no group, with no permission: what the tags ask of a user and nothing more."""

    is_authenticated = True
    is_staff = False
    pk = None  # in no group

    def get_username(self) -> str:
        return "alice"

    def get_all_permissions(self) -> set[str]:  # the tag labels the input of every tool this user may use
        return set()
