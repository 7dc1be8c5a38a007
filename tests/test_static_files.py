"""`daphne config.asgi:application` alone (production settings, no proxy) serves the tray's and the site's static files."""
from __future__ import annotations

import gzip
import os
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
    finally:
        server.stop()
