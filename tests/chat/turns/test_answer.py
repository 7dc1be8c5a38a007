"""The answer's parts: suggestions validated, buttons the page does not know dropped, server buttons signed."""
from __future__ import annotations

from typing import Any

from chat.turns.action_tokens import action_token_verify
from chat.turns.answer import SERVER_ACTION, answer_parts_build
from chat.turns.planning import TurnPlan
from pages.registry import ClientAction, PageSpec, ServerAction, ServerActionResult
from payloads.stream import Extracted


def _plan() -> TurnPlan:
    def handler(data: dict[str, Any], user: Any, context: dict[str, Any]) -> ServerActionResult:
        return ServerActionResult(message="done")

    page = PageSpec(name="p", client_actions=(ClientAction("open_form", "Open the form."),),
                    server_actions=(ServerAction("archive", "Archive it.", handler),))
    return TurnPlan(system="", messages=[], tools={}, page=page, payload_markers={}, diagnostics={})


def test_suggestions_and_buttons_from_the_model() -> None:
    raw = ('[{"label": "Open", "action": "open_form", "handler": "client"},'
           ' {"label": "Archive", "action": "archive", "handler": "server", "data": {"id": 3}, "style": "danger"},'
           ' {"label": "Hack", "action": "rm_rf", "handler": "server"}]')
    extracted = [Extracted("SUGGESTED_VALUES:", '["yes", {"label": "No", "value": "no"}]'), Extracted("SUGGESTED_ACTIONS:", raw)]
    parts = answer_parts_build(plan=_plan(), extracted=extracted, tool_payloads=[{"type": "t", "data": {"n": 1}}],
                               action=None, user_id=7, conversation_id=9)
    assert parts.suggested_values == [{"label": "yes", "value": "yes"}, {"label": "No", "value": "no"}]
    assert [a["action"] for a in parts.suggested_actions] == ["open_form", "archive"]
    archive = parts.suggested_actions[1]
    assert "style" not in archive  # a made-up style is dropped, not the button
    action_token_verify(archive["token"], user_id=7, conversation_id=9, action="archive", data={"id": 3}, max_age=60)
    assert [e["error"] for e in parts.parse_errors] == ["unknown server action 'rm_rf'"]
    assert parts.custom_payload is not None and parts.custom_payload["type"] == "t"


def test_a_server_actions_own_parts_are_checked_like_the_models() -> None:
    result = ServerActionResult(message="ok", suggested_values=["again", {"label": ""}],
                                suggested_actions=[{"label": "Open", "action": "open_form", "handler": "client"}],
                                payload={"type": "receipt", "data": {"ok": True}})
    parts = answer_parts_build(plan=_plan(), extracted=[], tool_payloads=[], action=result, user_id=1, conversation_id=2)
    assert parts.suggested_values == [{"label": "again", "value": "again"}]
    assert parts.suggested_actions == [{"label": "Open", "action": "open_form", "handler": "client"}]
    assert [e["marker"] for e in parts.parse_errors] == [SERVER_ACTION]
    assert parts.payloads[0]["source"] == "action" and parts.custom_payload is not None
