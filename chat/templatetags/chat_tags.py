"""`{% chat_tray page="reports" context=some_dict %}`: the tray's mount point, config and assets; `{% chat_tray_head %}`: its
style sheet and open state in `<head>`, so a page with the tray open paints docked from the start."""
from __future__ import annotations

import functools
import posixpath
import re
from typing import Any
from urllib.parse import urljoin

from django import template
from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.contrib.staticfiles import finders
from django.contrib.staticfiles.storage import staticfiles_storage
from django.http import HttpRequest
from django.middleware.csp import get_nonce
from django.middleware.csrf import get_token
from django.template.base import FilterExpression, Parser, Token, token_kwargs
from django.template.context import Context
from django.templatetags.static import static
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.module_loading import import_string
from django.utils.translation import get_language

from chat.conf import chat_settings
from chat.models import PREFERENCES_MAX_CHARS
from chat.userdata.attachments import ACCEPTED_TYPES
from pages.access import Access, access_for, user_page_denied
from pages.registry import DEFAULT_PAGE, registry as page_registry
from pages.starters import page_starters
from tools.access import tools_filter
from tools.registry import registry as tool_registry
from tools.spec import input_labels

register = template.Library()

TRAY_TEMPLATE = "chat/tray.html"
TRAY_MODULE = "chat/tray.js"
# A static import or re-export at the start of a line: `import "./x.js"`, `import {a,\n b} from "../y.js"`,
# `export {c} from "./z.js"` (never a dynamic import(), which loads later and only when needed).
_STATIC_IMPORT = re.compile(r"""^(?:import\s*|(?:import|export)\s[^;'"]*?\sfrom\s*)["'](\.{1,2}/[^"']+)["']""", re.M)


@functools.cache
def tray_modules() -> tuple[str, ...]:
    """The static paths of every module tray.js imports, directly or through others, in the order they are found."""
    found: list[str] = []
    queue = [TRAY_MODULE]
    while queue:
        path = queue.pop(0)
        source = finders.find(path)
        if not isinstance(source, str):
            continue
        with open(source, encoding="utf-8") as f:
            text = f.read()
        for relative in _STATIC_IMPORT.findall(text):
            target = posixpath.normpath(posixpath.join(posixpath.dirname(path), relative))
            if target not in found and target != TRAY_MODULE:
                found.append(target)
                queue.append(target)
    return tuple(found)


def tray_preloads() -> list[str]:
    """The URLs the browser will request for the tray's modules, for `<link rel="modulepreload">`: without them it
    learns of each level of imports only after the one before has arrived, a network round trip per level."""
    if getattr(staticfiles_storage, "support_js_module_import_aggregation", False):
        return [static(path) for path in tray_modules()]  # the manifest rewrites the imports to its hashed names
    # Otherwise the imports stay as written, relative to tray.js's own URL (a hashed tray.js included).
    entry = static(TRAY_MODULE)
    return [urljoin(entry, posixpath.relpath(path, posixpath.dirname(TRAY_MODULE))) for path in tray_modules()]


def provider_is_offline() -> bool:
    """True when the configured provider says it is the offline stand-in (the UI shows a note)."""
    try:
        provider = import_string(chat_settings.CHAT_PROVIDER)
    except ImportError:
        return False
    return bool(getattr(provider, "is_offline", False))


def provider_label() -> str:
    """The configured provider's badge text for the tray header ("Offline model"), "" for none."""
    try:
        provider = import_string(chat_settings.CHAT_PROVIDER)
    except ImportError:
        return ""
    return str(getattr(provider, "label", "") or "")


def tool_fields(access: Access) -> dict[str, dict[str, str]]:
    """The labels of the inputs of every tool this user may use: tool name -> {key: label}, in the active language.
    A tool card shows its call's input with them (as an approval does); every tool, not only this page's, because a
    conversation follows the person across pages and its earlier cards were made by other pages' tools."""
    tools = [tool for name in tool_registry.names() if (tool := tool_registry.get(name)) is not None and not tool.problems]
    allowed = tools_filter(access, tools).allowed if tools else []
    return {tool.name: labels for tool in allowed if (labels := input_labels(tool.input_schema))}


def tray_config(request: HttpRequest | None, user: AbstractBaseUser | AnonymousUser, page: str, page_context: dict[str, Any] | None) -> dict[str, Any]:
    """The JSON the tray boots from; `context` is what the page wants sent with every message."""
    language = get_language() or settings.LANGUAGE_CODE  # the page's language: the tray speaks it
    spec = page_registry.get(page) if page in page_registry else DEFAULT_PAGE
    access = access_for(user)
    context = {**(page_context or {}), "current_page": page}
    return {
        "page": page,
        # what people read for the page, and for the pages the conversation list names; "" for an unregistered page
        "page_title": spec.display_title() if page in page_registry else "",
        "page_titles": {p.name: p.display_title() for p in page_registry},
        # the welcome's first questions, as buttons that send them (pages.starters)
        "starters": page_starters(spec, context, access),
        # what a tool card labels its call's input with (tool name -> {key: label}): fields, never JSON; none on an
        # unregistered page (its cards name the keys in words, and its tray renders without a database query)
        "tool_fields": tool_fields(access) if page in page_registry else {},
        "language": language,
        # Django's JavaScript catalog of the tray's strings in that language, under the host's mount
        "i18n_url": f"{reverse('pagechat:jsi18n')}?{urlencode({'lang': language})}",
        "context": context,
        "ws_url": reverse("pagechat:websocket"),
        "api_base": reverse("pagechat:root"),
        "is_staff": bool(getattr(user, "is_staff", False)),
        "offline": provider_is_offline(),
        "provider_label": provider_label(),
        "max_message_chars": chat_settings.CHAT_MAX_MESSAGE_CHARS,  # the composer's counter stops longer ones
        "max_preference_chars": PREFERENCES_MAX_CHARS,  # the preferences form's limit, the API's
        # the tray refuses what the server would (before uploading); the server judges the bytes again
        "attachments": {"max_bytes": chat_settings.CHAT_MAX_ATTACHMENT_BYTES, "max_count": chat_settings.CHAT_MAX_ATTACHMENTS_PER_MESSAGE,
                        "types": list(ACCEPTED_TYPES)},
        "user": getattr(user, "get_username", lambda: "")(),
        "csrf_token": get_token(request) if request is not None else "",
    }


class ChatTrayNode(template.Node):
    def __init__(self, kwargs: dict[str, FilterExpression]) -> None:
        self.kwargs = kwargs

    def render(self, context: Context) -> str:
        values = {name: expr.resolve(context) for name, expr in self.kwargs.items()}
        request = context.get("request")
        page = str(values.get("page") or "")
        if page and page not in page_registry:  # literal names are a system check (pages.E008); variables are logged here
            page_registry.note_unknown(page)
        user = tray_user(context, page)
        if user is None:
            return ""
        page_context = values.get("context")
        if page_context is not None and not isinstance(page_context, dict):
            raise template.TemplateSyntaxError("chat_tray: context= must be a dict")
        assert context.template is not None  # rendering binds it
        tray = context.template.engine.get_template(TRAY_TEMPLATE)
        return tray.render(
            context.new({"config": tray_config(request, user, page, page_context), "csp_nonce": csp_nonce(context, request),
                         "module_preloads": tray_preloads(), "styles_in_head": getattr(request, HEAD_MARK, False)})
        )


def tray_user(context: Context, page: str) -> Any:
    """The signed-in user the tray is for on `page`, or None when it shows nothing there."""
    request = context.get("request")
    user = context.get("user") or getattr(request, "user", None)
    # A websocket without a session is refused, so an anonymous visitor gets no tray.
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    if user_page_denied(user, page_registry.get(page)) is not None:  # its turns would be refused: no tray at all
        return None
    return user


# Runs in <head>, before the first paint (a classic script there blocks until it has run): it sets
# `data-chat-tray-open` on <html> when the tab's stored state (store.js, STORAGE_KEY) opens the tray on this page, so
# the page's CSS makes room at once instead of painting full width and moving aside when the tray's module has run.
OPEN_STATE_SCRIPT = "chat/tray-head.js"
HEAD_MARK = "_pagechat_tray_head"  # on the request: the head tag has linked the style sheet already


@register.simple_tag(takes_context=True)
def chat_tray_head(context: Context, page: str = "") -> str:
    """`{% chat_tray_head page=... %}` in `<head>`: the tray's style sheet and the open state before the first paint.

    Renders nothing where `{% chat_tray %}` shows no tray (anonymous, or the page denied to the user).
    """
    request = context.get("request")
    if tray_user(context, str(page or "")) is None:
        return ""
    if request is not None:
        setattr(request, HEAD_MARK, True)
    nonce = csp_nonce(context, request)
    return format_html('<link rel="stylesheet" href="{}">\n<script src="{}"{}></script>', static("chat/tray.css"),
                       static(OPEN_STATE_SCRIPT), format_html(' nonce="{}"', nonce) if nonce else "")


def csp_nonce(context: Context, request: Any) -> str:
    """The request's CSP nonce as a string, or "" on a site without Django's CSP middleware.

    From the context processor when the host has it, else from the middleware's request
    attribute. Django's LazyNonce is falsy until first read, so it is tested against None
    and read here: the script tag needs it whether or not the page used it before.
    """
    nonce = context.get("csp_nonce")
    if nonce is None and request is not None:
        nonce = get_nonce(request)
    return "" if nonce is None else str(nonce)


@register.tag("chat_tray")
def chat_tray(parser: Parser, token: Token) -> ChatTrayNode:
    """Parse `{% chat_tray page=... context=... %}`.

    A hand-written tag because simple/inclusion tags with takes_context reserve the name
    `context`, which is exactly the keyword this tag needs.
    """
    bits = token.split_contents()[1:]
    kwargs = token_kwargs(bits, parser, support_legacy=False)
    if bits:
        raise template.TemplateSyntaxError(f"chat_tray takes only keyword arguments, got {bits!r}")
    unknown = set(kwargs) - {"page", "context"}
    if unknown:
        raise template.TemplateSyntaxError(f"chat_tray: unknown argument(s) {sorted(unknown)}")
    if "page" not in kwargs:
        raise template.TemplateSyntaxError('chat_tray needs page="..."')
    return ChatTrayNode(kwargs)
