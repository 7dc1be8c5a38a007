"""System checks: tool schemas build and names are unique (duplicates fail at registration)."""
from __future__ import annotations

from typing import Any

from django.core import checks


@checks.register()
def check_tools(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from tools.registry import registry

    errors: list[checks.CheckMessage] = []
    for spec in registry:
        schema = spec.input_schema
        if not isinstance(schema, dict) or schema.get("type") != "object":
            errors.append(checks.Error(f"tool {spec.name!r}: input_schema must be a JSON object schema", id="tools.E001"))
        if not spec.description.strip():
            errors.append(checks.Error(f"tool {spec.name!r} has no description", id="tools.E002"))
    return errors
