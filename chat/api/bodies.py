"""Request bodies read as every transport reads them (`client_json`): size limits, strict JSON, `chat.send` frames."""
from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from chat.conf import chat_settings
from chat.events import ChatSend, FrameError, error_event, parse_frame
from chat.events.client import ClientJSONError, client_json


def body(request: HttpRequest) -> bytes | FrameError:
    """The request's body, or `too_large` past Django's DATA_UPLOAD_MAX_MEMORY_SIZE or CHAT_MAX_FRAME_BYTES
    (instead of Django's HTML 400 page)."""
    limit = chat_settings.CHAT_MAX_FRAME_BYTES
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > limit:  # refused before reading it
        return error_event("too_large", f"body is larger than {limit} bytes")
    try:
        raw = request.body
    except RequestDataTooBig:
        return error_event("too_large", f"body is larger than {limit} bytes")
    if len(raw) > limit:
        return error_event("too_large", f"body is larger than {limit} bytes")
    return raw


def send_frame(raw: bytes | FrameError) -> ChatSend | FrameError:
    """A body as a `chat.send` frame (its `type` may be left out), or the error that refuses it."""
    if isinstance(raw, FrameError):
        return raw
    try:
        data = client_json(raw or b"{}", chat_settings.CHAT_MAX_FRAME_BYTES, what="body")
    except ClientJSONError as exc:
        return exc.error
    if not isinstance(data, dict):
        return error_event("bad_frame", "body must be a JSON object")
    data.setdefault("type", "chat.send")
    frame = parse_frame(json.dumps(data), chat_settings.CHAT_MAX_FRAME_BYTES)
    if not isinstance(frame, (ChatSend, FrameError)):
        return error_event("unknown_type", "this endpoint takes chat.send")
    return frame


class RefusedJSON(ParseError):
    """A body `client_json` refused; `error` answers it (bad_json, bad_frame), as on every other transport."""

    def __init__(self, error: FrameError) -> None:
        super().__init__(error.message)
        self.error = error


class StrictJSONParser(JSONParser):
    """DRF's JSON parser reading bodies as every transport does (`client_json`: no NaN/Infinity, NUL or lone
    surrogates, depth and CHAT_MAX_FRAME_BYTES), where DRF's own takes NaN and hands NUL to the database."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        data = stream.read(chat_settings.CHAT_MAX_FRAME_BYTES + 1) if stream is not None else b""  # one byte over is too_large
        try:
            return client_json(data, chat_settings.CHAT_MAX_FRAME_BYTES, what="body") if data else {}
        except ClientJSONError as exc:
            raise RefusedJSON(exc.error) from None
