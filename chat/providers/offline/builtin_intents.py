"""The built-in intents, registered in this order (a tie goes to the earlier one): the order is part of the policy.
The handlers live with their concept (tools, proposals, the page); docs/offline-model.md has the table."""
from __future__ import annotations

from chat.providers.offline import page_intents, payload_intents, tool_intents
from chat.providers.offline.registry import Handler, Matcher, intents

BUILT_IN: tuple[tuple[str, Matcher, Handler], ...] = (
    ("tool_results", tool_intents.match_tool_results, tool_intents.after_tools),
    ("troubleshoot", page_intents.match_troubleshoot, page_intents.troubleshoot),
    ("field_answer", payload_intents.match_field_answer, payload_intents.field_answer),
    ("type_it", payload_intents.match_type_it, payload_intents.type_it),
    ("refine_field", payload_intents.match_refine, payload_intents.refine_field),
    ("extend_list", payload_intents.match_extend, payload_intents.extend_list),
    ("offer_action", payload_intents.match_offer_action, payload_intents.offer_action),
    ("area_answer", payload_intents.match_area_answer, payload_intents.area_answer),
    ("propose", payload_intents.match_propose, payload_intents.propose),
    ("clarify", payload_intents.match_clarify, payload_intents.clarify),
    ("use_tool", tool_intents.match_tool, tool_intents.use_tool),
    ("answer_from_page", page_intents.match_answer, page_intents.answer_from_page),
    ("free_text", page_intents.match_free_text, page_intents.free_text),
    ("thanks", page_intents.match_thanks, page_intents.thanks),
    ("help", page_intents.match_help, page_intents.help_),
)

for _name, _match, _handle in BUILT_IN:
    intents.register(_name, _match)(_handle)
