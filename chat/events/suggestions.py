"""Quick replies and buttons: their wire models, the markers a model writes them after, and the one lenient reading of
what a model or a page's action handler wrote (the wire models themselves stay strict)."""
from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field

from chat.events.base import Frame, omit_none

SUGGESTED_VALUES_MARKER = "SUGGESTED_VALUES:"
SUGGESTED_ACTIONS_MARKER = "SUGGESTED_ACTIONS:"
# Reserved: no payload type may take them, and they alone also have a line format (`a, b, c`; `label|action|...`).
SUGGESTION_MARKERS = frozenset({SUGGESTED_VALUES_MARKER, SUGGESTED_ACTIONS_MARKER})

Style = Literal["primary", "secondary", "warning"]
STYLES: tuple[str, ...] = get_args(Style)


class SuggestedValue(Frame):
    """A quick reply: clicking it sends `value` with interaction_type `value_selected`."""

    label: str = Field(min_length=1)
    value: str = Field(min_length=1)


class SuggestedAction(Frame):
    """A button: a client action the tray runs, or a server action sent back with its signed `token`."""

    label: str = Field(min_length=1)
    action: str = Field(min_length=1)
    handler: Literal["client", "server"]
    data: Any = Field(default=None, exclude_if=omit_none)
    style: Style | None = Field(default=None, exclude_if=omit_none)
    token: str | None = Field(default=None, exclude_if=omit_none)


def suggested_value_read(item: Any) -> SuggestedValue:
    """A quick reply as written: a bare string is its own label and value, a missing value is the label, other keys
    are ignored. Raises pydantic's ValidationError when no valid quick reply is left."""
    if isinstance(item, str):
        item = {"label": item, "value": item}
    elif isinstance(item, dict):
        item = {key: item[key] for key in ("label", "value") if key in item}
        if "value" not in item and isinstance(item.get("label"), str):
            item["value"] = item["label"]
    return SuggestedValue.model_validate(item)


def suggested_action_read(item: Any) -> SuggestedAction:
    """A button as written: other keys are ignored, a `token` too (only the server signs one), and a made-up style
    ("danger") is dropped, since it is cosmetic and should not cost the user the button. Raises ValidationError."""
    if isinstance(item, dict):
        item = {key: item[key] for key in ("label", "action", "handler", "data", "style") if key in item}
        if item.get("style") not in STYLES:
            item.pop("style", None)
    return SuggestedAction.model_validate(item)
