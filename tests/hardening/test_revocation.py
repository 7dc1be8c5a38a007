"""Revoked credentials reach open sockets: a deleted token, a deactivated user or a logged-out session closes
the socket with a code that says why, within a few seconds, and no new run starts on it."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model
from django.test import AsyncClient
from rest_framework.authtoken.models import Token

from chat.api.auth import CLOSE_SESSION_ENDED, CLOSE_TOKEN_REVOKED, CLOSE_USER_INACTIVE
from chat.models import Run
from chat.providers import scripted as s
from tests.conftest import ws_connect

pytestmark = pytest.mark.django_db(transaction=True)


async def closed_with(ws: Any, timeout: float) -> int:
    """The close code the server sends within `timeout` seconds (frames before it are skipped)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        out = await ws.comm.receive_output(timeout=max(0.01, deadline - asyncio.get_running_loop().time()))
        if out["type"] == "websocket.close":
            return int(out["code"])


async def session_ws(user: Any) -> tuple[Any, AsyncClient]:
    client = AsyncClient()
    await database_sync_to_async(client.force_login)(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    ws, _ = await ws_connect(None, headers=[(b"cookie", cookie), (b"origin", b"http://testserver")])
    assert ws is not None
    return ws, client


async def test_deleting_the_token_closes_its_sockets_at_once(user: Any, scripted: Any, settings: Any) -> None:
    settings.CHAT_AUTH_RECHECK_INTERVAL = 60  # the ring, not the periodic check
    ws, _ = await ws_connect(user)
    other, _ = await session_ws(user)  # the same user's session socket is not about that token
    await asyncio.sleep(0.1)
    await Token.objects.filter(user=user).adelete()
    assert await closed_with(ws, 3) == CLOSE_TOKEN_REVOKED
    scripted.enqueue(s.text("still here"))
    await other.chat("hi")
    assert (await other.until_terminal())[-1]["type"] == "complete"
    await other.close()


async def test_deactivating_the_user_closes_token_and_session_sockets(user: Any, settings: Any) -> None:
    settings.CHAT_AUTH_RECHECK_INTERVAL = 60
    token_ws, _ = await ws_connect(user)
    sess_ws, _ = await session_ws(user)
    await asyncio.sleep(0.1)
    user.is_active = False
    await user.asave()
    assert await closed_with(token_ws, 3) == CLOSE_USER_INACTIVE
    assert await closed_with(sess_ws, 3) == CLOSE_USER_INACTIVE


async def test_the_periodic_recheck_catches_changes_made_without_signals(user: Any, other_user: Any, settings: Any) -> None:
    settings.CHAT_AUTH_RECHECK_INTERVAL = 0.5
    ws, _ = await ws_connect(user)
    bob, _ = await ws_connect(other_user)
    sess_ws, client = await session_ws(other_user)
    await get_user_model().objects.filter(pk=user.pk).aupdate(is_active=False)  # no signal
    assert await closed_with(ws, 3) == CLOSE_USER_INACTIVE
    from django.contrib.sessions.models import Session

    await Session.objects.filter(session_key=client.cookies["sessionid"].value).adelete()  # expired/flushed
    assert await closed_with(sess_ws, 3) == CLOSE_SESSION_ENDED
    await bob.send({"type": "chat.cancel", "run_id": "x"})  # bob's token socket is untouched
    assert (await bob.recv())["code"] == "not_found"
    await bob.close()


async def test_logout_closes_the_session_socket_with_4401(user: Any, staff_user: Any, settings: Any) -> None:
    settings.CHAT_AUTH_RECHECK_INTERVAL = 60
    ws, client = await session_ws(staff_user)
    await client.post("/admin/logout/")
    assert await closed_with(ws, 3) == CLOSE_SESSION_ENDED


async def test_no_run_starts_on_a_revoked_socket(user: Any, scripted: Any, settings: Any) -> None:
    settings.CHAT_AUTH_RECHECK_INTERVAL = 60
    ws, _ = await ws_connect(user)
    await get_user_model().objects.filter(pk=user.pk).aupdate(is_active=False)  # no ring: only the send's own check
    scripted.enqueue(s.text("must not run"))
    await ws.chat("start something")
    assert await closed_with(ws, 3) == CLOSE_USER_INACTIVE
    assert await Run.objects.acount() == 0


async def test_a_send_on_a_revoked_token_closes_and_stores_nothing(user: Any, scripted: Any, settings: Any) -> None:
    """Every send is re-checked before it is admitted: a token removed without any signal (a raw delete) closes with
    4402, for a new message and for a regenerate, and nothing is stored."""
    from chat.models import Message

    settings.CHAT_AUTH_RECHECK_INTERVAL = 60
    ws, _ = await ws_connect(user)
    scripted.enqueue(s.text("first answer"))
    await ws.chat("hello")
    await ws.until_terminal()
    conversation = (await Message.objects.aget(role=Message.Role.USER)).conversation_id
    ws2, _ = await ws_connect(user)
    assert ws2 is not None
    await database_sync_to_async(lambda: Token.objects.filter(user=user)._raw_delete("default"))()
    await ws.chat("again", conversation_id=conversation)
    assert await closed_with(ws, 3) == CLOSE_TOKEN_REVOKED
    await ws2.chat("", conversation_id=conversation, replace_last="answer")
    assert await closed_with(ws2, 3) == CLOSE_TOKEN_REVOKED
    assert await Message.objects.acount() == 2 and await Run.objects.acount() == 1


async def test_a_rate_limited_resend_on_a_revoked_token_closes_without_following(user: Any, scripted: Any, settings: Any) -> None:
    """Over the message limit a resend normally finds its run; on revoked credentials it closes first (4402)."""
    settings.CHAT_AUTH_RECHECK_INTERVAL = 60
    settings.CHAT_RATE_LIMIT_PER_MINUTE = 1
    ws, _ = await ws_connect(user)
    scripted.enqueue(s.text("first answer"))
    await ws.send({"type": "chat.send", "client_message_id": "once", "conversation_id": None, "message": "hello"})
    await ws.until_terminal()
    await database_sync_to_async(lambda: Token.objects.filter(user=user)._raw_delete("default"))()
    await ws.send({"type": "chat.send", "client_message_id": "once", "conversation_id": None, "message": "hello"})
    assert await closed_with(ws, 3) == CLOSE_TOKEN_REVOKED
