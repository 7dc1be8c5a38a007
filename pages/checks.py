"""System checks: pages name registered tools, payload types and handlers with the right signatures; page names
are unique; every `{% chat_tray page="..." %}` names a registered page; permission strings name existing permissions
(pages.E009); no app relies on the old discovery names."""
from __future__ import annotations

import importlib.util
import inspect
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from django.core import checks

from chat.infra.registration import duplicate_errors

# `{% chat_tray ... page="name" ... %}` with a literal name (a variable cannot be checked before rendering).
TRAY_TAG = re.compile(r"""\{%\s*chat_tray\b[^%]*?\bpage\s*=\s*(["'])([^"'%]*)\1""")
OLD_DISCOVERY_MODULES = ("chat_pages", "chat_payloads")


def _signature_problem(fn: Callable[..., Any], arity: int) -> str | None:
    """Why `fn` cannot be called synchronously with `arity` positional arguments, or None."""
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        return "is async; it must be a plain function (it runs in a worker thread)"
    try:
        inspect.signature(fn).bind(*([None] * arity))
    except TypeError as exc:
        return f"cannot take {arity} positional arguments ({exc})"
    except ValueError:  # no signature to inspect (some builtins): nothing to say
        return None
    return None


def page_problems(pages: Any, tools: Any, payloads: Any) -> list[checks.CheckMessage]:
    """Problems of the given registries (tests pass their own instances)."""
    from tools.access import known_permissions, unknown_permissions
    from tools.checks import PERMISSION_HINT

    known = known_permissions()
    errors: list[checks.CheckMessage] = []
    for page in pages:
        for perm in unknown_permissions(page.permissions, known):
            errors.append(checks.Error(f"page {page.name!r}: permission {perm!r} names no existing permission",
                                       hint=PERMISSION_HINT, id="pages.E009", obj=page.name))
        for action in page.server_actions:
            for perm in unknown_permissions(action.permissions, known):
                errors.append(checks.Error(f"page {page.name!r}: server action {action.action!r}: permission {perm!r} names no existing permission",
                                           hint=PERMISSION_HINT, id="pages.E009", obj=page.name))
        scopes = [(page.name, page.tools, page.payloads)]
        for tab in page.tabs.values():
            scopes.append((f"{page.name}/{tab.name}", tab.tools, tab.payloads))
            scopes += [(f"{page.name}/{tab.name}/{sub.name}", sub.tools, sub.payloads) for sub in tab.subtabs.values()]
        for where, tool_names, payload_types in scopes:
            for name in tool_names:
                if name not in tools:
                    errors.append(checks.Error(f"page {where!r} names tool {name!r}, which is not registered", id="pages.E001", obj=page.name))
            for ptype in payload_types:
                if ptype not in payloads:
                    errors.append(checks.Error(f"page {where!r} names payload type {ptype!r}, which is not registered", id="pages.E002", obj=page.name))
        for action in page.server_actions:
            if not callable(action.handler):
                errors.append(checks.Error(f"page {page.name!r}: server action {action.action!r} has no callable handler", id="pages.E003"))
            elif (problem := _signature_problem(action.handler, 3)) is not None:
                errors.append(checks.Error(
                    f"page {page.name!r}: server action {action.action!r} handler {problem}",
                    hint="Write it as handler(data, user, context) -> ServerActionResult.", id="pages.E007"))
        seen: set[str] = set()
        for action in (*page.client_actions, *page.server_actions):
            if action.action in seen:
                errors.append(checks.Error(f"page {page.name!r}: action {action.action!r} is declared twice", id="pages.E004"))
            seen.add(action.action)
        builder = page.context_builder
        if builder is not None:
            problem = "is not callable" if not callable(builder) else _signature_problem(builder, 2)
            if problem is not None:
                errors.append(checks.Error(
                    f"page {page.name!r} ({pages.origin(page.name)}): context_builder {problem}",
                    hint="Write it as context_builder(context: dict, user) -> str.", id="pages.E006"))
    errors += duplicate_errors(pages, "page", hint="Page names are global: rename one of them.", id="pages.E005")
    return errors


def template_dirs() -> list[Path]:
    """Every directory the Django template engines load from (DIRS, and app `templates/` dirs with APP_DIRS)."""
    from django.template import engines
    from django.template.backends.django import DjangoTemplates

    dirs: list[Path] = []
    for engine in engines.all():
        if isinstance(engine, DjangoTemplates):
            dirs += [Path(d) for d in engine.engine.dirs]
            if engine.engine.app_dirs:
                from django.template.utils import get_app_template_dirs

                dirs += [Path(d) for d in get_app_template_dirs("templates")]
    return list(dict.fromkeys(dirs))


def tray_tags(dirs: list[Path]) -> Iterator[tuple[Path, int, str]]:
    """(file, line, page name) of each `{% chat_tray page="..." %}` with a literal page name."""
    for root in dirs:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.suffix not in (".html", ".txt", ".htm", ".xml", ""):
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if "chat_tray" not in text:
                continue
            for m in TRAY_TAG.finditer(text):
                yield path, text.count("\n", 0, m.start()) + 1, m.group(2)


def tray_tag_problems(pages: Any, dirs: list[Path]) -> list[checks.CheckMessage]:
    """Tray tags naming a page that is not registered (it would silently get the default page's tools)."""
    return [
        checks.Error(f"{path}:{line}: {{% chat_tray page={name!r} %}} names a page that is not registered",
                     hint="Register it with pages.registry.register_page(PageSpec(name=...)) in an app's assistant.py.",
                     id="pages.E008")
        for path, line, name in tray_tags(dirs) if name not in pages
    ]


def old_discovery_problems(app_configs: Any) -> list[checks.CheckMessage]:
    """Apps that still have a module under a discovery name that is no longer imported."""
    warnings: list[checks.CheckMessage] = []
    for app in app_configs:
        for old in OLD_DISCOVERY_MODULES:
            try:
                found = importlib.util.find_spec(f"{app.name}.{old}") is not None
            except (ImportError, ValueError):
                found = False
            if found:
                warnings.append(checks.Warning(
                    f"app {app.label!r} has a module {app.name}.{old}, which pagechat no longer imports",
                    hint=f"Move its tools, payload types and pages into {app.name}.assistant.", id="pages.W001"))
    return warnings


@checks.register()
def check_pages(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from django.apps import apps

    from pages.registry import registry as pages
    from payloads.registry import registry as payloads
    from tools.registry import registry as tools

    return [
        *page_problems(pages, tools, payloads),
        *tray_tag_problems(pages, template_dirs()),
        *old_discovery_problems(apps.get_app_configs()),
    ]
