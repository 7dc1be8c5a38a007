"""The benchmark's shared parts: parameters, the servers every scenario measures (the app, a bare Channels relay
and a bare ASGI app replaying the same frames), CPU accounting, and the `Bench` holding them and the results.
Each scenario is a module of tests/bench/scenarios/; tests/bench/run.py runs them."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.bench import frames as frame_sets
from tests.bench.client import Turn, integrity, latency, ws_open, ws_turn
from tests.bench.server import ROOT, Server

VAR = ROOT / "var" / "bench"
RESULTS = Path(__file__).resolve().parent / "results"
N_USERS = 110
SECRET = "bench-" + "x" * 50

# full / quick parameters of every scenario
PARAMS: dict[str, dict[str, Any]] = {
    "full": {"seq_turns": 300, "sse_turns": 100, "tput_tokens": 5000, "tput_rounds": 5, "levels": [1, 10, 50, 100],
             "conc_turns": 5, "idle": 1000, "hist_turns": 100, "redis_convs": 10, "redis_turns": 3,
             "peer_tokens": 2000, "peer_rounds": 8, "srv_turns": 100, "srv_tput_tokens": 3000, "srv_rounds": 4,
             "cap_levels": [10, 25, 50, 100, 150, 200, 300, 400], "cap_seconds": 20, "src_objects": 100_000, "src_rounds": 5, "burst_rounds": 6},
    "quick": {"seq_turns": 100, "sse_turns": 30, "tput_tokens": 3000, "tput_rounds": 2, "levels": [1, 10, 50],
              "conc_turns": 2, "idle": 1000, "hist_turns": 40, "redis_convs": 5, "redis_turns": 2,
              "peer_tokens": 2000, "peer_rounds": 3, "srv_turns": 40, "srv_tput_tokens": 2000, "srv_rounds": 2,
              "cap_levels": [10, 25, 50, 100, 200], "cap_seconds": 10, "src_objects": 10_000, "src_rounds": 2, "burst_rounds": 3},
}
TURN = "bench:tokens=100"  # the standard turn: 100 tokens, instant model
PACED = "bench:tokens=100,rate=100"  # 100 tokens at 100 tokens/s (a 1 s answer)


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def app_env(database_url: str, **extra: str) -> dict[str, str]:
    """Production-like settings (DEBUG off) with the bench model; per-user limits raised (not measured here)."""
    return {
        "DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": database_url, "REDIS_URL": "",
        "CHAT_PROVIDER": "tests.bench.provider.BenchProvider", "DEBUG": "False", "SECRET_KEY": SECRET,
        "CHAT_RATE_LIMIT_PER_MINUTE": "1000000", "CHAT_MAX_RUNNING_PER_USER": "1000", "LOG_LEVEL": "WARNING",
        "BENCH_FRAMES_DIR": str(VAR / "frames"), **extra,
    }


def manage(env: dict[str, str], *args: str, cwd: Path = ROOT) -> str:
    out = subprocess.run([sys.executable, *args], cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"{args} failed:\n{out.stderr[-3000:]}")
    return out.stdout


def prepare_db(env: dict[str, str], users: int = N_USERS, cwd: Path = ROOT) -> list[str]:
    """Migrate the database `env` names (with the code at `cwd`) and create `users` bench users; their tokens."""
    manage(env, "manage.py", "migrate", "--noinput", cwd=cwd)
    return json.loads(manage(env, "-m", "tests.bench.dbsetup", "users", str(users), cwd=cwd).splitlines()[-1])["tokens"]


class CPU:
    """Server CPU seconds between two points, for several servers at once."""

    def __init__(self, *servers: Server):
        self.servers = servers
        self.start = {s.name: s.cpu() for s in servers}

    def used(self) -> dict[str, float]:
        return {s.name: s.cpu() - self.start[s.name] for s in self.servers}


class ThreadCPU:
    """A counting app server's CPU seconds, in all and by thread name, summed over the stretches measured."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.total = 0.0
        self.by_name: dict[str, float] = {}

    @contextmanager
    def measuring(self) -> Iterator[None]:
        cpu0, threads0 = self.server.cpu(), self.server.cpu_by_thread()
        yield
        self.total += self.server.cpu() - cpu0
        for name, v in self.server.cpu_by_thread().items():
            self.by_name[name] = self.by_name.get(name, 0.0) + v - threads0.get(name, 0.0)


def thread_split(cpu_by_thread: dict[str, float], turns: int) -> dict[str, float]:
    """CPU seconds by thread name -> ms per turn on the event loop, the admission thread, the runs' thread, the rest."""
    by_thread = {name: v / turns * 1000 for name, v in cpu_by_thread.items()}
    groups = (("event loop", "MainThread"), ("chat-ack", "chat-ack"), ("chat-runs", "chat-runs"))
    split = {name: round(sum(v for k, v in by_thread.items() if k.startswith(prefix)), 3) for name, prefix in groups}
    split["other threads"] = round(sum(v for k, v in by_thread.items() if not k.startswith(tuple(p for _, p in groups))), 3)
    return split


def per_event_us(cpu_s: float, events: int) -> float | None:
    return round(cpu_s / events * 1e6, 1) if events else None


def stream_summary(turns: list[Turn], cpu_s: float) -> dict[str, Any]:
    events = sum(t.events for t in turns)
    return {**latency(turns), **integrity(turns), "events": events, "cpu_s": round(cpu_s, 3),
            "cpu_per_turn_ms": round(cpu_s / len(turns) * 1000, 2) if turns else None,
            "cpu_per_1000_events_ms": round(cpu_s / events * 1e6, 1) if events else None,
            "cpu_per_event_us": per_event_us(cpu_s, events)}


class Bench:
    """The servers, users and parameters of one benchmark run, and the results its scenarios add (by name)."""

    def __init__(self, mode: str, profile: bool, py_spy: str | None):
        self.mode = mode
        self.p = PARAMS[mode]
        self.profile = profile
        self.py_spy = py_spy
        self.results: dict[str, Any] = {}
        self.servers: dict[str, Server] = {}
        self.extra_servers: list[Server] = []  # the two-process scenario's, counted while they run
        self.tokens: list[str] = []

    # -- setup --
    def start(self, need_app: bool) -> None:
        shutil.rmtree(VAR / "frames", ignore_errors=True)
        (VAR / "logs").mkdir(parents=True, exist_ok=True)
        base = {"BENCH_FRAMES_DIR": str(VAR / "frames")}
        self.servers["channels"] = Server("channels", "tests.bench.baseline_channels:application", base, VAR / "logs").start()
        self.servers["asgi"] = Server("asgi", "tests.bench.baseline_asgi:application", base, VAR / "logs").start()
        if not need_app:
            return
        db = VAR / "bench.sqlite3"
        for suffix in ("", "-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
        url = os.environ.get("BENCH_APP_DATABASE_URL") or f"sqlite:///{db}"  # experiment knob: an empty database
        self.db_url = url
        log(f"migrating the bench database ({url.split(':', 1)[0]}) and creating users")
        self.db_env = app_env(url)
        self.tokens = prepare_db(self.db_env)
        self.servers["app"] = Server("app", "tests.bench.asgi_counting:application", self.db_env, VAR / "logs").start()
        # the same app with coalescing off: every token is its own event (the per-event pipeline, measured)
        self.servers["app_raw"] = Server("app_raw", "tests.bench.asgi_counting:application",
                                         app_env(url, CHAT_COALESCE_WINDOW="0"), VAR / "logs").start()

    def stop(self) -> None:
        for s in self.servers.values():
            s.stop()

    def servers_cpu(self) -> float:
        total = 0.0
        for s in [*self.servers.values(), *self.extra_servers]:
            try:
                total += s.cpu()
            except (OSError, AssertionError):
                pass  # not started or already gone
        return total

    async def record(self, server: Server, token: str, name: str, message: str) -> Turn:
        """Record one real run's frames (exact bytes, arrival offsets) for the baselines to replay."""
        ws = await ws_open(server.ws_url, token)
        try:
            turn = await ws_turn(ws, message, None, record=True)
        finally:
            await ws.close()
        assert turn.ok, turn.error
        frame_sets.save(name, turn.frames, turn.offsets)
        return turn


    def profile_save(self, server: Server, name: str) -> None:
        """Stop `server`'s profile; write var/bench/cprofile-<name>.prof and .txt (by own time, then cumulative)."""
        import io
        import pstats

        prof = VAR / f"cprofile-{name}.prof"
        server.bench(f"profile/stop?{prof}")
        buf = io.StringIO()
        st = pstats.Stats(str(prof), stream=buf)
        st.sort_stats("tottime").print_stats(30)
        st.sort_stats("cumulative").print_stats(40)
        out = prof.with_suffix(".txt")
        out.write_text(buf.getvalue())
        log(f"profile written to {out}")
