"""ToolSpec: a typed function the model may call; its schema comes from the signature and docstring."""
from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, create_model

from chat.agent.types import AgentTool, ToolContext


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
        hints = get_type_hints(fn)
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
