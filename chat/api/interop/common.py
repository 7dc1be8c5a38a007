"""What both translations share: reading a run's v1 events, its stored assistant message id, the tool-marker text,
and the files a client sends inside its message."""
from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile

from chat import selectors, services
from chat.api.follow import run_follow
from chat.events import ChatSend
from chat.events.errors import BadRequest, NotFound
from chat.turns.clients import TurnExtras
from chat.userdata.attachments import attachments_count_check

TOOL_MARKER = re.compile(r"\n*\[\[tool:\d+\]\]\n*")  # where the tray renders a tool card: meaningless to other clients


async def run_events(*, user: Any, run_id: str) -> AsyncIterator[dict[str, Any]]:
    """The run's v1 events from seq 1 to its terminal one (or the stored terminal event / a resync error)."""
    async for _seq, data in run_follow(user=user, run_id=run_id, after_seq=0):
        yield json.loads(data)


async def assistant_message_id(run_id: str) -> str:
    """The id of the run's stored assistant message (stored with the run at admission), as a string."""
    pk = await selectors.run_assistant_message_id(run_id=run_id)
    return str(pk) if pk is not None else f"run-{run_id}"


def client_message_id(value: str) -> str:
    """A client's message id as a v1 client_message_id (1-64 chars): longer ids are hashed, stably."""
    return value if 0 < len(value) <= 64 else hashlib.sha256(value.encode()).hexdigest()


def strip_markers(text: str) -> str:
    """The text without the tray's `[[tool:N]]` markers (a marker is always emitted whole, inside one delta)."""
    return TOOL_MARKER.sub("\n\n", text) if "[[tool:" in text else text


@dataclass(frozen=True)
class InlineFile:
    """A file a client sent inside its message, to be stored as the user's attachment (and judged as an upload is)."""

    name: str
    media_type: str
    data: bytes


_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+)?((?:;[\w.+-]+=[^;,]*)*);base64,", re.I)


def base64_decode(value: str, *, what: str) -> bytes:
    """Strict base64 (no stray characters); anything else is `bad_frame` naming `what`."""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise BadRequest(f"{what}: not valid base64 data") from None


def data_url_decode(url: str, *, what: str) -> tuple[str, bytes]:
    """The media type and bytes of a base64 `data:` URL; any other URL is `bad_frame` (the server fetches nothing)."""
    m = _DATA_URL.match(url)
    if m is None:
        raise BadRequest(f"{what}: only a file's own data is accepted (a base64 data: URL); URLs are not fetched")
    return m.group(1) or "application/octet-stream", base64_decode(url[m.end():], what=what)


async def turn_start_with_files(*, user: Any, files: Sequence[InlineFile],
                                build: Callable[[list[str] | None], tuple[ChatSend, TurnExtras]]) -> services.TurnStarted:
    """Store the new message's files as the user's attachments (refused as an upload would be: type judged by the
    bytes, size, count), then start the turn `build(ids)` describes. Files no turn took (a refusal, or a resend that
    found its earlier run) are removed: a client's retries never pile up unsent uploads."""
    attachments_count_check(len(files))  # before any is stored
    ids = await sync_to_async(_files_store)(user, files) if files else None
    try:
        frame, extras = build(ids)
        started = await services.turn_start(user=user, frame=frame, extras=extras)
    except Exception:
        await sync_to_async(_files_discard)(user, ids or [])
        raise
    if not started.created:
        await sync_to_async(_files_discard)(user, ids or [])
    return started


def _files_store(user: Any, files: Sequence[InlineFile]) -> list[str]:
    """Store the files as the user's uploads, all or none; their ids."""
    ids: list[str] = []
    try:
        for f in files:
            ids.append(str(services.attachment_upload(user=user, upload=SimpleUploadedFile(f.name, f.data, content_type=f.media_type)).pk))
    except Exception:
        _files_discard(user, ids)  # a refused file: none of the request's files stay behind
        raise
    return ids


def _files_discard(user: Any, ids: Sequence[str]) -> None:
    """Remove those of `ids` still unsent (a sent one belongs to its message now)."""
    for attachment_id in ids:
        with contextlib.suppress(NotFound):
            services.attachment_discard(user=user, attachment_id=attachment_id)
