"""The README's "Add pagechat to your project", followed literally in a fresh project outside this repository.

Builds the wheel, installs it into a new virtualenv in a temporary directory, runs `django-admin startproject`,
adds one app of the host's own (a model, and the README's `assistant.py` with a tool and a page), applies the
README's blocks, then `check`, `migrate`, `collectstatic`, serves with daphne and holds a websocket turn (DRF
token) in which the offline model calls the host's tool, and renders the host's page with the tray.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import websockets

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("chat", "tools", "payloads", "pages")
SECTION = "## Add pagechat to your project"
BLOCK = re.compile(r"```(?:python|django)\n(.*?)```", re.S)
TARGET = re.compile(r"^(?:#|\{#)\s*(\S+)\s+\((append|replace|new)\)")
TRAY_TAG = re.compile(r"`(\{% load chat_tags %\}\{% chat_tray [^`]*%\})`")

# Until every CHAT_* default lives inside the package (chat/conf.py), the host has to carry these; the
# values are this repo's defaults. The offline model answers (no key, no network).
# The host's own code: what a team already has before it adds pagechat (not part of the README).
HOST_MODELS = '''
from django.conf import settings
from django.db import models


class Order(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    number = models.CharField(max_length=20)
    status = models.CharField(max_length=40)
'''
HOST_VIEWS = '''
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from shop.models import Order


@login_required
def orders(request):
    return render(request, "shop/orders.html", {"chat_context": {"order_count": Order.objects.filter(owner=request.user).count()}})
'''
HOST_SETTINGS = '''
INSTALLED_APPS += ["shop"]
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# A permissive project default: pagechat's API must stay closed anyway.
REST_FRAMEWORK = {"DEFAULT_AUTHENTICATION_CLASSES": [], "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"]}
'''
HOST_URLS = '''
from shop.views import orders
urlpatterns += [path("orders/", orders)]
'''
SETUP_DATA = '''
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from rest_framework.authtoken.models import Token
from shop.models import Order
import chat, json
user = get_user_model().objects.create_user("ann", password="pw")
Order.objects.create(owner=user, number="1042", status="shipped on Monday")
session = SessionStore()
session.update({"_auth_user_id": str(user.pk), "_auth_user_backend": "django.contrib.auth.backends.ModelBackend",
                "_auth_user_hash": user.get_session_auth_hash()})
session.create()
print(json.dumps({"token": Token.objects.create(user=user).key, "session": session.session_key, "chat_file": chat.__file__}))
'''


def readme_steps() -> tuple[list[tuple[str, str, str]], str]:
    """The README section's file blocks as (path, mode, text), and its tray tag."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index(SECTION):]
    section = section[: section.find("\n## ", len(SECTION))] if "\n## " in section[len(SECTION):] else section
    steps = []
    for block in BLOCK.findall(section):
        m = TARGET.match(block)
        assert m, f"a README block without a `# <path> (append|replace|new)` first line:\n{block}"
        steps.append((m.group(1), m.group(2), block))
    tag = TRAY_TAG.search(section)
    assert steps and tag, "the README section lost its blocks or its tray tag"
    return steps, tag.group(1)


def run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> str:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{' '.join(cmd)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout + out.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(url: str, **headers: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except urllib.error.URLError:  # not listening yet
        return 0, ""


async def websocket_turn(url: str, headers: dict[str, str], message: str, context: dict[str, Any]) -> list[dict[str, Any]]:
    async with websockets.connect(url, additional_headers=headers, open_timeout=10) as ws:
        await ws.send(json.dumps({"type": "chat.send", "client_message_id": str(uuid.uuid4()), "conversation_id": None,
                                  "message": message, "context": context}))
        events = []
        while True:
            event = json.loads(await asyncio.wait_for(ws.recv(), 20))
            events.append(event)
            if event["type"] in ("complete", "cancelled", "error"):
                return events


def test_a_fresh_project_follows_the_readme(tmp_path: Path) -> None:
    steps, tray_tag = readme_steps()
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "PYTHONPATH", "DATABASE_URL", "REDIS_URL", "VIRTUAL_ENV")}

    # 1. build the wheel from a copy of the sources (the build leaves nothing in the checkout)
    src = tmp_path / "src"
    for name in PACKAGES:
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(src)], tmp_path, env)
    wheel = next((tmp_path / "dist").glob("pagechat-*.whl"))

    # 2. a fresh virtualenv outside the repo; dependencies at the versions this repo tests with (pip's cache)
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], tmp_path, env)
    bin_ = venv / "bin"
    freeze = run([sys.executable, "-m", "pip", "freeze", "--exclude-editable"], tmp_path, env)
    (tmp_path / "constraints.txt").write_text("\n".join(line for line in freeze.splitlines() if "==" in line and not line.startswith("pagechat")))
    run([str(bin_ / "pip"), "install", "-q", "--disable-pip-version-check", "-c", str(tmp_path / "constraints.txt"), str(wheel)], tmp_path, env, timeout=600)
    env["PATH"] = f"{bin_}{os.pathsep}{env.get('PATH', '')}"

    # 3. a new project with one app of its own
    run([str(bin_ / "django-admin"), "startproject", "mysite", str(tmp_path / "site")], tmp_path, env)
    site = tmp_path / "site"
    manage = [str(bin_ / "python"), "manage.py"]
    run([*manage, "startapp", "shop"], site, env)
    (site / "shop" / "models.py").write_text(HOST_MODELS)
    (site / "shop" / "views.py").write_text(HOST_VIEWS)
    with open(site / "mysite" / "settings.py", "a") as f:
        f.write(HOST_SETTINGS + "\n")  # and no CHAT_* setting at all: chat.conf has every default
    with open(site / "mysite" / "urls.py", "a") as f:
        f.write(HOST_URLS)

    # 4. the README, literally
    for path, mode, text in steps:
        target = site / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == "append":
            with open(target, "a") as f:
                f.write("\n" + text)
        else:
            assert (mode == "new") != target.exists(), (path, mode)
            target.write_text(text)
    template = site / "shop" / "templates" / "shop" / "orders.html"
    template.parent.mkdir(parents=True)
    template.write_text(f"<!doctype html><title>Orders</title><h1>Your orders</h1>\n{tray_tag}\n")

    # 5. check, migrate (no demo tables), collectstatic (no demo files)
    assert "no issues" in run([*manage, "check"], site, env)
    run([*manage, "makemigrations", "shop"], site, env)
    run([*manage, "migrate", "--noinput"], site, env)
    tables = run([str(bin_ / "python"), "-c", "import sqlite3; print(sorted(r[0] for r in sqlite3.connect('db.sqlite3').execute(\"select name from sqlite_master where type='table'\")))"], site, env)
    assert "pagechat_run" in tables and "pagechat_tools_tool" in tables and "pagechat_pages_chatpage" in tables and "shop_order" in tables
    assert "pagechat_demo" not in tables and "article" not in tables and "researchstream" not in tables
    run([*manage, "collectstatic", "--noinput", "-v", "0"], site, env)
    assert (site / "staticfiles" / "chat" / "tray.js").is_file() and not (site / "staticfiles" / "pages").exists()
    data = json.loads(run([*manage, "shell", "-c", SETUP_DATA], site, env).strip().splitlines()[-1])
    assert data["chat_file"].startswith(str(venv)), data["chat_file"]  # the installed package, not this checkout

    # 6. serve with daphne
    port = free_port()
    log = open(tmp_path / "daphne.log", "wb")
    daphne = subprocess.Popen([str(bin_ / "daphne"), "-b", "127.0.0.1", "-p", str(port), "mysite.asgi:application"],
                              cwd=site, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while http(f"{base}/assistant/")[0] != 200:
            assert daphne.poll() is None and time.monotonic() < deadline, (tmp_path / "daphne.log").read_text()[-3000:]
            time.sleep(0.2)
        status, body = http(f"{base}/assistant/")
        assert json.loads(body)["websocket"] == "/assistant/ws/"
        # the host's AllowAny default does not open the API
        assert http(f"{base}/assistant/conversations/")[0] == 401

        # a websocket turn with a DRF token: the offline model calls the host's own tool, which reads the host's model
        events = asyncio.run(websocket_turn(f"ws://127.0.0.1:{port}/assistant/ws/", {"Authorization": f"Token {data['token']}"},
                                            "What is the status of order 1042?", {"current_page": "orders"}))
        types = [e["type"] for e in events]
        assert types[-1] == "complete", events[-3:]
        start = next(e for e in events if e["type"] == "tool_start")
        assert start["tool"] == "order_status" and start["input"] == {"order_number": "1042"}, start
        assert any(e["type"] == "tool_complete" and e["tool"] == "order_status" for e in events)
        assert "shipped on Monday" in events[-1]["payload"]["message"]  # the tool's answer, read from the host's model

        # the host's page renders the tray pointing at the prefix; its assets come from daphne
        status, html = http(f"{base}/orders/", Cookie=f"sessionid={data['session']}")
        assert status == 200 and "Your orders" in html, html[:500]
        config = json.loads(re.search(r'<script id="chat-tray-config" type="application/json">(.*?)</script>', html, re.S).group(1))
        assert config["ws_url"] == "/assistant/ws/" and config["api_base"] == "/assistant/" and config["page"] == "orders"
        assert config["context"] == {"order_count": 1, "current_page": "orders"}
        for asset in re.findall(r'(?:src|href)="(/static/[^"]+)"', html):
            assert http(base + asset)[0] == 200, asset
        assert '/static/chat/tray.js' in html
        # the browser's way in: the session cookie from an allowed origin
        events = asyncio.run(websocket_turn(f"ws://127.0.0.1:{port}/assistant/ws/", {"Cookie": f"sessionid={data['session']}", "Origin": base},
                                            "hello", {"current_page": "orders"}))
        assert events[-1]["type"] == "complete"
    finally:
        os.killpg(daphne.pid, signal.SIGTERM)
        try:
            daphne.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(daphne.pid, signal.SIGKILL)
        log.close()
