"""Every HTTP transport's refusals in one place: exceptions mapped to the chat error envelope (a frame-level error)."""
from __future__ import annotations

from typing import ClassVar, cast

from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated, ParseError
from rest_framework.views import APIView

from chat.api.bodies import RefusedJSON
from chat.conf import chat_settings
from chat.events import FrameError, error_event
from chat.events.errors import ErrorCode, ServiceError, http_status


def error_response(error: FrameError) -> HttpResponse:
    """Every HTTP error body is a frame-level error (chat.events), with its code's HTTP status (and Retry-After when
    the refusal says when to try again)."""
    response = HttpResponse(error.wire(), status=http_status(error.code), content_type="application/json")
    if error.retry_after is not None:
        response["Retry-After"] = str(error.retry_after)
    return response


def error(code: ErrorCode, message: str) -> HttpResponse:
    """An error frame with this code and message, as an HTTP answer."""
    return error_response(error_event(code, message))


def refused(exc: ServiceError) -> HttpResponse:
    """A service's refusal as an HTTP error."""
    return error_response(error_event(exc.code, exc.message, retry_after=exc.retry_after))


def exception_response(exc: Exception, view: APIView | None = None, *, frames: bool = True) -> HttpResponse:
    """The answer to `exc` raised in a view: with `frames`, refusals of services and of DRF's authentication are error
    frames; bodies that could not be read are error frames too (not DRF's `{detail}` or Django's HTML 400); anything
    else is DRF's own answer in a DRF `view`, and raised again in a plain one."""
    if frames and isinstance(exc, ServiceError):
        return refused(exc)
    if frames and isinstance(exc, (NotAuthenticated, AuthenticationFailed)):
        return error("unauthorized", str(exc.detail))
    if isinstance(exc, RequestDataTooBig):
        return error("too_large", f"body is larger than {chat_settings.CHAT_MAX_FRAME_BYTES} bytes")
    if isinstance(exc, RefusedJSON):
        return error_response(exc.error)
    if isinstance(exc, ParseError):
        return error("bad_json", "body is not valid JSON")
    if view is None:
        raise exc
    response: HttpResponse = APIView.handle_exception(view, exc)
    return response


class ErrorMapped:
    """DRF views: `handle_exception` is `exception_response`; `error_frames` False keeps DRF's documented `{detail}`
    answers for refused authentication (the REST resources), True answers like every chat endpoint."""

    error_frames: ClassVar[bool] = False

    def handle_exception(self, exc: Exception) -> HttpResponse:
        """DRF's hook: see exception_response."""
        return exception_response(exc, cast(APIView, self), frames=self.error_frames)
