"""`daphne config.asgi:application` alone (production settings, no proxy) serves the tray's and the site's static files:
hashed names with long caching, the tray's module imports rewritten to them, gzip copies."""
from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from tests.bench.server import ROOT, Server


def get(url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), b""


def test_daphne_serves_collected_static_files(tmp_path: Path) -> None:
    env = {"DEBUG": "0", "SECRET_KEY": "test-only-secret", "ALLOWED_HOSTS": "127.0.0.1",
           "STATIC_ROOT": str(tmp_path / "static"), "SQLITE_TEST_NAME": str(tmp_path / "unused.sqlite3")}
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=ROOT,
                   env={**os.environ, **env}, check=True, timeout=120)
    server = Server("static", "config.asgi:application", env, tmp_path / "logs").start()
    try:
        base = f"http://127.0.0.1:{server.port}/static"
        for path, kind in [("chat/tray.js", "javascript"), ("chat/tray.css", "text/css"), ("chat/registry.js", "javascript"),
                           ("site/site.css", "text/css"), ("pages/home.js", "javascript")]:
            status, headers, body = get(f"{base}/{path}")
            assert status == 200 and kind in headers["Content-Type"], (path, status, headers)
            assert body == (tmp_path / "static" / path).read_bytes()
            assert "max-age" in headers.get("Cache-Control", "")
        status, headers, body = get(f"{base}/chat/tray.js", **{"Accept-Encoding": "gzip"})
        assert status == 200 and headers.get("Content-Encoding") == "gzip"
        assert gzip.decompress(body) == (tmp_path / "static" / "chat" / "tray.js").read_bytes()
        assert get(f"{base}/chat/nope.js")[0] == 404
        # Hashed names: cached for good, and every static import of the tray names a hashed module that is served.
        manifest = json.loads((tmp_path / "static" / "staticfiles.json").read_text())["paths"]
        status, headers, body = get(f"{base}/{manifest['chat/tray.js']}")
        assert status == 200 and "immutable" in headers.get("Cache-Control", ""), headers
        pending, seen = [manifest["chat/tray.js"]], set()
        while pending:
            name = pending.pop()
            status, _, body = get(f"{base}/{name}")
            assert status == 200, name
            seen.add(name)
            for relative in re.findall(r"""^(?:import|export)\b[^;]*?["'](\.{1,2}/[^"']+)["']""", body.decode(), re.M):
                target = os.path.normpath(os.path.join(os.path.dirname(name), relative))
                assert target in manifest.values(), (name, relative)  # a hashed name, not the plain one
                if target not in seen:
                    pending.append(target)
        assert manifest["chat/controller.js"] in seen and manifest["chat/vendor/marked.esm.js"] in seen
        # The tray tag preloads exactly those hashed modules.
        preloads = subprocess.run([sys.executable, "-c", "import django; django.setup(); "
                                   "from chat.templatetags.chat_tags import tray_preloads; print('\\n'.join(tray_preloads()))"],
                                  cwd=ROOT, env={**os.environ, **env, "DJANGO_SETTINGS_MODULE": "config.settings"},
                                  check=True, capture_output=True, text=True, timeout=60).stdout.split()
        assert sorted(preloads) == sorted(f"/static/{name}" for name in seen - {manifest["chat/tray.js"]})
    finally:
        server.stop()
