"""System checks for tools: schemas build from usable annotations, descriptions exist, names are unique, permissions exist."""
from __future__ import annotations

from typing import Any

from django.core import checks

from chat.infra.registration import duplicate_errors

PERMISSION_HINT = ('Write Django permission strings as "app_label.codename", e.g. "pagechat_demo.change_researchstream" '
                   "(the model's add/change/delete/view permissions or one of its Meta.permissions).")


def tool_problems(tools: Any) -> list[checks.CheckMessage]:
    """Problems of the given tool registry (tests pass their own instance)."""
    from tools.access import known_permissions, unknown_permissions

    known = known_permissions()
    errors: list[checks.CheckMessage] = []
    for spec in tools:
        where = f"tool {spec.name!r} ({tools.origin(spec.name) or spec.module})"
        for perm in unknown_permissions(spec.permissions, known):
            errors.append(checks.Error(f"{where}: permission {perm!r} names no existing permission", hint=PERMISSION_HINT, id="tools.E005"))
        for problem in spec.problems:
            errors.append(checks.Error(f"{where}: {problem}", hint="Annotate every parameter with a JSON-describable type "
                                       "(str, int, float, bool, Literal[...], list[...], a pydantic model).", id="tools.E004"))
        schema = spec.input_schema
        if not isinstance(schema, dict) or schema.get("type") != "object":
            errors.append(checks.Error(f"{where}: input_schema must be a JSON object schema", id="tools.E001"))
        if not spec.description.strip():
            errors.append(checks.Error(f"{where} has no description", hint="Give the function a docstring.", id="tools.E002"))
    errors += duplicate_errors(tools, "tool", hint="Tool names are global: rename one of them.", id="tools.E003")
    return errors


@checks.register()
def check_tools(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from tools.registry import registry

    return tool_problems(registry)


def web_tool_problems() -> list[checks.CheckMessage]:
    """The web tools' settings: the search backend imports and is callable, the allowed networks (fetch, MCP) parse."""
    from django.utils.module_loading import import_string

    from chat.conf import chat_settings
    from tools.addresses import network_problems

    errors: list[checks.CheckMessage] = []
    path = chat_settings.CHAT_WEB_SEARCH_BACKEND
    if path:
        try:
            backend = import_string(path)
        except ImportError as exc:
            errors.append(checks.Error(f"CHAT_WEB_SEARCH_BACKEND {path!r} does not import: {exc}", id="tools.E005"))
        else:
            if not callable(backend):
                errors.append(checks.Error(f"CHAT_WEB_SEARCH_BACKEND {path!r} is not callable", hint="Point it at a function "
                                           "(query, limit, ctx) -> tools.builtin.web.WebSearchResults, or a class.", id="tools.E005"))
    for name in ("CHAT_FETCH_ALLOWED_NETWORKS", "CHAT_MCP_ALLOWED_NETWORKS"):
        for part in network_problems(getattr(chat_settings, name)):
            errors.append(checks.Error(f"{name}: {part!r} is not a network",
                                       hint="Comma-separated CIDR networks, e.g. 10.1.0.0/16,192.168.5.7/32.", id="tools.E006"))
    return errors


@checks.register()
def check_web_tools(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    return web_tool_problems()


def mcp_server_problems(servers: Any) -> list[checks.CheckMessage]:
    """Mistakes in enabled MCP server rows: nothing to start or reach, a command not found, a header or variable
    that names no environment variable or one this process lacks (its tools' calls would fail)."""
    import os
    import shutil

    from tools.mcp_client import env_template_names, env_template_problem

    errors: list[checks.CheckMessage] = []
    for server in servers:
        where = f"MCP server {server.name!r}"
        if server.transport == "stdio":
            if not server.command:
                errors.append(checks.Error(f"{where} has no command", hint="Set the program that starts it, or use streamable HTTP.", id="tools.E010"))
            elif shutil.which(server.command) is None and not os.path.isfile(server.command):
                errors.append(checks.Error(f"{where}: command {server.command!r} is not found", hint="Give its path, or put it on PATH.", id="tools.E010"))
        elif not str(server.url).startswith(("http://", "https://")):
            errors.append(checks.Error(f"{where} has no http(s) URL", hint="Set its streamable HTTP endpoint, e.g. https://host/mcp.", id="tools.E010"))
        for field in ("headers", "env"):
            for key, ref in dict(getattr(server, field) or {}).items():
                problem = env_template_problem(ref)
                if problem:
                    errors.append(checks.Error(f"{where}: {field} {key!r} {problem}", id="tools.E011"))
                    continue
                missing = [name for name in env_template_names(ref) if name not in os.environ]
                if missing:
                    errors.append(checks.Warning(f"{where}: {field} {key!r} needs environment variable {', '.join(missing)}, which is not set",
                                                 hint="Set it in the environment of every server process.", id="tools.W010"))
    return errors


@checks.register(checks.Tags.database)
def check_mcp_servers(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Runs with the database checks (`manage.py check --database default`, `migrate`)."""
    from django.db import DatabaseError

    from tools.models import McpServer

    if not databases:
        return []
    try:
        return mcp_server_problems(list(McpServer.objects.filter(enabled=True)))
    except DatabaseError:  # not migrated yet
        return []
