"""What the registries of pages, tools and payload types share: where a registration came from, and the record of
a second registration under a taken name (kept out of the registry, reported by a system check)."""
from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Duplicate:
    """A second registration under a taken name, from `second`; the one from `first` stays registered."""

    name: str
    first: str
    second: str


def caller_origin(registry_file: str) -> str:
    """`file:line` of the first caller outside `registry_file` (a registry module's `__file__`): the registration site."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename in (registry_file, __file__):
        frame = frame.f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"
