"""System checks for payload types: each builds and is well formed (payloads.E001); types and markers are unique
(E002, E003) and no marker is one reserved for the built-in suggestions (E004)."""
from __future__ import annotations

from typing import Any

from django.core import checks

from chat.infra.registration import duplicate_errors

HINT = "Payload types and markers are global: rename one."


def payload_problems(registry: Any) -> list[checks.CheckMessage]:
    """Problems of the given payload registry (tests pass their own instance)."""
    errors: list[checks.CheckMessage] = [checks.Error(problem, id="payloads.E001") for problem in registry.check()]
    errors += duplicate_errors(registry, "payload type", hint=HINT, id="payloads.E002")
    for dup in registry.duplicates:
        if dup.kind == "marker":
            msg, cid = f"marker {dup.name!r} is used twice: in {dup.first} and in {dup.second}", "payloads.E003"
        elif dup.kind == "reserved":
            msg, cid = f"marker {dup.name!r} (in {dup.second}) is reserved for the built-in suggestions", "payloads.E004"
        else:
            continue
        errors.append(checks.Error(msg + " (the second is ignored)", hint=HINT, id=cid))
    return errors


@checks.register()
def check_payloads(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from payloads.registry import registry

    return payload_problems(registry)
