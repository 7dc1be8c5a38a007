"""The described APIs: OpenAPI 3.1 and AsyncAPI 3 documents current and valid, served live, and fuzzed live."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command
from drf_spectacular.validation import validate_schema

from chat.events.errors import ERRORS
from tests.e2e.conftest import PYTHON, ROOT
from tests.ops.conftest import Daphne, http

OPENAPI = ROOT / "docs" / "api" / "openapi.yaml"
ASYNCAPI = ROOT / "docs" / "protocol" / "asyncapi.yaml"


def test_committed_documents_are_current() -> None:
    """`manage.py chat_api_schema --check` (run by `make lint`) passes on the committed files..."""
    call_command("chat_api_schema", "--check")


def test_check_fails_on_a_stale_document(tmp_path: Path) -> None:
    """... and fails when a file differs from what the code generates."""
    stale = tmp_path / "openapi.yaml"
    stale.write_text(OPENAPI.read_text().replace("pagechat API", "an old title"))
    with pytest.raises(Exception, match="stale API description"):
        call_command("chat_api_schema", "--check", "--openapi", str(stale), "--asyncapi", str(ASYNCAPI))


def test_openapi_is_valid_openapi_3_1_with_every_error_code() -> None:
    """Valid against the OpenAPI Initiative's 3.1 JSON Schema; every endpoint of chat.urls; every code of chat/events/errors.py."""
    doc: dict[str, Any] = yaml.safe_load(OPENAPI.read_text())
    assert doc["openapi"] == "3.1.0"
    validate_schema(doc)  # jsonschema against the OAI's published 3.1 schema (bundled by drf-spectacular)
    assert {"/api/", "/api/chat", "/api/chat/stream", "/api/chat/runs/{run_id}/events", "/api/chat/runs/{run_id}/cancel",
            "/api/chat/runs/{run_id}/approve", "/api/conversations/", "/api/conversations/{id}/"} <= set(doc["paths"])
    assert {"tokenAuth", "cookieAuth"} <= set(doc["components"]["securitySchemes"])
    text = OPENAPI.read_text()
    for code in ERRORS:
        assert f"`{code}`" in text, f"error code {code} is not described"
    # every response status an error code answers with appears on some operation, with the FrameError body
    statuses = {str(r) for p in doc["paths"].values() for op in p.values() for r in op.get("responses", {})}
    assert {str(info.http_status) for code, info in ERRORS.items() if code not in ("resync", "cancelled")} <= statuses | {"410"}
    chat = doc["paths"]["/api/chat"]["post"]
    assert chat["responses"]["429"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/FrameError"}
    stream = doc["paths"]["/api/chat/stream"]["post"]["responses"]["200"]["content"]["text/event-stream"]["schema"]
    assert stream["properties"]["data"]["contentSchema"] == {"$ref": "#/components/schemas/ServerEvent"}


def test_openapi_error_schema_matches_the_protocol() -> None:
    """The FrameError component is the protocol's own (same code enum as events.schema.json)."""
    doc = yaml.safe_load(OPENAPI.read_text())
    events = json.loads((ROOT / "docs" / "protocol" / "events.schema.json").read_text())
    schemas = doc["components"]["schemas"]
    frame_error = schemas["FrameError"]
    code = frame_error["properties"]["code"]
    enum = schemas[code["allOf"][0]["$ref"].rsplit("/", 1)[1]]["enum"] if "allOf" in code else code["enum"]
    assert set(enum) == set(events["$defs"]["FrameError"]["properties"]["code"]["enum"]) == set(ERRORS)


def test_asyncapi_references_the_protocol_schema() -> None:
    """The AsyncAPI document's payloads are $refs into docs/protocol/*.schema.json that resolve (the official parser
    validates the whole document in tests/js/asyncapi.test.mjs)."""
    doc = yaml.safe_load(ASYNCAPI.read_text())
    assert doc["asyncapi"] == "3.0.0"
    assert doc["channels"]["websocket"]["address"] == "/api/ws/"
    for name, message in doc["components"]["messages"].items():
        ref = message["payload"]["schema"]["$ref"]
        file, _, pointer = ref.partition("#")
        target = json.loads((ASYNCAPI.parent / file).read_text())
        node = target
        for part in pointer.strip("/").split("/"):
            node = node[part]
        assert node.get("title") == name or node.get("properties"), ref


@pytest.mark.django_db
def test_schema_and_docs_views(client: Any, django_user_model: Any) -> None:
    """schema/ for any signed-in user or token, docs/ (Swagger UI, assets served by us) for staff only."""
    assert client.get("/api/schema/").status_code == 401
    user = django_user_model.objects.create_user("u1", password="p")
    staff = django_user_model.objects.create_user("s1", password="p", is_staff=True)
    client.force_login(user)
    response = client.get("/api/schema/")
    assert response.status_code == 200 and response.content.startswith(b"openapi: 3.1.0")
    assert client.get("/api/schema/?format=json").json()["info"]["title"] == "pagechat API"
    assert client.get("/api/docs/").status_code == 403
    client.force_login(staff)
    page = client.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in html and "cdn." not in html
    assert "<script>" not in html  # its init script is a file of its own (the site's CSP allows no inline script)
    script = client.get("/api/docs/?script=")
    assert script["Content-Type"].startswith("application/javascript") and "/api/schema/" in script.content.decode()


def test_schemathesis_finds_no_server_error(ops_server: Daphne, demo_token: str, tmp_path: Path) -> None:
    """Schemathesis (pinned in pyproject) against the live daphne: examples, coverage, fuzzing and stateful phases
    over the committed document, with every check but three: no 5xx, responses (statuses, bodies, SSE events,
    headers) as documented, auth not ignored.

    Left out: the attachment upload (POST <api>attachments/): a multipart body without any part, which its fuzzing
    sends, is refused by daphne's HTTP layer (Twisted parses multipart bodies itself) with an empty 400 before
    Django sees it; tests/chat/test_attachments.py covers the upload's answers. And positive_data_acceptance (the schema cannot say "no NUL characters anywhere", which the protocol
    refuses), negative_data_rejection (DRF coerces a number into a CharField) and content_type_conformance
    (an id that is not a number never reaches the API: Django's own 404 page answers)."""
    status, _, body = http("GET", f"{ops_server.url}/api/schema/?format=json", headers={"Authorization": f"Token {demo_token}"})
    assert status == 200
    assert json.loads(body) == json.loads(json.dumps(yaml.safe_load(OPENAPI.read_text()))), "the live schema is the committed one"
    report = tmp_path / "report"
    done = subprocess.run(
        [str(Path(PYTHON).parent / "st"), "run", str(OPENAPI), "--url", ops_server.url, "-H", f"Authorization: Token {demo_token}",
         "--checks", "all", "--exclude-checks", "positive_data_acceptance,negative_data_rejection,content_type_conformance",
         "--exclude-operation-id", "attachments_create",
         "--max-examples", "12", "--workers", "1", "--request-timeout", "30", "--seed", "14", "--report", "junit",
         "--report-dir", str(report), "--no-color"],
        cwd=ROOT, capture_output=True, text=True, timeout=400,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-6000:]
    assert "Stateful" in out and "generated" in out
    assert "Internal Server Error" not in ops_server.log(), ops_server.log()[-3000:]


def test_deploy_check_generates_the_schema_cleanly() -> None:
    """`check --deploy` runs drf-spectacular's own schema check: none of its messages (no incompatible view)."""
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(DEBUG="0", SECRET_KEY="deploy-check-" + "y" * 50, ALLOWED_HOSTS="chat.example.com")
    done = subprocess.run([PYTHON, "manage.py", "check", "--deploy"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert "drf_spectacular" not in done.stdout + done.stderr, done.stdout + done.stderr
