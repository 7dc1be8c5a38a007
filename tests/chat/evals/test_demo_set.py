"""The demo's eval set (evals/demo.yaml) passes with the offline model, through call_command and through manage.py as
`make eval` runs it; a set below its pass rate exits 1."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command

from chat.models import Conversation

pytestmark = pytest.mark.django_db(transaction=True)
REPO = Path(__file__).resolve().parents[3]
DEMO_SET = REPO / "evals" / "demo.yaml"


def _database_url() -> str:
    """The URL of the test database, for a manage.py process of its own."""
    db = django_settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def demo_data(settings: Any) -> None:
    settings.DEBUG = True  # a development copy: demo_setup refuses otherwise
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # hashing speed is not what is tested
    call_command("demo_setup", stdout=StringIO())


def test_the_demo_set_passes_with_the_offline_model(demo_data: None, tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    out = StringIO()
    call_command("chat_eval", str(DEMO_SET), "--provider", "offline", "--json", str(report_path), stdout=out, stderr=StringIO())
    report = json.loads(report_path.read_text())
    failures = [f"{c['name']}: {[e['why'] for r in c['runs'] for e in r['expectations'] if not e['passed']]}" for c in report["cases"] if c["status"] == "failed"]
    assert report["ok"] and not failures, failures
    assert (report["passed"], report["skipped"]) == (len(report["cases"]) - 1, 1)  # the judged case, without a judge
    assert "100.0%" in out.getvalue().splitlines()[-1]
    assert Conversation.objects.filter(is_eval=True).count() == report["passed"] and not Conversation.objects.filter(is_eval=False).exists()
    # the same through manage.py, as `make eval` runs it, beside a set that stays below its pass rate
    failing = tmp_path / "failing.yaml"
    failing.write_text("name: failing\ncases:\n  - {name: wrong, page: home, user: alice, turns: ['How many streams do I have?'], expect: {contains: [seven]}}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CHAT_PROVIDER", "SQLITE_TEST_NAME")}
    env.update(DATABASE_URL=_database_url(), DEBUG="1", CHAT_OFFLINE_DELAY="0")
    runs = [subprocess.Popen([sys.executable, "manage.py", "chat_eval", str(path), "--provider", "offline"], cwd=REPO, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for path in (DEMO_SET, failing)]
    (passed_out, passed_err), (failed_out, failed_err) = (run.communicate(timeout=240) for run in runs)
    assert runs[0].returncode == 0, passed_out + passed_err
    assert "100.0%" in passed_out.splitlines()[-1]
    assert runs[1].returncode == 1, failed_out + failed_err
    assert "CommandError: the pass rate 0.0% is below 100.0%" in failed_err and "contains: not in the answer: 'seven'" in failed_out
