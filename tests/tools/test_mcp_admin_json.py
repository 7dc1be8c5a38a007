"""The MCP server form reads its JSON fields as every API transport reads JSON: NaN, Infinity and NUL are form
errors, never a row the database refuses (SQLite's JSON_VALID, PostgreSQL's jsonb) with a 500."""
from __future__ import annotations

import pytest
from django.test import Client

from tools.models import McpServer

pytestmark = pytest.mark.django_db


def form(**fields: str) -> dict[str, str]:
    return {"name": "bad", "enabled": "", "transport": "http", "timeout": "30", "url": "http://203.0.113.9/mcp",
            "command": "", "args": "[]", "cwd": "", "env": "{}", "headers": "{}", **fields}


@pytest.mark.parametrize(("field", "text", "code"), [
    ("args", "[NaN]", "not valid JSON"),
    ("args", "[Infinity]", "not valid JSON"),
    ("args", '["-m", "x\\u0000y"]', "NUL"),
    ("env", '{"TOKEN": "A\\u0000B"}', "NUL"),
    ("headers", '{"X-Key\\u0000": "KEY"}', "NUL"),
    ("headers", '{"X-Key": -Infinity}', "not valid JSON"),
])
def test_a_value_json_cannot_store_is_a_form_error(admin_client: Client, field: str, text: str, code: str) -> None:
    r = admin_client.post("/admin/pagechat_tools/mcpserver/add/", form(**{field: text}))
    assert r.status_code == 200, r.status_code
    errors = r.context["adminform"].form.errors
    assert field in errors and code in " ".join(errors[field]), errors
    assert not McpServer.objects.filter(name="bad").exists()
