"""Bench server processes: start daphne on a free port, read its own CPU time and RSS from /proc, stop it."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CLK_TCK = os.sysconf("SC_CLK_TCK")
EXITED_CPU_DIR = ROOT / "var" / "bench" / "cpu"  # what tests/bench/asgi_counting.py writes


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the bench process dies, however it dies (no stray servers)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def machine_busy() -> float:
    """CPU seconds all processes on the machine have used (busy jiffies in /proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / CLK_TCK


def own_cpu() -> float:
    """CPU seconds of this process and its waited-for children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def thread_run_ns(pid: int) -> dict[str, int]:
    """Run time in nanoseconds of each live thread of `pid`, by thread id (`/proc/<pid>/task/<tid>/schedstat`)."""
    out: dict[str, int] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out[tid] = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread ended between the listing and the read
    return out


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of every live thread of `pid`, at nanosecond resolution.

    The scheduler's per-thread run time (`/proc/<pid>/task/<tid>/schedstat`) is exact, where utime+stime
    in `/proc/<pid>/stat` counts 10 ms ticks (a 25 ms sample would carry a 40% error). Server threads live
    as long as the server (event loop, executor threads), so no time is lost to exited threads; where
    schedstat is missing the tick counters are used.
    """
    try:
        return sum(thread_run_ns(pid).values()) / 1e9
    except FileNotFoundError:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime (fields 14, 15 of stat)


# How each ASGI server is started (production-like: one process, no reload, quiet logs).
SERVER_COMMANDS: dict[str, list[str]] = {
    "daphne": ["-m", "daphne", "-v", "0", "-b", "127.0.0.1", "-p", "{port}", "{app}"],
    "uvicorn": ["-m", "uvicorn", "--host", "127.0.0.1", "--port", "{port}", "--loop", "uvloop", "--http", "httptools",
                "--ws", "chat.api.wsserver:UvicornWebSocketProtocol", "--no-access-log", "--log-level", "warning", "--lifespan", "off", "{app}"],
}


def relay_server(name: str, log_dir: Path, frames_dir: Path, server: str = "daphne") -> Server:
    """The bare Channels relay (the baseline) on `server`, serving the frame sets recorded in `frames_dir` (on uvicorn
    with plain `--ws websockets`: the product's protocol class only adds its frame limit)."""
    app, env = "tests.bench.baseline_channels:application", {"BENCH_FRAMES_DIR": str(frames_dir)}
    if server == "daphne":
        return Server(name, app, env, log_dir)
    ws = "chat.api.wsserver:UvicornWebSocketProtocol"
    command = [sys.executable, *("websockets" if a == ws else app if a == "{app}" else a for a in SERVER_COMMANDS[server])]
    return Server(name, app, env, log_dir, server=server, command=command)


class Server:
    """One server process (daphne, or uvicorn) serving `app` (a dotted `module:attr`), logging to `log_dir/<name>.log`."""

    def __init__(self, name: str, app: str, env: dict[str, str], log_dir: Path, server: str = "daphne",
                 command: list[str] | None = None, cwd: Path | None = None):
        self.name, self.app, self.env, self.log_dir = name, app, env, log_dir
        self.server = server
        self.port = free_port()
        self.command = command  # a whole command line ({port} filled in), for a peer product
        self.cwd = cwd or ROOT
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> Server:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_dir / f"{self.name}.log", "ab")
        env = {**os.environ, **self.env}
        if self.command is not None:
            argv = [a.format(port=self.port) for a in self.command]
        else:
            argv = [sys.executable, *(a.format(port=self.port, app=self.app) for a in SERVER_COMMANDS[self.server])]
        self.proc = subprocess.Popen(argv, cwd=self.cwd, env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}); see {self.log_dir / (self.name + '.log')}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.name} did not listen on {self.port} within {timeout}s")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/chat/"

    def cpu(self) -> float:
        """Seconds of CPU (user + system, every thread) this server process has used so far, with its threads that
        ended (a counting app server records theirs: tests/bench/asgi_counting.py)."""
        return process_cpu(self.pid) + self.exited_cpu()

    def exited_cpu(self) -> float:
        """Seconds of CPU of the threads of a counting app server that ended (0 for other servers)."""
        try:
            return int((EXITED_CPU_DIR / f"exited-{self.pid}").read_bytes()[:20] or b"0") / 1e9
        except (FileNotFoundError, ValueError):
            return 0.0

    def cpu_by_thread(self) -> dict[str, float]:
        """Seconds of CPU per thread name so far (a counting app server: it names its threads at /__bench__/threads)."""
        names = self.bench("threads")
        out: dict[str, float] = {}
        for tid, ns in thread_run_ns(self.pid).items():
            name = names.get(tid, "other")
            out[name] = out.get(name, 0.0) + ns / 1e9
        out["ended threads"] = self.exited_cpu()
        return out

    def rss(self) -> int:
        """Resident set size in bytes."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def bench(self, path: str) -> dict[str, Any]:
        """GET a /__bench__/ endpoint of a counting app server."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/__bench__/{path}", timeout=10) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        if self.proc is not None:
            (EXITED_CPU_DIR / f"exited-{self.proc.pid}").unlink(missing_ok=True)
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
