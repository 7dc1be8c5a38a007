"""Credentials that stop being valid reach open sockets: logout closes the session's sockets, a deleted token
or a deactivated user rings the user's sockets to re-check now (they also re-check on their own, every
CHAT_AUTH_RECHECK_INTERVAL, which covers a lost ring, another process without a shared layer, and changes
made without signals such as `QuerySet.update`)."""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from chat.infra.logs import Throttled

log = logging.getLogger(__name__)
_ring_failed = Throttled(log)  # every logout or revocation while the channel layer is away: one line a minute


def user_group(user_id: int) -> str:
    """The channel-layer group of every open socket of this user."""
    return f"user.{user_id}"


def _ring(group: str, message: dict[str, Any]) -> None:
    """Send to a group from sync code (or schedule it from an event loop's thread); never raises."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except RuntimeError:  # already inside an event loop thread: schedule instead
        asyncio.get_event_loop().create_task(layer.group_send(group, message))
    except Exception as exc:  # the sockets' own periodic re-check still closes them
        _ring_failed.warning("could not ring %s", group, exc=exc)


@receiver(user_logged_out)
def close_session_sockets(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    session = getattr(request, "session", None)
    if session is not None and session.session_key:
        _ring(f"session.{session.session_key}", {"type": "session.logout"})


def _recheck_after_commit(user_id: int | None) -> None:
    if user_id is not None:
        transaction.on_commit(lambda: _ring(user_group(user_id), {"type": "auth.recheck"}))


@receiver(post_delete, sender="authtoken.Token")
def token_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    _recheck_after_commit(instance.user_id)


@receiver(post_save, sender=settings.AUTH_USER_MODEL)
def user_saved(sender: Any, instance: Any, **kwargs: Any) -> None:
    if not getattr(instance, "is_active", True):
        _recheck_after_commit(instance.pk)


@receiver(post_delete, sender=settings.AUTH_USER_MODEL)
def user_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    _recheck_after_commit(instance.pk)
