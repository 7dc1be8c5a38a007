"""A turn's tool calls as its run shows and records them: their start, progress, approval and result events, the
call's row, the sources its searches found, and the approval the loop waits for."""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from chat.agent.types import AgentToolApproval, AgentToolComplete, AgentToolProgress, AgentToolStart, ToolContext
from chat.events import ToolApprovalEvent, ToolCompleteEvent, ToolProgressEvent, ToolStartEvent, changes_clean
from chat.infra.db_threads import RUNS
from chat.models import ToolCall
from chat.runs import RunHandle
from chat.turns import persistence
from chat.turns.approvals import approval_words
from chat.turns.observer import TurnObserver
from chat.turns.persistence import TurnRecord
from chat.turns.planning import tool_title
from chat.turns.pool import run_sync
from chat.turns.saving import StreamSaver


class TurnToolCalls:
    """The tool-call half of a Turn (chat.turns.work), which holds the state these handlers read and write."""

    handle: RunHandle
    record: TurnRecord
    observer: TurnObserver
    saver: StreamSaver
    tool_calls: list[ToolCall]
    sources: list[dict[str, Any]]
    tool_titles: dict[str, str]
    tool_context: ToolContext | None

    if TYPE_CHECKING:  # the Turn's
        def before_event(self) -> None: ...
        def state_changed(self) -> None: ...

    def on_tool_start(self, ev: AgentToolStart) -> None:
        self.observer.tool_started(tool_use_id=ev.tool_use_id, name=ev.name, arguments=ev.input)
        self.before_event()
        self.handle.append(ToolStartEvent.wire, tool=ev.name, input=ev.input, tool_use_id=ev.tool_use_id, title=self.tool_title(ev.name))

    def on_tool_progress(self, ev: AgentToolProgress) -> None:
        u = ev.update
        self.before_event()
        self.handle.append(ToolProgressEvent.wire, tool=ev.name, stage=u.stage, message=u.message, progress=u.progress, data=u.data)

    async def on_tool_approval(self, ev: AgentToolApproval) -> None:
        self.handle.approvals[ev.tool_use_id] = asyncio.get_running_loop().create_future()
        await RUNS.run(persistence.approval_record)(
            run_id=self.record.run_id, tool_use_id=ev.tool_use_id, tool_name=ev.name, tool_input=ev.input)
        # what the person judges: the tool's sentence (it reads the database as this user, as tool code does) and fields
        summary, fields = await run_sync(approval_words, ev.name, ev.input, self.tool_context)
        self.before_event()
        self.handle.append(ToolApprovalEvent.wire, tool=ev.name, input=ev.input, tool_use_id=ev.tool_use_id,
                           title=self.tool_title(ev.name), summary=summary, fields=fields)

    def tool_title(self, name: str) -> str:
        """What people read for the tool `name`: its title in the turn's language, from the turn's plan."""
        return self.tool_titles.get(name) or tool_title(name)

    def on_tool_complete(self, ev: AgentToolComplete) -> None:
        r = ev.result
        self.tool_calls.append(ToolCall(
            run_id=self.record.run_id, index=ev.index, tool_use_id=ev.tool_use_id, name=ev.name, input=ev.input,
            output=r.text[:50_000], status=ToolCall.Status.ERROR if r.is_error else ToolCall.Status.OK,
            duration_ms=ev.duration_ms, error=r.text[:2000] if r.is_error else "",
        ))
        # the next model call, which reads the result, starts here
        self.observer.tool_ended(tool_use_id=ev.tool_use_id, name=ev.name, is_error=r.is_error, duration_ms=ev.duration_ms, result=r.text)
        self.before_event()
        known = {s["n"] for s in self.sources}
        self.sources += [{**s, "tool_use_id": ev.tool_use_id} for s in r.sources if s.get("n") not in known]
        self.handle.append(ToolCompleteEvent.wire, tool=ev.name, index=ev.index, changes=changes_clean(r.changes))
        self.state_changed()

    async def before_tool(self, tool_use_id: str, name: str, tool_input: dict[str, Any], index: int) -> None:
        """Record the call as started (and the tool_use in the saved history) before it runs: after a crash it is
        reported interrupted and no resume, resend or next message runs it again."""
        self.record.tools_started = True  # before the write: a crash between the two must still close the call
        await RUNS.run(persistence.tool_call_started)(
            run_id=self.record.run_id, index=index, tool_use_id=tool_use_id, name=name, tool_input=tool_input)
        await self.saver.flush_now()

    async def approve(self, tool_use_id: str, name: str, tool_input: dict[str, Any]) -> bool:
        fut = self.handle.approvals.get(tool_use_id)
        return bool(await fut) if fut is not None else False
