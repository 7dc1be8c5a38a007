"""Protocol v1 as code: one model per client frame and per server event, and the builders every frame comes from.

Every frame the server sends, on any transport, is made here:
- a run's events by `<Event>.wire(envelope, seq, ...)` (base.py: the envelope; server.py: the events;
  `text_delta` by a pre-encoded fast path that tests prove equal to the model's own JSON);
- quick replies and buttons, their markers and the lenient reading of what a model wrote, in suggestions.py;
- the `complete` event and its payload in complete.py: `complete_payload_build` is the one builder of the
  payload, for live turns, stored runs and the body of POST /api/chat alike;
- every error, a run's terminal one and every frame-level refusal or HTTP error body, by `error_event` (server.py).
Client frames are read by `parse_frame` (client.py). `manage.py chat_protocol_schema` publishes the models as
docs/protocol/*.schema.json (schema.py). No Django here.
"""
from chat.events.base import TERMINAL_TYPES, Envelope, Frame, RunEvent
from chat.events.client import (
    CLIENT_FRAME_TYPES,
    CLIENT_FRAMES,
    MAX_NESTING,
    ActionMetadata,
    ChatApprove,
    ChatCancel,
    ChatResume,
    ChatSend,
    ChatToolResult,
    ClientFrame,
    ClientToolSpec,
    HistoryItem,
    InteractionType,
    ToolResultBody,
    client_frame_adapter,
    parse_frame,
)
from chat.events.complete import ActionResult, Change, CompleteEvent, CompletePayload, CustomPayload, TokenUsage, ToolUse, changes_clean, complete_payload_build
from chat.events.schema import SCHEMA_DIALECT, protocol_schemas
from chat.events.server import (
    RUN_EVENTS,
    SERVER_EVENTS,
    ApprovalField,
    CancelledEvent,
    ClientToolCallEvent,
    ErrorEvent,
    FrameError,
    StateEvent,
    StatusEvent,
    TextDeltaEvent,
    ToolApprovalEvent,
    ToolCompleteEvent,
    ToolProgressEvent,
    ToolStartEvent,
    error_event,
)
from chat.events.suggestions import (
    SUGGESTED_ACTIONS_MARKER,
    SUGGESTED_VALUES_MARKER,
    SUGGESTION_MARKERS,
    SuggestedAction,
    SuggestedValue,
    suggested_action_read,
    suggested_value_read,
)

__all__ = [
    "CLIENT_FRAMES", "CLIENT_FRAME_TYPES", "MAX_NESTING", "RUN_EVENTS", "SCHEMA_DIALECT", "SERVER_EVENTS", "TERMINAL_TYPES",
    "SUGGESTED_ACTIONS_MARKER", "SUGGESTED_VALUES_MARKER", "SUGGESTION_MARKERS", "suggested_action_read", "suggested_value_read",
    "ActionMetadata", "ApprovalField", "CancelledEvent", "ChatApprove", "ChatCancel", "ChatResume", "ChatSend", "ChatToolResult", "ClientFrame",
    "ClientToolCallEvent", "ClientToolSpec", "StateEvent", "ToolResultBody",
    "CompleteEvent", "CompletePayload", "CustomPayload", "Envelope", "ErrorEvent", "Frame", "FrameError", "HistoryItem",
    "InteractionType", "RunEvent", "StatusEvent", "SuggestedAction", "SuggestedValue", "TextDeltaEvent", "TokenUsage",
    "ToolApprovalEvent", "ToolCompleteEvent", "ToolProgressEvent", "ToolStartEvent", "ToolUse", "client_frame_adapter",
    "ActionResult", "Change", "changes_clean", "complete_payload_build", "error_event", "parse_frame", "protocol_schemas",
]
