"""The HTTP API described as OpenAPI 3.1 (drf-spectacular): the schema and Swagger UI views, and `described`.

DRF views are described by drf-spectacular itself (serializers, `@extend_schema`). Plain async Django views
(SSE, run control) are not DRF views; `@described(...)` gives one a stand-in DRF class that drf-spectacular
reads (methods, authentication, `@extend_schema` arguments), while requests still go to the plain view.
Request and response bodies may be pydantic models (chat.events): drf-spectacular's pydantic extension turns
them into components. `manage.py chat_api_schema` writes docs/api/openapi.yaml from the same generator.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse, extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from pydantic.json_schema import models_json_schema
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.parsers import JSONParser
from rest_framework.permissions import IsAdminUser, IsAuthenticated
from rest_framework.views import APIView

from chat.events import SERVER_EVENTS, ChatSend, FrameError
from chat.events.errors import ERRORS, ErrorCode

V = TypeVar("V", bound=Callable[..., Any])

# Every endpoint's authentication: a DRF token (programs) or the signed-in session (browsers, CSRF-checked).
AUTHENTICATION = [TokenAuthentication, SessionAuthentication]

# Refusals any authenticated endpoint may answer with, before its own.
COMMON_ERRORS: tuple[ErrorCode, ...] = ("unauthorized",)


def _errors_description() -> str:
    rows = "\n".join(f"| `{code}` | {info.http_status} | {info.meaning} |" for code, info in ERRORS.items())
    return (
        "Every error body is a protocol v1 frame-level error, `{\"type\":\"error\",\"code\":...,\"message\":...}` "
        "(schema `FrameError`), whose `code` is one of a closed set, each with its HTTP status:\n\n"
        "| code | HTTP status | meaning |\n|---|---|---|\n" + rows
    )


SPECTACULAR_SETTINGS: dict[str, Any] = {
    "TITLE": "pagechat API",
    "DESCRIPTION": (
        "The REST and SSE endpoints of pagechat (protocol v1). Paths are relative to where the host project "
        "mounts `chat.urls` (`/api/` in the demo). The websocket and the SSE event streams are described in "
        "AsyncAPI 3 (docs/protocol/asyncapi.yaml) and every event's JSON Schema is docs/protocol/events.schema.json.\n\n"
        "Authentication: `Authorization: Token <key>` (programs) or the session cookie (browsers; unsafe methods "
        "then need the CSRF token in `X-CSRFToken`).\n\n" + _errors_description()
    ),
    "VERSION": "1",
    "OAS_VERSION": "3.1.0",
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI's files from the drf-spectacular-sidecar package: nothing is loaded from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "PREPROCESSING_HOOKS": ["chat.api.openapi.exclude_self"],
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "chat.api.openapi.add_event_schemas"],
}


def error_responses(*codes: ErrorCode) -> dict[int, OpenApiResponse]:
    """OpenAPI responses for these error codes (plus `unauthorized`), grouped by HTTP status, each a FrameError body."""
    by_status: dict[int, list[ErrorCode]] = {}
    for code in dict.fromkeys((*COMMON_ERRORS, *codes)):
        by_status.setdefault(ERRORS[code].http_status, []).append(code)
    return {
        status: OpenApiResponse(
            response=FrameError,
            description="An error frame; `code`: " + ", ".join(f"`{c}` ({ERRORS[c].meaning.rstrip('.')})" for c in group),
        )
        for status, group in sorted(by_status.items())
    }


def operation(**schema: Any) -> Callable[[V], V]:
    """`extend_schema` for a DRF view method, on drf-spectacular's AutoSchema whatever the host's DEFAULT_SCHEMA_CLASS."""
    def decorate(method: V) -> V:
        kwargs = getattr(method, "kwargs", None)
        if kwargs is None:
            kwargs = {}
            method.kwargs = kwargs  # type: ignore[attr-defined]
        kwargs.setdefault("schema", AutoSchema)
        return extend_schema(**schema)(method)

    return decorate


def described_actions(**actions: dict[str, Any]) -> Callable[[type[Any]], type[Any]]:
    """Describe a viewset's actions (`list={...extend_schema arguments}`, ...) without touching the mixins they come from."""
    def decorate(cls: type[Any]) -> type[Any]:
        from drf_spectacular.drainage import isolate_view_method

        for name, schema in actions.items():
            operation(**schema)(isolate_view_method(cls, name))
        cls.schema = AutoSchema()
        return cls

    return decorate


# One SSE event as schemathesis and OpenAPI 3.1 readers see it: `data` is JSON text holding a server event.
SSE_EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "id": {"type": "string", "description": "`<run_id>:<seq>`: send it back as `Last-Event-ID` to resume after it"},
        "event": {"type": "string"},
        "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": {"$ref": "#/components/schemas/ServerEvent"}},
    },
}


def add_event_schemas(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Postprocessing hook: every server event model as a component, and `ServerEvent`, their union (SSE `data:`)."""
    refs, top = models_json_schema([(m, "serialization") for m in SERVER_EVENTS], ref_template="#/components/schemas/{model}")
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in top.get("$defs", {}).items():
        schemas.setdefault(name, schema)
    # the body of POST chat and chat/stream: ChatSend, whose `type` may be left out there
    body = ChatSend.model_json_schema(ref_template="#/components/schemas/{model}", mode="validation")
    for name, schema in body.pop("$defs", {}).items():
        schemas.setdefault(name, schema)
    body["required"] = [f for f in body.get("required", []) if f != "type"]
    body["title"] = "ChatSendBody"
    schemas["ChatSendBody"] = body
    schemas["ServerEvent"] = {"oneOf": [refs[(m, "serialization")] for m in SERVER_EVENTS],
                              "description": "A server event of protocol v1 (docs/protocol/events.schema.json)."}
    return result


# DRF's own error bodies (the conversations endpoints are DRF views; docs/protocol.md says so).
class DrfError(serializers.Serializer):
    """DRF's own refusal body."""

    detail = serializers.CharField()


def drf_error_responses(*statuses: int) -> dict[int, OpenApiResponse]:
    """OpenAPI responses of a DRF view's own refusals: `{"detail": ...}`, and field errors for 400."""
    detail = DrfError
    out: dict[int, OpenApiResponse] = {
        401: OpenApiResponse(detail, description="No valid token or session (DRF's `{\"detail\": ...}`)."),
    }
    for status in statuses:
        if status == 400:
            out[400] = OpenApiResponse(
                {"type": "object", "additionalProperties": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}},
                description="DRF's field errors `{\"<field>\": [\"<message>\", ...]}`, or, for a body JSON cannot hold (not JSON, NaN "
                            "or Infinity, a NUL character, too deep), the v1 error "
                            "`{\"type\": \"error\", \"code\": \"bad_json\" | \"bad_frame\", \"message\": ...}`.")
        else:
            out[status] = OpenApiResponse(detail, description="DRF's `{\"detail\": ...}`" + (" (not the user's, or no such id)" if status == 404 else ""))
    return dict(sorted(out.items()))


CHAT_SEND_BODY: dict[str, Any] = {"$ref": "#/components/schemas/ChatSendBody"}


def described(*, methods: Iterable[str], authenticated: bool = True, **schema: Any) -> Callable[[V], V]:
    """Put a plain Django view into the OpenAPI document: `schema` are `extend_schema`'s arguments for each method.

    Apply it outermost (above `require_POST`, `csrf_exempt`...): it only adds attributes drf-spectacular reads.
    """
    def decorate(view: V) -> V:
        def handler(self: APIView, request: Any, *args: Any, **kwargs: Any) -> None:  # never called: documentation only
            raise NotImplementedError

        handler.__doc__ = view.__doc__
        attrs: dict[str, Any] = {m.lower(): operation(**schema)(handler) for m in methods}
        attrs.update(
            schema=AutoSchema(),
            parser_classes=[JSONParser],
            authentication_classes=AUTHENTICATION if authenticated else [],
            permission_classes=[IsAuthenticated] if authenticated else [],
            __doc__=view.__doc__,
            __module__=view.__module__,
        )
        view.cls = type(f"{view.__name__}_described", (APIView,), attrs)  # type: ignore[attr-defined]
        view.initkwargs = {}  # type: ignore[attr-defined]
        return view

    return decorate


def exclude_self(endpoints: list[tuple[str, str, str, Any]]) -> list[tuple[str, str, str, Any]]:
    """Preprocessing hook: the schema and docs views are not part of the described API."""
    return [e for e in endpoints if not getattr(getattr(e[3], "cls", None), "not_in_schema", False)]


class SchemaView(SpectacularAPIView):
    """GET <api>/schema/: the OpenAPI 3.1 document (YAML, or JSON with `?format=json`), for any signed-in user or token."""

    not_in_schema = True
    schema = None  # not an endpoint of the document (also for drf-spectacular's `check --deploy` generation)
    custom_settings = SPECTACULAR_SETTINGS
    authentication_classes = AUTHENTICATION
    permission_classes = [IsAuthenticated]

    def get(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        # describe the API where this very URLconf mounts it
        self.urlconf = getattr(request, "urlconf", None)
        return super().get(request, *args, **kwargs)


class DocsView(SpectacularSwaggerSplitView):
    """GET <api>/docs/: Swagger UI over the schema, for staff (its "try it out" acts with the viewer's own session)."""

    not_in_schema = True
    schema = None  # not an endpoint of the document (also for drf-spectacular's `check --deploy` generation)
    url_name = "pagechat:schema"
    title = "pagechat API"
    authentication_classes = [SessionAuthentication]
    permission_classes = [IsAdminUser]

    def get(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        from drf_spectacular.settings import patched_settings

        with patched_settings(SPECTACULAR_SETTINGS):  # Swagger UI's files from the sidecar (the view ignores custom_settings)
            return super().get(request, *args, **kwargs)


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of the project's URLconf (what `manage.py chat_api_schema` writes)."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.settings import patched_settings

    with patched_settings(SPECTACULAR_SETTINGS):
        generator = SchemaGenerator()
        return generator.get_schema(request=None, public=True)
