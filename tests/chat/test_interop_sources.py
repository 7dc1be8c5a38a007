"""Citations on the standard-client endpoints (issue 40): the AI SDK stream's `source-url` parts and AG-UI's
`pagechat.sources` custom event carry what the turn's searches found, and never another user's objects."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from tests.chat.test_agui import post as agui_post, run_input
from tests.chat.test_aisdk import body as aisdk_body, post as aisdk_post
from tests.chat.test_http import TokenClient, auth_headers
from tests.tools.test_sources import SECRET, two_users

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["two_users"]  # the fixture: demo and alice, each with a CRISPR delivery stream (alice's says SECRET)

ROOT = Path(__file__).resolve().parents[2]
# the AI SDK's own chunk schema (the pinned `ai` package; its transport parses every chunk with it)
VALIDATE = """
import { uiMessageChunkSchema } from "ai";
const chunks = JSON.parse(process.argv[1]);
for (const chunk of chunks) {
  const result = await uiMessageChunkSchema().validate(chunk);
  if (!result.success) { console.error(JSON.stringify(chunk), String(result.error)); process.exit(1); }
}
"""
REPORTS = {"page": "reports", "context": {"current_page": "reports"}}


@pytest.fixture
def articles(corpus: int) -> int:
    """The corpus, indexed: the fixture loads it with bulk_create (no signals) after a flush left the index stale."""
    call_command("chat_sources_rebuild", "articles")
    return corpus


def _parts(out: list[Any], kind: str) -> list[dict[str, Any]]:
    return [c for c in out if isinstance(c, dict) and c["type"] == kind]


async def test_ai_sdk_stream_has_a_source_url_part_per_cited_article(two_users: tuple[Any, Any], articles: int) -> None:
    demo, _ = two_users
    client = TokenClient(await auth_headers(demo))
    r, out = await aisdk_post(client, aisdk_body("src-1", "What do the articles say about CRISPR delivery?", **REPORTS))
    assert r.status_code == 200
    sources = _parts(out, "data-pagechat-complete")[0]["data"]["sources"]
    parts = _parts(out, "source-url")
    assert sources and [p["sourceId"] for p in parts] == [str(s["n"]) for s in sources]
    assert all(p["url"] == f"http://testserver{s['url']}" and p["url"].startswith("http://testserver/articles/") and p["title"] == s["title"]
               for p, s in zip(parts, sources))
    assert set(parts[0]) == {"type", "sourceId", "url", "title"}
    text = "".join(c["delta"] for c in _parts(out, "text-delta"))
    assert "[1]" in text and "[[source:" not in text
    types = [c["type"] if isinstance(c, dict) else c for c in out]
    assert types.index("source-url") < types.index("finish")


async def test_ag_ui_run_has_a_sources_event_before_the_complete_one(two_users: tuple[Any, Any], articles: int) -> None:
    demo, _ = two_users
    client = TokenClient(await auth_headers(demo))
    body = run_input("src-t1", [{"id": "u1", "role": "user", "content": "What do the articles say about CRISPR delivery?"}],
                     forwardedProps=REPORTS)
    status, events, _ = await agui_post(client, body)
    assert status == 200
    custom = [(e["name"], e["value"]) for e in events if e["type"] == "CUSTOM"]
    names = [name for name, _ in custom]
    assert names[-2:] == ["pagechat.sources", "pagechat.complete"]
    listed, complete = custom[-2][1], custom[-1][1]
    assert listed == complete["sources"] and listed and all(s["url"].startswith("/articles/") for s in listed)


async def test_turns_without_sources_carry_no_sources_part_or_event(two_users: tuple[Any, Any]) -> None:
    demo, _ = two_users
    client = TokenClient(await auth_headers(demo))
    _, out = await aisdk_post(client, aisdk_body("src-2", "what is 6*7?", page="home"))
    assert _parts(out, "finish") and not _parts(out, "source-url")
    _, events, _ = await agui_post(client, run_input("src-t2", [{"id": "u1", "role": "user", "content": "what is 6*7?"}]))
    assert events[-1]["type"] == "RUN_FINISHED" and "pagechat.sources" not in [e.get("name") for e in events]


async def test_alices_streams_never_reach_demo_over_ai_sdk_or_ag_ui(two_users: tuple[Any, Any]) -> None:
    demo, alice = two_users
    question = "Search your research streams for vectors"  # a word only alice's stream has besides SECRET
    for user, expected in ((demo, []), (alice, [f"{SECRET} CRISPR delivery"])):
        client = TokenClient(await auth_headers(user))
        r, out = await aisdk_post(client, aisdk_body(f"leak-{user.username}", question, **REPORTS))
        assert r.status_code == 200
        assert [p["title"] for p in _parts(out, "source-url")] == expected
        status, events, _ = await agui_post(client, run_input(f"leak-t-{user.username}", [{"id": "u1", "role": "user", "content": question}],
                                                             forwardedProps=REPORTS))
        assert status == 200
        listed = [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "pagechat.sources"]
        assert [s["title"] for s in (listed[0] if listed else [])] == expected
        if user == demo:  # never searched, cited, counted or summarised: not a word of hers anywhere in demo's streams
            assert SECRET not in json.dumps(out) + json.dumps(events)


@pytest.mark.skipif(shutil.which("node") is None or not (ROOT / "node_modules" / "ai").exists(), reason="needs node and npm ci")
async def test_source_url_parts_pass_the_ai_sdks_own_chunk_schema(two_users: tuple[Any, Any], articles: int) -> None:
    demo, _ = two_users
    client = TokenClient(await auth_headers(demo))
    _, out = await aisdk_post(client, aisdk_body("src-3", "What do the articles say about CRISPR delivery?", **REPORTS))
    parts = _parts(out, "source-url")
    assert parts
    done = subprocess.run(["node", "--input-type=module", "-e", VALIDATE, json.dumps(parts)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    bad = subprocess.run(["node", "--input-type=module", "-e", VALIDATE, json.dumps([{**parts[0], "url": 7}])], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1  # the check can fail: a part the SDK would refuse is refused here
