"""A turn's frontend tool calls: the sending tab runs them while the run waits (`client_tool_call`, answered by
`chat.tool_result`), and the page's shared state they and server tools change (`state` events)."""
from __future__ import annotations

import asyncio
import copy
import functools
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import jsonpatch

from chat.agent.types import AgentTool, ToolContext, ToolResult
from chat.conf import chat_settings
from chat.events import ClientToolCallEvent, StateEvent
from chat.infra.db_threads import RUNS
from chat.runs import RunHandle
from chat.turns import persistence
from chat.turns.persistence import TurnRecord
from payloads.registry import registry as payload_registry

# what the model reads when the tab gave no answer (the tab's own errors come as it wrote them)
NO_ANSWER = "Error: the page did not answer within {seconds:g} seconds."
PAGE_LEFT = "the page was left before the tool finished"


def tab_payload(payload: Any) -> tuple[dict[str, Any] | None, str]:
    """A tab's card as a tool's payload: `{type, data}` of a payload type the site registered, its data valid for that
    type (the browser's answer is untrusted); else None and why."""
    if payload is None:
        return None, ""
    kind = payload.get("type") if isinstance(payload, dict) else None
    spec = payload_registry.get(kind) if isinstance(kind, str) else None
    if spec is None:
        return None, "not a payload type of this site"
    try:
        data = spec.validator().validate(payload.get("data"))
    except Exception as exc:  # pydantic's and jsonschema's errors alike
        return None, f"its data is not a valid {kind} ({str(exc)[:120]})"
    return {"type": kind, "data": data}, ""


class TurnTabTools:
    """The frontend-tool half of a Turn (chat.turns.work), which holds the state these read and write."""

    handle: RunHandle
    record: TurnRecord
    tool_context: ToolContext | None
    sent_state: dict[str, Any]

    if TYPE_CHECKING:  # the Turn's
        def before_event(self) -> None: ...
        def tool_title(self, name: str) -> str: ...

    def tab_tools_bind(self, tools: dict[str, AgentTool]) -> dict[str, AgentTool]:
        """The plan's tools with each frontend tool's executor asking the sending tab."""
        return {name: replace(t, executor=functools.partial(self.tab_call, name)) if t.in_tab else t for name, t in tools.items()}

    async def tab_call(self, name: str, tool_input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Ask the tab that sent the turn to run `name`; its answer, or an error the model reads when none comes in time."""
        tool_use_id, tab_id = ctx.tool_use_id, self.record.tab_id or ""
        timeout = chat_settings.CHAT_CLIENT_TOOL_TIMEOUT
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.handle.tab_answers[tool_use_id] = fut
        try:
            await RUNS.run(persistence.tab_wait_record)(run_id=self.record.run_id, tool_use_id=tool_use_id, tool_name=name, tab_id=tab_id)
            self.before_event()
            self.handle.append(ClientToolCallEvent.wire, tool=name, input=tool_input, tool_use_id=tool_use_id, tab_id=tab_id,
                               timeout_ms=round(timeout * 1000), title=self.tool_title(name))
            try:
                answer = await asyncio.wait_for(asyncio.shield(fut), timeout)
            except TimeoutError:  # closed in the database first: an answer arriving now is refused, or it stands
                answer = await RUNS.run(persistence.tab_wait_close)(
                    run_id=self.record.run_id, tool_use_id=tool_use_id, result={"output": NO_ANSWER.format(seconds=timeout), "is_error": True})
        finally:
            self.handle.tab_answers.pop(tool_use_id, None)
        if isinstance(answer.get("state"), dict):  # the turn's one state object, shared by every call's context
            ctx.state.clear()
            ctx.state.update(answer["state"])
        output = str(answer.get("output") or "")
        is_error = bool(answer.get("is_error"))
        if is_error and not output.startswith("Error:"):
            output = f"Error: {output or 'the tool failed'}"
        payload, refused = tab_payload(answer.get("payload")) if not is_error else (None, "")
        if refused:  # the model is told, so it does not speak of a card the person will not see
            output += f"\n(The card it returned was left out: {refused}.)"
        return ToolResult(output, is_error=is_error, payload=payload)

    def state_changed(self) -> None:
        """Tell the page its shared state changed (a tool changed `ToolContext.state`): the new state and the patch."""
        ctx = self.tool_context
        if ctx is None or ctx.state == self.sent_state:
            return
        delta = jsonpatch.make_patch(self.sent_state, ctx.state).patch
        self.sent_state = copy.deepcopy(ctx.state)  # not shared: a later edit inside a nested value is a change too
        self.before_event()
        self.handle.append(StateEvent.wire, state=self.sent_state, delta=delta)
