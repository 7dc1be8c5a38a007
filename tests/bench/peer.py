"""The peer product in the harness: Chainlit, installed by the bench into its own virtualenv (never ours:
it turns on nest_asyncio), serving tests/bench/chainlit_peer/app.py, driven by its socket.io client."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.bench.server import ROOT, Server

PEER_DIR = Path(__file__).resolve().parent / "chainlit_peer"
REQUIREMENTS = PEER_DIR / "requirements.txt"  # exact versions (chainlit 2.12.0 and everything it pulls in)


def chainlit_venv(var: Path) -> Path:
    """Create (once per requirements file) the peer's virtualenv under var/; return its python."""
    venv = var / "chainlit-venv"
    stamp = venv / ".installed"
    python = venv / "bin" / "python"
    if stamp.exists() and stamp.read_text() == REQUIREMENTS.read_text():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "-r", str(REQUIREMENTS)], check=True)
    stamp.write_text(REQUIREMENTS.read_text())
    return python


def chainlit_server(var: Path, log_dir: Path) -> Server:
    """The Chainlit app as its docs run it (`chainlit run app.py --headless`, one uvicorn process)."""
    python = chainlit_venv(var)
    app_dir = var / "chainlit-app"  # chainlit writes .chainlit/ and chainlit.md next to the app
    app_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(PEER_DIR / "app.py", app_dir / "app.py")
    env = {"PYTHONPATH": str(ROOT), "DO_NOT_TRACK": "true"}
    cmd = [str(python), "-m", "chainlit", "run", "app.py", "--headless", "--host", "127.0.0.1", "--port", "{port}"]
    return Server("chainlit", "chainlit_peer/app.py", env, log_dir, command=cmd, cwd=app_dir)


class ChainlitClient:
    """The peer's socket.io client in a subprocess (Chainlit's venv): one turn per `turn()` call."""

    def __init__(self, python: Path, port: int):
        self.proc = subprocess.Popen([str(python), str(PEER_DIR / "client.py"), str(port)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=ROOT)
        assert json.loads(self._line()).get("ready")

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the Chainlit client exited ({self.proc.wait()})")
        return line

    def turn(self, tokens: int) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{tokens}\n")
        self.proc.stdin.flush()
        return json.loads(self._line())

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
