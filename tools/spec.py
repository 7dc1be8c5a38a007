"""ToolSpec: a typed function the model may call; its schema comes from the signature and docstring."""
from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, get_type_hints

from django.utils.functional import Promise
from django.utils.translation import gettext
from pydantic import BaseModel, ConfigDict, create_model

from chat.agent.types import AgentTool, ToolContext
from chat.infra.registration import title_from_name, title_shown

# What an approval shows of a call's input when the tool does not describe it: at most this many fields, each value
# cut to this many characters (a model may pass anything)
APPROVAL_FIELDS_MAX = 20
APPROVAL_VALUE_MAX_CHARS = 500
APPROVAL_SUMMARY_MAX_CHARS = 500
# (tool input, ToolContext) -> a sentence asking for the user's approval ("Rename 'A' to 'B'?"), or None
Describe = Callable[[dict[str, Any], ToolContext], str | Promise | None]


@dataclass(frozen=True)
class ToolSpec:
    """A registered tool. `executor(input: dict, ctx: ToolContext)` may be sync, async or a generator."""

    name: str
    description: str
    input_schema: dict[str, Any]
    executor: Callable[..., Any]
    is_global: bool = False
    requires_approval: bool = False
    streaming: bool = False
    side_effects: bool = False
    # The tool changes data (creates, updates, deletes, sends): it always asks the user's approval first, since a
    # model can be talked into calling it by text on a page or in a tool result (prompt injection).
    changes_data: bool = False
    module: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)
    problems: tuple[str, ...] = ()  # why the schema did not build (reported by checks; never offered to the model)
    # Django permission strings ("app_label.codename"), all required: a user without them never sees the tool
    permissions: Sequence[str] = ()
    # The MCP server the tool comes from (tools/mcp.py): the server's group restriction applies to it too
    mcp_server: str = ""
    # What people read for the tool (status lines, cards, approvals, the model's words): "Search articles". A lazy
    # translation (gettext_lazy) is translated where it is shown; "" derives it from the name (`display_title`).
    title: str | Promise = ""
    # Says in words what a call pending approval will do, read from its input and the database as the user (ctx.user):
    # a translated sentence, or None for the labelled list of the input's fields (`approval_words`)
    describe: Describe | None = None

    def __post_init__(self) -> None:
        # `permissions=[...]` reads naturally at the decorator; store it as a tuple so the spec stays hashable
        object.__setattr__(self, "permissions", tuple(self.permissions))
        if self.changes_data and not self.requires_approval:  # a data-changing tool always asks first
            object.__setattr__(self, "requires_approval", True)

    def as_agent_tool(self, *, description: str | None = None, requires_approval: bool | None = None) -> AgentTool:
        """The loop's view of this tool, with staff overrides applied."""
        return AgentTool(
            name=self.name,
            description=description or self.description,
            input_schema=self.input_schema,
            executor=self.executor,
            # staff may add an approval, never remove the one a data-changing tool has
            requires_approval=self.requires_approval if requires_approval is None else (requires_approval or self.changes_data),
        )

    def with_(self, **changes: Any) -> ToolSpec:
        return replace(self, **changes)

    def display_title(self) -> str:
        """The title in the active language: the tool's own, else derived from its name ("search_articles" -> "Search articles")."""
        return title_shown(self.title, self.name)

    def approval_words(self, tool_input: dict[str, Any], ctx: ToolContext) -> tuple[str | None, list[dict[str, str]]]:
        """What an approval shows of this call: the tool's sentence (`describe`, None without one or when it fails or
        says nothing) and the input as labelled fields (always: a client may show them under the sentence)."""
        return describe_call(self.describe, tool_input, ctx, self.name), approval_fields(self.input_schema, tool_input)


def describe_call(describe: Describe | None, tool_input: dict[str, Any], ctx: ToolContext, name: str = "") -> str | None:
    """The `describe` hook's sentence for a call, one line and bounded; None when there is none. The hook is page code
    reading the database: a failure is logged and the approval shows the fields instead."""
    if describe is None:
        return None
    try:
        said = describe(tool_input, ctx)
    except Exception:
        logging.getLogger(__name__).exception("tool %s: describe failed; the approval shows its fields", name)
        return None
    text = " ".join(str(said or "").split())
    return _clip(text, APPROVAL_SUMMARY_MAX_CHARS) or None


def approval_fields(schema: dict[str, Any], tool_input: dict[str, Any]) -> list[dict[str, str]]:
    """The input as `{label, value}` rows, in the schema's order: the label is the property's own title (a schema's
    derived "Stream Id" reads as "Stream id"), the value plain text (lists joined, objects as "Label: value"), never JSON."""
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    keys = [k for k in props if k in tool_input] + [k for k in tool_input if k not in props]
    rows = []
    for key in keys[:APPROVAL_FIELDS_MAX]:
        prop = props.get(key)
        rows.append({"label": field_label(key, prop if isinstance(prop, dict) else {}),
                     "value": _clip(plain_text(tool_input[key]), APPROVAL_VALUE_MAX_CHARS)})
    return rows


def input_labels(schema: dict[str, Any]) -> dict[str, str]:
    """Each property of an input schema -> its label in the active language (`field_label`), in the schema's order: what
    a client labels a call's input with when its server sent no fields (the tray's tool cards)."""
    props = schema.get("properties")
    if not isinstance(props, dict):
        return {}
    return {key: field_label(key, prop if isinstance(prop, dict) else {}) for key, prop in list(props.items())[:APPROVAL_FIELDS_MAX]}


def field_label(key: str, prop: dict[str, Any]) -> str:
    """A property's label, translated when the catalogs know it: its schema title when someone wrote one (mark it with
    gettext_noop: `Field(title=gettext_noop("Stream"))`), else derived from its key. Pydantic's automatic title ("New
    Name" for `new_name`) counts as none."""
    title = prop.get("title")
    if isinstance(title, str) and title.strip() and title != key.replace("_", " ").title():
        return gettext(title.strip())
    return title_shown("", key) or key


def plain_text(value: Any) -> str:
    """A value of a tool's input as a person reads it: text as it is, yes/no, numbers, lists joined by commas,
    objects as "Label: value" pairs; no JSON punctuation."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return gettext("yes") if value else gettext("no")
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list | tuple):
        return ", ".join(plain_text(v) for v in value[:APPROVAL_FIELDS_MAX])
    if isinstance(value, dict):
        return "; ".join(f"{title_from_name(str(k)) or k}: {plain_text(v)}" for k, v in list(value.items())[:APPROVAL_FIELDS_MAX])
    return str(value)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def spec_from_function(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    **options: Any,
) -> ToolSpec:
    """Build a ToolSpec from a typed function; a parameter named `ctx` receives the ToolContext.

    Mistakes (no docstring, a parameter without a usable annotation) do not raise: the spec carries them and
    the system checks report them (tools.E002, tools.E004)."""
    doc = inspect.getdoc(fn) or ""
    desc = description or doc.strip()
    sig = inspect.signature(fn)
    wants_ctx = "ctx" in sig.parameters
    problems: tuple[str, ...] = ()
    validate: Callable[[Any], BaseModel] | None = None
    if input_schema is None:
        model, problems = _input_model(fn, sig)
        if model is None:
            input_schema = {"type": "object", "properties": {}}
        else:
            input_schema = model.model_json_schema()
            input_schema.pop("title", None)
            validate = model.model_validate
    executor = _executor(fn, validate, wants_ctx)
    streaming = inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn)
    return ToolSpec(
        name=name or fn.__name__, description=desc, input_schema=input_schema, executor=executor,
        streaming=options.pop("streaming", streaming), module=fn.__module__, problems=problems, **options,
    )


def _input_model(fn: Callable[..., Any], sig: inspect.Signature) -> tuple[type[BaseModel] | None, tuple[str, ...]]:
    """The pydantic model of the parameters, or None and why not (one message per unusable parameter)."""
    try:
        hints = get_type_hints(fn, include_extras=True)  # Annotated[..., Field(title=...)] reaches the schema
    except Exception as exc:  # an unresolvable forward reference: report it, do not fail the import
        return None, (f"type hints do not resolve: {exc}",)
    fields: dict[str, Any] = {}
    problems: list[str] = []
    for pname, param in sig.parameters.items():
        if pname == "ctx" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if pname not in hints:
            problems.append(f"parameter {pname!r} has no type annotation (the model needs one to call the tool)")
            continue
        fields[pname] = (hints[pname], ... if param.default is inspect.Parameter.empty else param.default)
    if problems:
        return None, tuple(problems)
    try:
        model = create_model(f"{fn.__name__}_input", __config__=ConfigDict(extra="forbid"), **fields)
        model.model_json_schema()
        return model, ()
    except Exception:  # pydantic cannot describe some type as JSON: name the parameter(s)
        pass
    for pname, (annotation, default) in fields.items():
        try:
            create_model("probe", **{pname: (annotation, default)}).model_json_schema()  # type: ignore[call-overload]
        except Exception as exc:
            problems.append(f"parameter {pname!r}: annotation {annotation!r} has no JSON schema ({type(exc).__name__})")
    return None, tuple(problems or ["the parameters do not make a JSON schema"])


def _executor(fn: Callable[..., Any], validate: Callable[[Any], BaseModel] | None, wants_ctx: bool) -> Callable[..., Any]:
    """Wrap `fn` into the loop's executor shape, keeping it sync/async/generator as it was."""

    def kwargs(tool_input: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        kw = dict(validate(tool_input)) if validate else dict(tool_input)
        if wants_ctx:
            kw["ctx"] = ctx
        return kw

    if inspect.isasyncgenfunction(fn):
        async def agen(tool_input: dict[str, Any], ctx: ToolContext) -> Any:
            async for item in fn(**kwargs(tool_input, ctx)):
                yield item
        return agen
    if inspect.iscoroutinefunction(fn):
        async def coro(tool_input: dict[str, Any], ctx: ToolContext) -> Any:
            return await fn(**kwargs(tool_input, ctx))
        return coro

    def sync(tool_input: dict[str, Any], ctx: ToolContext) -> Any:
        return fn(**kwargs(tool_input, ctx))
    return sync
