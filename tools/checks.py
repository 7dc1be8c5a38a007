"""System checks for tools: schemas build from usable annotations, descriptions exist, names are unique."""
from __future__ import annotations

from typing import Any

from django.core import checks


def tool_problems(tools: Any) -> list[checks.CheckMessage]:
    """Problems of the given tool registry (tests pass their own instance)."""
    errors: list[checks.CheckMessage] = []
    for spec in tools:
        where = f"tool {spec.name!r} ({tools.origin(spec.name) or spec.module})"
        for problem in spec.problems:
            errors.append(checks.Error(f"{where}: {problem}", hint="Annotate every parameter with a JSON-describable type "
                                       "(str, int, float, bool, Literal[...], list[...], a pydantic model).", id="tools.E004"))
        schema = spec.input_schema
        if not isinstance(schema, dict) or schema.get("type") != "object":
            errors.append(checks.Error(f"{where}: input_schema must be a JSON object schema", id="tools.E001"))
        if not spec.description.strip():
            errors.append(checks.Error(f"{where} has no description", hint="Give the function a docstring.", id="tools.E002"))
    for dup in tools.duplicates:
        errors.append(checks.Error(
            f"tool {dup.name!r} is registered twice: in {dup.first} and in {dup.second} (the second is ignored)",
            hint="Tool names are global: rename one of them.", id="tools.E003",
        ))
    return errors


@checks.register()
def check_tools(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from tools.registry import registry

    return tool_problems(registry)
