"""The chat app's models (label `pagechat`), one module per concept; every model is importable from here."""
from chat.models.conversations import PREFERENCES_MAX_CHARS, Attachment, Conversation, Message, MessageQuerySet, UserPreferences, attachment_path
from chat.models.evals import EvalCase, EvalCaseResult, EvalRun, EvalSet
from chat.models.runs import ACTION_STAT_FIELDS, ActionStat, ClientToolWait, PendingApproval, Quality, Run, ToolCall, UsedActionToken, action_stat_count

__all__ = [
    "ACTION_STAT_FIELDS", "PREFERENCES_MAX_CHARS", "ActionStat", "Attachment", "Conversation", "EvalCase",
    "ClientToolWait", "EvalCaseResult", "EvalRun", "EvalSet", "Message", "MessageQuerySet", "PendingApproval", "Quality", "Run",
    "ToolCall", "UsedActionToken", "UserPreferences", "action_stat_count", "attachment_path",
]
