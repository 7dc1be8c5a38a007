"""Close a session's sockets when it logs out."""
from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth.signals import user_logged_out
from django.dispatch import receiver


@receiver(user_logged_out)
def close_session_sockets(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    session = getattr(request, "session", None)
    layer = get_channel_layer()
    if session is not None and session.session_key and layer is not None:
        try:
            async_to_sync(layer.group_send)(f"session.{session.session_key}", {"type": "session.logout"})
        except RuntimeError:  # already inside an event loop thread: schedule instead
            import asyncio

            asyncio.get_event_loop().create_task(layer.group_send(f"session.{session.session_key}", {"type": "session.logout"}))
