"""The websocket transport: parse, allowlist, look up the frame's handler, call one service."""
from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from channels.db import aclose_old_connections
from channels.generic.websocket import AsyncWebsocketConsumer

from chat import selectors, services
from chat.api.auth import CLOSE_SESSION_ENDED, credentials_revocation, revocation
from chat.api.follow import run_follow
from chat.api.revocation import user_group
from chat.conf import chat_settings
from chat.events import ChatApprove, ChatCancel, ChatResume, ChatSend, ChatToolResult, FrameError, error_event, parse_frame
from chat.events.errors import CredentialsRevoked, ServiceError
from chat.infra import metrics
from chat.infra.logs import Throttled
from chat.infra.redis_client import receive_timed_out
from chat.quotas.limits import limiter
from chat.runs import manager

CLOSE_GOING_AWAY = 1001  # what a browser closes a page's sockets with when the page is left

log = logging.getLogger(__name__)


_CLEANUPS: set[asyncio.Task[None]] = set()  # releases scheduled by cancelled consumers, kept until done
_RECEIVE_FAILED = Throttled(log)  # every socket of the process retries each second while Redis is away: one line
_group_failed = Throttled(log)  # every socket that opens or closes while the channel layer is away: one line a minute


class ChatConsumer(AsyncWebsocketConsumer):
    """Thin: every frame goes through `parse_frame` and then to its handler by type."""

    # Channels recycles the connections of Django's shared sync thread before every message, with a hop to that
    # thread. These frames' handlers do their database work on threads that recycle their own (chat.infra.db_threads,
    # database_sync_to_async), so they skip the hop (about 7% of a turn's server CPU). Every other frame, and any
    # new one, keeps Channels' behaviour.
    OWN_CONNECTIONS = frozenset({"chat.send"})

    # The channel layer is only a doorbell here (logout); when Redis is away its receive must not kill the
    # socket (Channels would close it with 1011): keep retrying until the layer answers again.
    @property
    def channel_receive(self) -> Callable[[], Awaitable[dict[str, Any]]]:
        return self._channel_receive

    @channel_receive.setter
    def channel_receive(self, receive: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        async def resilient() -> dict[str, Any]:
            while True:
                try:
                    return await receive()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    if receive_timed_out(exc):
                        continue  # an idle wait ended on the client's clock (a layer without channel_layer_host)
                    _RECEIVE_FAILED.warning("channel layer receive failed; retrying", exc=exc)
                    await asyncio.sleep(1.0)

        self._channel_receive = resilient

    async def connect(self) -> None:
        """Accept a signed-in user within the socket limit, join the logout groups, start the credentials watcher."""
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close()
            return
        self.user = user
        # no channel layer configured (a host without CHANNEL_LAYERS): no channel_name either
        self.socket_id = getattr(self, "channel_name", None) or uuid.uuid4().hex
        if not await limiter.socket_acquire(user.pk, self.socket_id):
            metrics.RATE_LIMITED.labels("sockets").inc()
            # accept only to say why, then close: a refused handshake would look like an auth failure
            await self.accept()
            limit = chat_settings.CHAT_MAX_SOCKETS_PER_USER
            await self.send(text_data=error_event("rate_limited", f"too many open connections (at most {limit})").wire())
            await self.close(code=4429)
            return
        self.counted = True
        self.closing = False
        metrics.OPEN_SOCKETS.inc()
        manager.ensure_background()
        self.followers: dict[str, asyncio.Task[Any]] = {}
        self.handlers: dict[str, Callable[[Any], Awaitable[None]]] = {  # frame type -> handler of that frame
            "chat.send": self.on_send,
            "chat.cancel": self.on_cancel,
            "chat.resume": self.on_resume,
            "chat.approve": self.on_approve,
            "chat.tool_result": self.on_tool_result,
        }
        self.tab_ids: set[str] = set()  # the tabs that sent turns here: their frontend tool calls end if the page goes
        session = self.scope.get("session")
        self.session_key = session.session_key if self.scope.get("auth") == "session" and session is not None and session.session_key else None
        self.token = self.scope.get("token") if self.scope.get("auth") == "token" else None
        self.session_group = f"session.{self.session_key}" if self.session_key else None
        self.groups_joined = [g for g in (self.session_group, user_group(user.pk)) if g]
        await self.accept()
        if self.channel_layer is not None:
            for group in self.groups_joined:
                try:
                    await self.channel_layer.group_add(group, self.channel_name)
                except Exception as exc:  # the socket works without it; the periodic re-check still closes it
                    _group_failed.warning("could not join the group %s", group, exc=exc)
        self.watcher = asyncio.get_running_loop().create_task(self._watch_credentials(), name=f"auth-watch:{self.socket_id}")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Whatever ends this socket's task - a disconnect, or the server cancelling a consumer it gave up on
        before `disconnect()` ran - its watcher and followers stop and its place in the socket limit is given back."""
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._stop_tasks()
            if getattr(self, "counted", False):
                release = asyncio.get_running_loop().create_task(self._release_socket())
                _CLEANUPS.add(release)
                release.add_done_callback(_CLEANUPS.discard)

    def _stop_tasks(self) -> None:
        """Cancel this socket's followers and watcher (the runs themselves go on)."""
        for task in getattr(self, "followers", {}).values():
            task.cancel()  # the runs themselves go on: they belong to the process
        watcher = getattr(self, "watcher", None)
        if watcher is not None:
            watcher.cancel()

    async def _release_socket(self) -> None:
        """Give back this socket's place in the per-user limit, once."""
        if getattr(self, "counted", False):
            self.counted = False
            metrics.OPEN_SOCKETS.dec()
            await limiter.socket_release(self.user.pk, self.socket_id)

    async def disconnect(self, code: int) -> None:
        """Release the socket, stop its tasks, leave its groups."""
        await self._release_socket()
        self._stop_tasks()
        if code == CLOSE_GOING_AWAY and getattr(self, "tab_ids", None):  # the page was left (a lost network closes with 1006)
            try:
                await services.tab_left(user=self.user, tab_ids=self.tab_ids)
            except Exception:  # the calls still end when the run stops waiting
                log.warning("could not end the frontend tool calls of a page that was left", exc_info=True)
        if self.channel_layer is not None:
            for group in getattr(self, "groups_joined", []):
                try:
                    await self.channel_layer.group_discard(group, self.channel_name)
                except Exception as exc:  # the group entry expires by itself
                    _group_failed.warning("could not leave the group %s", group, exc=exc)

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Channels' dispatch, except that a received frame recycles database connections in `receive`, once parsed,
        unless its handler manages its own (`OWN_CONNECTIONS`)."""
        if message["type"] == "websocket.receive":
            await self.websocket_receive(message)
        else:
            await super().dispatch(message)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Parse a frame and call its handler; refusals answer as error frames."""
        if self.closing:  # revoked: nothing more is taken from this socket
            return
        frame = parse_frame(text_data, chat_settings.CHAT_MAX_FRAME_BYTES)
        if isinstance(frame, FrameError):
            await self.send(text_data=frame.wire())
            return
        if frame.type not in self.OWN_CONNECTIONS:
            await aclose_old_connections()
        try:
            await self.handlers[frame.type](frame)
        except ServiceError as exc:
            await self.send(text_data=error_event(exc.code, exc.message, run_id=getattr(frame, "run_id", None), retry_after=exc.retry_after).wire())
        except Exception:
            log.exception("frame handler failed")
            await self.send(text_data=error_event("internal", "internal error").wire())

    # ---- handlers --------------------------------------------------------------------------------

    async def on_send(self, frame: ChatSend) -> None:
        """chat.send: start a turn (never on revoked credentials) and follow it."""
        if self.closing:
            return
        # a turn acts as the user: never on revoked credentials (checked in the same database job that stores it)
        check = functools.partial(credentials_revocation, self.user.pk, self.token, self.session_key)
        try:
            started = await services.turn_start(user=self.user, frame=frame, credentials=check)
        except CredentialsRevoked as revoked:
            await self._close_revoked(revoked.code)
            return
        if frame.client_tools and frame.tab_id:
            self.tab_ids.add(frame.tab_id)
        self._follow(started.run_id, 0)

    async def on_resume(self, frame: ChatResume) -> None:
        """chat.resume: follow the user's run after `after_seq`."""
        await selectors.run_for_user(user=self.user, run_id=frame.run_id)
        self._follow(frame.run_id, frame.after_seq)

    async def on_cancel(self, frame: ChatCancel) -> None:
        """chat.cancel: cancel the run, wherever it runs."""
        await services.run_cancel(user=self.user, run_id=frame.run_id)

    async def on_approve(self, frame: ChatApprove) -> None:
        """chat.approve: answer the run's tool approval."""
        await services.approval_answer(user=self.user, run_id=frame.run_id, tool_use_id=frame.tool_use_id, approved=frame.approved)

    async def on_tool_result(self, frame: ChatToolResult) -> None:
        """chat.tool_result: the tab's answer to a frontend tool call of the run."""
        await services.tab_answer(user=self.user, run_id=frame.run_id, answer=frame)

    # ---- streaming -------------------------------------------------------------------------------

    def _follow(self, run_id: str, after_seq: int) -> None:
        """Follow the run on a task of its own (replacing an earlier follower of it)."""
        old = self.followers.pop(run_id, None)
        if old is not None:
            old.cancel()
        self.followers[run_id] = asyncio.get_running_loop().create_task(self._stream(run_id, after_seq))

    async def _stream(self, run_id: str, after_seq: int) -> None:
        """Send the run's events after `after_seq` (chat.api.follow); a failure says to resume."""
        sent = 0  # counted once per stream, not per event (the resync answer is not one of the run's events)
        try:
            async for seq, data in run_follow(user=self.user, run_id=run_id, after_seq=after_seq):
                await self.send(text_data=data)
                if seq is not None:
                    sent += 1
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("following run %s failed", run_id)
            await self.send(text_data=error_event("internal", "lost the run's event stream; resume it", run_id=run_id).wire())
        finally:
            metrics.WS_EVENTS.inc(sent)
            if self.followers.get(run_id) is asyncio.current_task():
                self.followers.pop(run_id, None)

    async def session_logout(self, message: dict[str, Any]) -> None:
        """The user logged out of this session: close its sockets."""
        await self.close(code=CLOSE_SESSION_ENDED)

    # ---- credentials -----------------------------------------------------------------------------

    async def auth_recheck(self, message: dict[str, Any]) -> None:
        """A token of this user was deleted or the user deactivated (somewhere): check this socket's now."""
        await self._check_credentials()

    async def _check_credentials(self) -> bool:
        """Close the socket (with the code that says why) if its token, session or user was revoked; True if closed."""
        if self.closing:
            return True
        try:
            code = await revocation(user_id=self.user.pk, token=self.token, session_key=self.session_key)
        except Exception:  # the database is away: check again later rather than close a valid socket
            log.warning("could not re-check a socket's credentials", exc_info=log.isEnabledFor(logging.DEBUG))
            return False
        if code is None:
            return False
        await self._close_revoked(code)
        return True

    async def _close_revoked(self, code: int) -> None:
        """Stop following and close with the code that says which credential went."""
        self.closing = True
        log.info("closing a socket of user %s: credentials revoked (%s)", self.user.pk, code)
        for task in self.followers.values():
            task.cancel()
        await self.close(code=code)

    async def _watch_credentials(self) -> None:
        """Re-check the credentials every CHAT_AUTH_RECHECK_INTERVAL, whatever the channel layer delivers."""
        while not await self._check_credentials():
            await asyncio.sleep(chat_settings.CHAT_AUTH_RECHECK_INTERVAL)
