"""The closed set of error codes on the wire, the HTTP status of each, and the refusals services raise.

No other module defines a code: frames, HTTP bodies and stored runs all use `ErrorCode`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

ErrorCode = Literal[
    # a frame or request the server could not take
    "bad_json", "bad_frame", "unknown_type", "too_large", "unauthorized", "unsupported_type",
    # refusals of a valid request
    "busy", "not_found", "rate_limited", "action_rejected", "forbidden", "budget_exceeded", "streaming_required",
    # following a run
    "resync",
    # how a run ended, when not with `complete`
    "cancelled", "interrupted", "internal",
    # the model call failed (ProviderError codes)
    "provider_error", "provider_unavailable", "overloaded", "timeout", "bad_request", "auth_error",
]


@dataclass(frozen=True)
class ErrorInfo:
    """What a code means and the HTTP status it answers with."""

    http_status: int
    meaning: str


ERRORS: dict[ErrorCode, ErrorInfo] = {
    "bad_json": ErrorInfo(400, "The frame or body is not valid JSON."),
    "bad_frame": ErrorInfo(400, "The frame is JSON but not a valid frame of its type."),
    "unknown_type": ErrorInfo(400, "The frame's `type` is not a client frame type (or not one this endpoint takes)."),
    "too_large": ErrorInfo(413, "The frame is larger than CHAT_MAX_FRAME_BYTES or the message longer than CHAT_MAX_MESSAGE_CHARS."),
    "unsupported_type": ErrorInfo(415, "An uploaded attachment is not one of the accepted types (PNG, JPEG, WebP, GIF, PDF), judged by its bytes."),
    "unauthorized": ErrorInfo(401, "No valid token or session (or the session's CSRF check failed)."),
    "busy": ErrorInfo(409, "A run is already in progress in this conversation."),
    "not_found": ErrorInfo(404, "No such conversation, run or pending approval for this user (someone else's id looks the same)."),
    "rate_limited": ErrorInfo(429, "A per-user limit (messages in any 60 s, open sockets, runs in progress) or the model's own rate limit."),
    "budget_exceeded": ErrorInfo(429, "The user's daily token or cost budget (CHAT_DAILY_*_BUDGET) is used up until midnight UTC."),
    "action_rejected": ErrorInfo(403, "The server action's token is missing, expired, altered, used or not for this page."),
    "forbidden": ErrorInfo(403, "The user lacks a permission or group this page or server action requires (see docs/permissions.md)."),
    "streaming_required": ErrorInfo(400, "The turn offers frontend tools (`client_tools`), whose calls only a streaming transport "
                                         "(websocket, SSE) can carry: POST /api/chat refuses it."),
    "resync": ErrorInfo(410, "The events asked for are no longer retained: reload the conversation over REST."),
    "cancelled": ErrorInfo(409, "The run was cancelled (only as the body of POST /api/chat; streams send `cancelled`)."),
    "interrupted": ErrorInfo(502, "The server process running the turn stopped; the partial answer was saved."),
    "internal": ErrorInfo(500, "Something went wrong on the server."),
    "provider_error": ErrorInfo(502, "The model call failed."),
    "provider_unavailable": ErrorInfo(502, "The model server is unavailable."),
    "overloaded": ErrorInfo(502, "The model is overloaded."),
    "timeout": ErrorInfo(502, "The model did not answer in time."),
    "bad_request": ErrorInfo(502, "The model server rejected the request."),
    "auth_error": ErrorInfo(502, "The model server refused the credentials."),
}
ERROR_CODES: frozenset[ErrorCode] = frozenset(get_args(ErrorCode))
assert frozenset(ERRORS) == ERROR_CODES, "every code has exactly one HTTP status"


def http_status(code: ErrorCode) -> int:
    """The HTTP status an error with this code answers with."""
    return ERRORS[code].http_status


def error_code(value: str, fallback: ErrorCode = "internal") -> ErrorCode:
    """`value` if it is a code of the closed set (e.g. one stored on a run or raised by a provider), else `fallback`."""
    return value if value in ERROR_CODES else fallback


class ServiceError(Exception):
    """A refusal with a wire `code` and a message safe to show the user; `retry_after`: seconds until trying again can
    succeed, when known (a limit that frees by itself)."""

    code: ErrorCode = "internal"

    def __init__(self, message: str = "", *, code: ErrorCode | None = None, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.message = message or self.__class__.__doc__ or self.code
        self.retry_after = retry_after
        if code:
            self.code = code


class CredentialsRevoked(Exception):
    """A socket's credentials were revoked: close it with `code` (nothing was stored)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class NotFound(ServiceError):
    """Not found."""

    code: ErrorCode = "not_found"


class Busy(ServiceError):
    """A run is already in progress in this conversation."""

    code: ErrorCode = "busy"


class RateLimited(ServiceError):
    """Too many requests; slow down."""

    code: ErrorCode = "rate_limited"


class BudgetExceeded(ServiceError):
    """You have used today's budget for the assistant; it resets at midnight UTC."""

    code: ErrorCode = "budget_exceeded"


class ActionRejected(ServiceError):
    """This action cannot be run."""

    code: ErrorCode = "action_rejected"


class Forbidden(ServiceError):
    """You do not have permission to do this here."""

    code: ErrorCode = "forbidden"


class BadRequest(ServiceError):
    """The request is not valid."""

    code: ErrorCode = "bad_frame"
