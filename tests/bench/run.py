"""Benchmark entry: `python -m tests.bench.run [--quick] [--scenario NAME ...] [--profile]`.

Starts the real server (daphne + the product ASGI app, wrapped only to count SQL) with a benchmark model,
plus two baselines serving the same recorded frames (a bare Channels relay and a bare ASGI app, both on
daphne), drives them from this process with websocket (and SSE) clients, and writes
tests/bench/results/latest.{md,json} after a full run of every scenario (var/bench/quick.* or partial.* otherwise).
Absolute times on shared machines are noise: compare the ratios measured side by side in one run.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.bench import frames as frame_sets, sources as sources_bench
from tests.bench.client import Turn, integrity, latency, ms, pct, read_run, relay_turn, send_frame, sse_turn, ws_open, ws_turn
from tests.bench.peer import ChainlitClient, chainlit_server, chainlit_venv
from tests.bench.report import bars, markdown, ratio, readme_write, verdict
from tests.bench.server import ROOT, Server, machine_busy, own_cpu, relay_server
from tests.bench.words import answer_text

VAR = ROOT / "var" / "bench"
RESULTS = Path(__file__).resolve().parent / "results"
SCENARIOS = ("sequential", "throughput", "concurrent", "idle", "dbwrites", "history", "peers", "servers", "capacity", "redis", "sources")
SERVERLESS = ("redis", "sources")  # scenarios that start their own processes, not the shared app server
N_USERS = 110
SECRET = "bench-" + "x" * 50

# full / quick parameters of every scenario
PARAMS: dict[str, dict[str, Any]] = {
    "full": {"seq_turns": 300, "sse_turns": 100, "tput_tokens": 5000, "tput_rounds": 5, "levels": [1, 10, 50, 100],
             "conc_turns": 5, "idle": 1000, "hist_turns": 100, "redis_convs": 10, "redis_turns": 3,
             "peer_tokens": 2000, "peer_rounds": 8, "srv_turns": 100, "srv_tput_tokens": 3000, "srv_rounds": 4,
             "cap_levels": [10, 25, 50, 100, 150, 200, 300, 400], "cap_seconds": 20, "src_objects": 100_000, "src_rounds": 5},
    "quick": {"seq_turns": 100, "sse_turns": 30, "tput_tokens": 3000, "tput_rounds": 2, "levels": [1, 10, 50],
              "conc_turns": 2, "idle": 1000, "hist_turns": 40, "redis_convs": 5, "redis_turns": 2,
              "peer_tokens": 2000, "peer_rounds": 3, "srv_turns": 40, "srv_tput_tokens": 2000, "srv_rounds": 2,
              "cap_levels": [10, 25, 50, 100, 200], "cap_seconds": 10, "src_objects": 10_000, "src_rounds": 2},
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


# ---- scenarios ----------------------------------------------------------------------------------


class Bench:
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

    # -- 1. one client, sequential turns --
    async def sequential(self) -> None:
        app, ch, asgi = self.servers["app"], self.servers["channels"], self.servers["asgi"]
        await self.record(app, self.tokens[0], "turn100", TURN)
        ws_app = await ws_open(app.ws_url, self.tokens[0])
        ws_ch, ws_asgi = await ws_open(ch.ws_url), await ws_open(asgi.ws_url)
        for _ in range(10):  # warm-up
            await ws_turn(ws_app, TURN, None)
            await relay_turn(ws_ch, "turn100")
            await relay_turn(ws_asgi, "turn100")
        runs: dict[str, list[Turn]] = {"app": [], "channels": [], "asgi": []}
        if self.profile:  # every thread of the app: where a turn's fixed cost goes
            app.bench("profile/start")
        cpu = CPU(app, ch, asgi)
        threads0 = app.cpu_by_thread()
        stats0 = app.bench("stats")
        conv: int | None = None
        for block in range(self.p["seq_turns"] // 10):
            conv = None  # a new conversation every 10 turns, as a user would
            for _ in range(10):
                t = await ws_turn(ws_app, TURN, conv)
                conv = t.conversation_id
                runs["app"].append(t)
            for _ in range(10):
                runs["channels"].append(await relay_turn(ws_ch, "turn100"))
            for _ in range(10):
                runs["asgi"].append(await relay_turn(ws_asgi, "turn100"))
        used = cpu.used()
        threads1 = app.cpu_by_thread()
        stats1 = app.bench("stats")
        if self.profile:
            self.profile_save(app, "app-sequential")
        # The fixed part of a turn: the same turns with a 1-token answer (interleaved with 100-token ones, so both
        # see the same machine); the difference over 99 tokens is the cost of one more token.
        fixed = {"t1": ThreadCPU(app), "t100": ThreadCPU(app)}
        fixed_n = 0
        for _ in range(self.p["seq_turns"] // 10):
            for key, message in (("t1", "bench:tokens=1"), ("t100", TURN)):
                conv = None
                with fixed[key].measuring():
                    for _ in range(10):
                        conv = (await ws_turn(ws_app, message, conv)).conversation_id
            fixed_n += 10
        for ws in (ws_app, ws_ch, ws_asgi):
            await ws.close()
        # SSE on its own, so the app's CPU delta is the SSE path's
        sse: list[Turn] = []
        cpu_sse = CPU(app)
        for i in range(self.p["sse_turns"]):
            sse.append(await sse_turn(app.port, self.tokens[1], TURN, None))
        sse_used = cpu_sse.used()["app"]
        out = {name: stream_summary(turns, used[name]) for name, turns in runs.items()}
        out["sse"] = stream_summary(sse, sse_used)
        n = len(runs["app"])
        out["app"]["db_writes_per_turn"] = round((stats1["db_writes"] - stats0["db_writes"]) / n, 2)
        out["app"]["db_statements_per_turn"] = round((stats1["db_statements"] - stats0["db_statements"]) / n, 2)
        # where a turn's CPU goes: the event loop, the admission thread, the runs' database thread, the rest
        split = thread_split({name: threads1[name] - threads0.get(name, 0.0) for name in threads1}, n)
        out["app"]["cpu_per_turn_by_thread_ms"] = split
        out["fixed"] = {"turns": fixed_n, "cpu_per_1_token_turn_ms": round(fixed["t1"].total / fixed_n * 1000, 3),
                        "cpu_per_100_token_turn_ms": round(fixed["t100"].total / fixed_n * 1000, 3),
                        "cpu_per_token_us": round((fixed["t100"].total - fixed["t1"].total) / fixed_n / 99 * 1e6, 2),
                        "cpu_per_1_token_turn_by_thread_ms": thread_split(fixed["t1"].by_name, fixed_n)}
        a, b = out["app"], out["asgi"]
        out["server_added"] = {k: round(a[k] - b[k], 2) for k in ("first_event_p50_ms", "first_event_p99_ms", "first_text_p50_ms", "first_text_p99_ms")}
        out["sse_server_added"] = {k: round(out["sse"][k] - b[k], 2) for k in ("first_event_p50_ms", "first_event_p99_ms", "first_text_p50_ms", "first_text_p99_ms")}
        out["cpu_per_turn_ratio_app_channels"] = ratio(a["cpu_per_turn_ms"], out["channels"]["cpu_per_turn_ms"])
        self.results["sequential"] = out

    # -- 2. one stream, as fast as it goes --
    async def throughput(self) -> None:
        raw, ch, asgi = self.servers["app_raw"], self.servers["channels"], self.servers["asgi"]
        n = self.p["tput_tokens"]
        message = f"bench:tokens={n}"
        rec = await self.record(raw, self.tokens[2], "tput", message)
        ws = {"app": await ws_open(raw.ws_url, self.tokens[2]), "channels": await ws_open(ch.ws_url), "asgi": await ws_open(asgi.ws_url),
              "asgi_yield": await ws_open(asgi.ws_url)}
        servers = {"app": raw, "channels": ch, "asgi": asgi, "asgi_yield": asgi}
        client_cpu0, wall0 = time.process_time(), time.perf_counter()
        rounds: dict[str, list[Turn]] = {k: [] for k in ws}
        cpu_s: dict[str, float] = {k: 0.0 for k in ws}
        await relay_turn(ws["channels"], "tput")  # warm-up (loads the set)
        await relay_turn(ws["asgi"], "tput")
        spy = None
        if self.profile:
            raw.bench("profile/start")
            if self.py_spy:
                spy = subprocess.Popen([self.py_spy, "record", "-p", str(raw.pid), "-r", "200", "-f", "raw",
                                        "-o", str(VAR / "py-spy-app_raw.txt"), "--nonblocking"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(self.p["tput_rounds"]):
            for name in ("app", "channels", "asgi", "asgi_yield"):
                c0 = servers[name].cpu()
                if name == "app":
                    t = await ws_turn(ws[name], message, None)
                else:
                    t = await relay_turn(ws[name], "tput", each_turn=name == "asgi_yield")
                await asyncio.sleep(0.05)  # let the server finish its bookkeeping before reading its CPU
                cpu_s[name] += servers[name].cpu() - c0
                rounds[name].append(t)
        if self.profile:
            if spy is not None:
                spy.send_signal(2)
                spy.wait(timeout=30)
            self.profile_save(raw, "app_raw")
        for w in ws.values():
            await w.close()
        out: dict[str, Any] = {"events_per_stream": rec.events,
                               "client_cpu_share": round((time.process_time() - client_cpu0) / (time.perf_counter() - wall0), 2)}
        for name, turns in rounds.items():
            rates = [t.events / t.end for t in turns if t.end]
            events = sum(t.events for t in turns)
            out[name] = {**integrity(turns), "events": events, "events_per_s_median": round(pct(rates, 50) or 0),
                         "events_per_s_best": round(max(rates)) if rates else None,
                         "stream_ms_median": ms(pct([t.end for t in turns if t.end], 50)),
                         "cpu_s": round(cpu_s[name], 3), "cpu_per_event_us": per_event_us(cpu_s[name], events),
                         "cpu_per_1000_events_ms": round(cpu_s[name] / events * 1e6, 1) if events else None}
        out["cpu_ratio_app_channels"] = ratio(out["app"]["cpu_per_event_us"], out["channels"]["cpu_per_event_us"])
        out["cpu_ratio_app_asgi"] = ratio(out["app"]["cpu_per_event_us"], out["asgi"]["cpu_per_event_us"])
        out["rate_ratio_app_channels"] = ratio(out["app"]["events_per_s_median"], out["channels"]["events_per_s_median"])
        out["cpu_ratio_app_asgi_yield"] = ratio(out["app"]["cpu_per_event_us"], out["asgi_yield"]["cpu_per_event_us"])
        self.results["throughput"] = out

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

    # -- 3. concurrent conversations --
    async def concurrent(self) -> None:
        app, ch, asgi = self.servers["app"], self.servers["channels"], self.servers["asgi"]
        await self.record(app, self.tokens[0], "paced100", PACED)
        out: dict[str, Any] = {}
        turns_each = self.p["conc_turns"]
        for level in self.p["levels"]:
            rng = random.Random(level)
            plan = [(rng.uniform(0, 1.0), [rng.uniform(0.1, 0.4) for _ in range(turns_each)]) for _ in range(level)]
            row: dict[str, Any] = {}
            for name, server in (("app", app), ("channels", ch), ("asgi", asgi)):
                row[name] = await self._level(name, server, level, plan)
            row["server_added_first_event_p99_ms"] = round(row["app"]["first_event_p99_ms"] - row["asgi"]["first_event_p99_ms"], 2)
            row["server_added_first_event_p50_ms"] = round(row["app"]["first_event_p50_ms"] - row["asgi"]["first_event_p50_ms"], 2)
            row["cpu_ratio_app_channels"] = ratio(row["app"]["cpu_per_event_us"], row["channels"]["cpu_per_event_us"])
            out[str(level)] = row
            log(f"  {level} concurrent: app p99 first event {row['app']['first_event_p99_ms']} ms, "
                f"bare ASGI {row['asgi']['first_event_p99_ms']} ms; {row['app']['events_per_s']} events/s")
        self.results["concurrent"] = out

    async def _level(self, name: str, server: Server, level: int, plan: list[tuple[float, list[float]]]) -> dict[str, Any]:
        socks = await asyncio.gather(*(ws_open(server.ws_url, self.tokens[i] if name == "app" else None) for i in range(level)))
        turns: list[Turn] = []
        sse: list[Turn] = []

        async def client(i: int) -> None:
            start, thinks = plan[i]
            await asyncio.sleep(start)
            conv = None
            for think in thinks:
                if name == "app":
                    t = await ws_turn(socks[i], PACED, conv)
                    conv = t.conversation_id
                else:
                    t = await relay_turn(socks[i], "paced100", pace=True)
                turns.append(t)
                await asyncio.sleep(think)

        async def sse_client() -> None:  # one SSE client alongside the websockets
            await asyncio.sleep(0.5)
            for _ in range(len(plan[0][1])):
                sse.append(await sse_turn(server.port, self.tokens[N_USERS - 1], PACED, None))
                await asyncio.sleep(0.2)

        cpu = CPU(server)
        t0, client_cpu0 = time.perf_counter(), time.process_time()
        await asyncio.gather(*(client(i) for i in range(level)), *((sse_client(),) if name == "app" else ()))
        wall = time.perf_counter() - t0
        client_share = (time.process_time() - client_cpu0) / wall
        used = cpu.used()[server.name]
        for s in socks:
            await s.close()
        summary = stream_summary(turns + sse, used)
        summary.update(latency(turns))  # latency of the websocket turns; SSE separately below
        summary["events_per_s"] = round(summary["events"] / wall)
        summary["server_cpu_share"] = round(used / wall, 2)
        summary["client_cpu_share"] = round(client_share, 2)
        if sse:
            summary["sse"] = {**latency(sse), **integrity(sse)}
        return summary

    # -- 4. idle authenticated sockets --
    async def idle(self) -> None:
        n = self.p["idle"]
        out: dict[str, Any] = {"sockets": n}
        for name in ("app", "channels", "asgi"):
            server = self.servers[name]
            if name == "app":
                server.bench("gc")
            await asyncio.sleep(1.0)
            rss0 = server.rss()
            socks = []
            t0 = time.perf_counter()
            for i in range(0, n, 50):  # 100 users x 10 sockets (the per-user socket limit is 20)
                socks += await asyncio.gather(*(ws_open(server.ws_url, self.tokens[j % 100] if name == "app" else None) for j in range(i, min(n, i + 50))))
            opened = time.perf_counter() - t0
            await asyncio.sleep(2.0)
            if name == "app":
                server.bench("gc")
                await asyncio.sleep(0.5)
            rss1 = server.rss()
            for k in range(0, len(socks), 100):
                await asyncio.gather(*(s.close() for s in socks[k:k + 100]))
            out[name] = {"rss_before_mib": round(rss0 / 2**20, 1), "rss_after_mib": round(rss1 / 2**20, 1),
                         "kib_per_socket": round((rss1 - rss0) / n / 1024, 1), "open_s": round(opened, 2)}
            await asyncio.sleep(1.0)
        out["ratio_app_channels"] = ratio(out["app"]["kib_per_socket"], out["channels"]["kib_per_socket"])
        self.results["idle"] = out

    # -- 5. DB writes per turn --
    async def dbwrites(self) -> None:
        app = self.servers["app"]
        ws = await ws_open(app.ws_url, self.tokens[3])
        out: dict[str, Any] = {}
        for label, message in (("instant", "bench:tokens=500"), ("100_tok_s", "bench:tokens=500,rate=100"),
                               ("paced_conversation_turn2", "bench:tokens=500,rate=100")):
            conv = out.get("_conv") if label == "paced_conversation_turn2" else None
            await asyncio.sleep(0.5)
            s0 = app.bench("stats")
            t = await ws_turn(ws, message, conv, timeout=60)
            await asyncio.sleep(0.5)
            s1 = app.bench("stats")
            out["_conv"] = t.conversation_id
            by_table = {k: s1["writes_by_table"].get(k, 0) - s0["writes_by_table"].get(k, 0) for k in s1["writes_by_table"]}
            hb = s1["db_heartbeat_writes"] - s0["db_heartbeat_writes"]
            out[label] = {"ok": t.ok, "tokens": 500, "events": t.events, "turn_ms": ms(t.end),
                          "db_writes": s1["db_writes"] - s0["db_writes"] - hb, "heartbeat_writes": hb,
                          "db_statements": s1["db_statements"] - s0["db_statements"],
                          "writes_by_table": {k: v for k, v in by_table.items() if v}}
        out.pop("_conv")
        await ws.close()
        self.results["dbwrites"] = out

    # -- 6. message 1 against message 1,000 --
    async def history(self) -> None:
        app = self.servers["app"]
        user = 4
        filled = json.loads(manage(self.db_env, "-m", "tests.bench.dbsetup", "prefill", str(user), "999").splitlines()[-1])
        # message 100: the history window (HISTORY_MESSAGE_LIMIT) is already full, so 100 -> 1,000 is pure growth
        filled100 = json.loads(manage(self.db_env, "-m", "tests.bench.dbsetup", "prefill", str(user), "99").splitlines()[-1])
        convs = {"message_1": None, "message_100": filled100["conversation_id"], "message_1000": filled["conversation_id"]}
        ws = await ws_open(app.ws_url, self.tokens[user])
        for conv in convs.values():  # warm-up
            await ws_turn(ws, TURN, conv)
        sides: dict[str, dict[str, Any]] = {side: {"turns": [], "cpu": [], "stmts": 0} for side in convs}
        block = 2  # fine interleaving: the machine's other load hits all three sides alike
        for _ in range(max(1, self.p["hist_turns"] // block)):
            for side, conv in convs.items():
                s0, c0 = app.bench("stats"), app.cpu()
                for _ in range(block):
                    sides[side]["turns"].append(await ws_turn(ws, TURN, conv))
                await asyncio.sleep(0.05)
                sides[side]["cpu"].append((app.cpu() - c0) / block)
                sides[side]["stmts"] += app.bench("stats")["db_statements"] - s0["db_statements"]
        if self.profile:  # what message 1,000 costs that message 1 does not: one profile per side
            for side, conv in convs.items():
                app.bench("profile/start")
                for _ in range(20):
                    await ws_turn(ws, TURN, conv)
                self.profile_save(app, f"history-{side}")
        await ws.close()
        out: dict[str, Any] = {"prefilled_messages": filled["messages"]}
        for side, d in sides.items():
            turns = d["turns"]
            # the median block: a garbage collection or a background task landing in one block moves the mean of
            # its side alone (an 8-turn spike once read as 1.3x between two sides that do the same work)
            out[side] = {**latency(turns), **integrity(turns), "cpu_per_turn_ms": round(statistics.median(d["cpu"]) * 1000, 2),
                         "cpu_per_turn_mean_ms": round(sum(d["cpu"]) / len(d["cpu"]) * 1000, 2),
                         "db_statements_per_turn": round(d["stmts"] / len(turns), 1)}
        a, b, c = out["message_1000"], out["message_1"], out["message_100"]
        out["ratio_turn_p50"] = ratio(a["turn_p50_ms"], b["turn_p50_ms"])
        out["ratio_cpu_per_turn"] = ratio(a["cpu_per_turn_ms"], b["cpu_per_turn_ms"])
        out["ratio_first_text_p50"] = ratio(a["first_text_p50_ms"], b["first_text_p50_ms"])
        out["ratio_1000_100_turn_p50"] = ratio(a["turn_p50_ms"], c["turn_p50_ms"])
        out["ratio_1000_100_cpu_per_turn"] = ratio(a["cpu_per_turn_ms"], c["cpu_per_turn_ms"])
        self.results["history"] = out

    # -- 7. the peer: Chainlit streaming the same answer --
    async def peers(self) -> None:
        """The same 2,000-token answer (same words) from Chainlit and from the app, interleaved, CPU per token."""
        n, rounds = self.p["peer_tokens"], self.p["peer_rounds"]
        raw, app = self.servers["app_raw"], self.servers["app"]
        log("  installing / starting the Chainlit peer (its own virtualenv under var/bench)")
        peer = chainlit_server(VAR, VAR / "logs").start()
        # the production server too (Chainlit itself runs on uvicorn): the same app, coalescing off and default
        uv_raw = Server("peers_uvicorn_raw", "tests.bench.asgi_counting:application",
                        app_env(self.db_url, CHAT_COALESCE_WINDOW="0"), VAR / "logs", server="uvicorn").start()
        uv = Server("peers_uvicorn", "tests.bench.asgi_counting:application", self.db_env, VAR / "logs", server="uvicorn").start()
        self.extra_servers = [peer, uv_raw, uv]
        client = ChainlitClient(chainlit_venv(VAR), peer.port)
        message = f"bench:tokens={n}"
        apps = {"app_raw": raw, "app": app, "uvicorn_raw": uv_raw, "uvicorn": uv}
        sockets = {name: await ws_open(server.ws_url, self.tokens[5 + i]) for i, (name, server) in enumerate(apps.items())}
        sides: dict[str, dict[str, Any]] = {k: {"cpu": 0.0, "turns": [], "events": 0, "text_ok": 0}
                                            for k in ("chainlit", *apps)}
        expected = answer_text(n)
        try:
            await asyncio.to_thread(client.turn, n)  # warm-up
            for ws in sockets.values():
                await ws_turn(ws, message, None)
            for _ in range(rounds):
                for name, server in (("chainlit", peer), *apps.items()):
                    c0 = server.cpu()
                    if name == "chainlit":
                        r = await asyncio.to_thread(client.turn, n)
                        t = Turn(ok=True, first_event=r["first_event"], first_text=r["first_event"], end=r["end"], events=r["events"])
                        text_ok = r["text"] == expected
                    else:
                        t = await ws_turn(sockets[name], message, None, timeout=120)
                        text_ok = t.ok and t.text_matches
                    await asyncio.sleep(0.05)  # the server's own bookkeeping after the last frame
                    side = sides[name]
                    side["cpu"] += server.cpu() - c0
                    side["turns"].append(t)
                    side["events"] += t.events
                    side["text_ok"] += int(text_ok)
        finally:
            client.close()
            for w in sockets.values():
                await w.close()
            for srv in (peer, uv_raw, uv):
                srv.stop()
            self.extra_servers = []
        out: dict[str, Any] = {"tokens_per_answer": n, "rounds": rounds}
        for name, side in sides.items():
            turns = side["turns"]
            out[name] = {"cpu_per_token_us": round(side["cpu"] / (n * len(turns)) * 1e6, 1),
                         "frames_per_answer": round(side["events"] / len(turns)), "answers_complete": side["text_ok"],
                         "answer_ms_median": ms(pct([t.end for t in turns if t.end], 50)),
                         "first_event_ms_median": ms(pct([t.first_event for t in turns if t.first_event], 50))}
        out["ratio_coalescing_off"] = ratio(out["app_raw"]["cpu_per_token_us"], out["chainlit"]["cpu_per_token_us"])
        out["ratio_default"] = ratio(out["app"]["cpu_per_token_us"], out["chainlit"]["cpu_per_token_us"])
        out["ratio_coalescing_off_uvicorn"] = ratio(out["uvicorn_raw"]["cpu_per_token_us"], out["chainlit"]["cpu_per_token_us"])
        out["ratio_default_uvicorn"] = ratio(out["uvicorn"]["cpu_per_token_us"], out["chainlit"]["cpu_per_token_us"])
        self.results["peers"] = out

    # -- 8. the same app on daphne and on uvicorn --
    async def servers_compare(self) -> None:
        """Sequential 100-token turns (beside the bare Channels relay on the same server), one uncoalesced stream and
        50 concurrent paced conversations on both servers."""
        out: dict[str, Any] = {}
        started: list[Server] = []
        try:
            for name in ("daphne", "uvicorn"):
                for coalesce, suffix in (("", ""), ("0", "_raw")):
                    env = app_env(self.db_url) if not coalesce else app_env(self.db_url, CHAT_COALESCE_WINDOW="0")
                    srv = Server(f"{name}{suffix}", "tests.bench.asgi_counting:application", env, VAR / "logs", server=name).start()
                    started.append(srv)
            # the bare Channels relay on each server: the 100-token-turn bar compares the app with the relay on the
            # same server (uvicorn's transport costs less per frame than daphne's)
            for name in ("daphne", "uvicorn"):
                started.append(relay_server(f"relay_{name}", VAR / "logs", VAR / "frames", server=name).start())
            self.extra_servers = started
            by = {s.name: s for s in started}
            for name in ("daphne", "uvicorn"):
                out[name] = {}
            await self.record(by["uvicorn"], self.tokens[7], "servers100", TURN)
            # sequential turns, interleaved in blocks of 10
            socks = {k: await ws_open(by[k].ws_url, self.tokens[7]) for k in ("daphne", "uvicorn")}
            relays = {k: await ws_open(by[f"relay_{k}"].ws_url) for k in ("daphne", "uvicorn")}
            seq: dict[str, list[Turn]] = {"daphne": [], "uvicorn": []}
            cpu: dict[str, float] = {"daphne": 0.0, "uvicorn": 0.0, "relay_daphne": 0.0, "relay_uvicorn": 0.0}
            for k in socks:
                for _ in range(5):
                    await ws_turn(socks[k], TURN, None)
                    await relay_turn(relays[k], "servers100")
            for _ in range(max(1, self.p["srv_turns"] // 10)):
                for k in ("daphne", "uvicorn"):
                    c0 = by[k].cpu()
                    conv: int | None = None  # a conversation of 10 turns, as in the sequential scenario (the same bar)
                    for _ in range(10):
                        seq[k].append(t := await ws_turn(socks[k], TURN, conv))
                        conv = t.conversation_id
                    await asyncio.sleep(0.05)
                    cpu[k] += by[k].cpu() - c0
                for k in ("daphne", "uvicorn"):
                    c0 = by[f"relay_{k}"].cpu()
                    for _ in range(10):
                        assert (await relay_turn(relays[k], "servers100")).ok
                    await asyncio.sleep(0.05)
                    cpu[f"relay_{k}"] += by[f"relay_{k}"].cpu() - c0
            for k in socks:
                await socks[k].close()
                await relays[k].close()
                app_ms, relay_ms = round(cpu[k] / len(seq[k]) * 1000, 2), round(cpu[f"relay_{k}"] / len(seq[k]) * 1000, 2)
                out[k]["sequential"] = {**latency(seq[k]), **integrity(seq[k]), "cpu_per_turn_ms": app_ms,
                                        "relay_cpu_per_turn_ms": relay_ms, "over_relay": ratio(app_ms, relay_ms)}
            # one uncoalesced stream: CPU per event and rate
            n = self.p["srv_tput_tokens"]
            socks = {k: await ws_open(by[f"{k}_raw"].ws_url, self.tokens[8]) for k in ("daphne", "uvicorn")}
            tput: dict[str, list[Turn]] = {"daphne": [], "uvicorn": []}
            cpu = {"daphne": 0.0, "uvicorn": 0.0}
            for k in socks:
                await ws_turn(socks[k], f"bench:tokens={n}", None)
            for _ in range(self.p["srv_rounds"]):
                for k in ("daphne", "uvicorn"):
                    c0 = by[f"{k}_raw"].cpu()
                    tput[k].append(await ws_turn(socks[k], f"bench:tokens={n}", None, timeout=120))
                    await asyncio.sleep(0.05)
                    cpu[k] += by[f"{k}_raw"].cpu() - c0
            for k in socks:
                await socks[k].close()
                events = sum(t.events for t in tput[k])
                rates = [t.events / t.end for t in tput[k] if t.end]
                out[k]["throughput"] = {**integrity(tput[k]), "cpu_per_event_us": per_event_us(cpu[k], events),
                                        "events_per_s_median": round(pct(rates, 50) or 0)}
            # 50 concurrent conversations, paced
            rng = random.Random(50)
            plan = [(rng.uniform(0, 1.0), [rng.uniform(0.1, 0.4) for _ in range(self.p["conc_turns"])]) for _ in range(50)]
            for k in ("daphne", "uvicorn"):
                out[k]["concurrent_50"] = await self._level("app", by[k], 50, plan)
            a, b = out["daphne"], out["uvicorn"]
            out["ratio_uvicorn_daphne"] = {
                "cpu_per_turn": ratio(b["sequential"]["cpu_per_turn_ms"], a["sequential"]["cpu_per_turn_ms"]),
                "cpu_per_event": ratio(b["throughput"]["cpu_per_event_us"], a["throughput"]["cpu_per_event_us"]),
                "first_event_p99_50": ratio(b["concurrent_50"]["first_event_p99_ms"], a["concurrent_50"]["first_event_p99_ms"]),
            }
        finally:
            for srv in started:
                srv.stop()
            self.extra_servers = []
        self.results["servers"] = out

    # -- 9. capacity: conversations streaming at 30 tokens/s until the server falls behind --
    async def capacity(self) -> None:
        """Ramp concurrent conversations (each streaming 60-token answers at 30 tokens/s, back to back with a short
        think time) until the first-event p99 passes 100 ms or streams fall behind (an answer > 25% late)."""
        app = self.servers["app"]
        seconds = self.p["cap_seconds"]
        message, expected_s = "bench:tokens=60,rate=30", 60 / 30
        out: dict[str, Any] = {"levels": {}, "message": message, "seconds_per_level": seconds}
        best = 0
        for level in self.p["cap_levels"]:
            socks = []
            for i in range(0, level, 50):
                socks += await asyncio.gather(*(ws_open(app.ws_url, self.tokens[j % N_USERS]) for j in range(i, min(level, i + 50))))
            turns: list[Turn] = []
            stop_at = time.perf_counter() + seconds
            rng = random.Random(level)

            async def conversation(ws: Any) -> None:
                await asyncio.sleep(rng.uniform(0, expected_s))  # spread the starts over one answer
                conv = None
                while time.perf_counter() < stop_at:
                    t = await ws_turn(ws, message, conv, timeout=60)
                    conv = t.conversation_id
                    turns.append(t)
                    await asyncio.sleep(rng.uniform(0.1, 0.3))

            cpu = CPU(app)
            t0, c0 = time.perf_counter(), time.process_time()
            await asyncio.gather(*(conversation(ws) for ws in socks))
            wall = time.perf_counter() - t0
            used = cpu.used()["app"]
            client_share = round((time.process_time() - c0) / wall, 2)
            for k in range(0, len(socks), 100):
                await asyncio.gather(*(ws.close() for ws in socks[k:k + 100]))
            late = sum(1 for t in turns if t.end is None or t.end > expected_s * 1.25)
            lat = latency(turns)
            row = {**lat, **integrity(turns), "late_answers": late, "late_share": round(late / max(len(turns), 1), 3),
                   "server_cpu_share": round(used / wall, 2), "client_cpu_share": client_share}
            ok = (lat["first_event_p99_ms"] or 1e9) <= 100 and row["late_share"] <= 0.01 and row["failed"] == 0
            row["keeps_up"] = ok
            out["levels"][str(level)] = row
            log(f"  {level} conversations: first event p99 {lat['first_event_p99_ms']} ms, late {late}/{len(turns)}, "
                f"server {row['server_cpu_share']} cores, client {client_share}")
            if not ok:
                break
            best = level
            await asyncio.sleep(1.0)
        out["conversations_per_process"] = best
        top = out["levels"].get(str(best), {})
        out["conversations_per_core"] = round(best / top["server_cpu_share"]) if best and top.get("server_cpu_share") else None
        self.results["capacity"] = out

    # -- 10. two processes over PostgreSQL + Redis --
    def redis_scenario(self) -> None:
        import psycopg
        import redis as redis_sync

        # where: the server (its maintenance database), the database to create (and drop) and the Redis DB
        pg = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/test")
        redis_url = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/11")
        db = os.environ.get("BENCH_PG_DB") or f"bench_pagechat_{os.getpid()}"
        admin = psycopg.connect(pg.replace("postgres://", "postgresql://", 1), autocommit=True)
        admin.execute(f'CREATE DATABASE "{db}"')
        url = pg.rsplit("/", 1)[0] + "/" + db
        env = app_env(url, REDIS_URL=redis_url)
        a = b = None
        run_ids: list[str] = []
        try:
            log("migrating the bench database (PostgreSQL) and starting two app processes on Redis")
            tokens = prepare_db(env)
            a = Server("redis_a", "tests.bench.asgi_counting:application", env, VAR / "logs").start()
            b = Server("redis_b", "tests.bench.asgi_counting:application", env, VAR / "logs").start()
            self.extra_servers = [a, b]
            self.results["redis"] = asyncio.run(self._redis(a, b, tokens, run_ids))
        finally:
            for s in (a, b):
                if s is not None:
                    s.stop()
            try:
                r = redis_sync.Redis.from_url(redis_url)
                prefix = env.get("CHAT_REDIS_KEY_PREFIX", "chat:")
                keys = [f"{prefix}run:{rid}" for rid in run_ids] + [f"asgi:group:run.{rid}" for rid in run_ids]
                for k in range(0, len(keys), 500):
                    r.delete(*keys[k:k + 500]) if keys[k:k + 500] else None
                r.close()
            except Exception as exc:
                log(f"redis cleanup failed: {exc}")
            admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
            admin.close()

    async def _redis(self, a: Server, b: Server, tokens: list[str], run_ids: list[str]) -> dict[str, Any]:
        convs, turns_each = self.p["redis_convs"], self.p["redis_turns"]
        message = "bench:tokens=200,rate=200"
        a_turns: list[Turn] = []
        b_turns: list[Turn] = []
        lags: list[float] = []
        mismatched = 0
        resync = 0

        async def conversation(i: int) -> None:
            nonlocal mismatched, resync
            wa, wb = await ws_open(a.ws_url, tokens[i]), await ws_open(b.ws_url, tokens[i])
            await asyncio.sleep(i * 0.05)
            conv = None
            for _ in range(turns_each):
                b_task: list[asyncio.Task[Turn]] = []
                bt = Turn()

                async def follow_b(run_id: str) -> Turn:
                    t0 = time.perf_counter()
                    await wb.send(json.dumps({"type": "chat.resume", "run_id": run_id, "after_seq": 0}))
                    return await read_run(wb, t0, bt, record=True, arrivals=True)

                def on_event(ev: dict[str, Any]) -> None:
                    if ev["seq"] == 1:  # the ack: follow the run from the other process right away
                        run_ids.append(ev["run_id"])
                        b_task.append(asyncio.get_running_loop().create_task(follow_b(ev["run_id"])))

                at = Turn()
                t0 = time.perf_counter()
                await wa.send(send_frame(message, conv))
                await read_run(wa, t0, at, record=True, arrivals=True, on_event=on_event)
                conv = at.conversation_id
                await b_task[0] if b_task else None
                a_turns.append(at)
                b_turns.append(bt)
                if bt.error.startswith("resync"):
                    resync += 1
                if bt.frames != at.frames:
                    mismatched += 1
                lags.extend(bt.arrivals[s] - at.arrivals[s] for s in at.arrivals if s in bt.arrivals)
            await wa.close()
            await wb.close()

        ca, cb = CPU(a), CPU(b)
        t0 = time.perf_counter()
        await asyncio.gather(*(conversation(i) for i in range(convs)))
        wall = time.perf_counter() - t0
        ua, ub = ca.used()["redis_a"], cb.used()["redis_b"]
        return {
            "conversations": convs, "turns_each": turns_each, "message": message,
            "owner_a": {**latency(a_turns), **integrity(a_turns), "events": sum(t.events for t in a_turns),
                        "cpu_per_event_us": per_event_us(ua, sum(t.events for t in a_turns))},
            "follower_b": {**integrity(b_turns), "events": sum(t.events for t in b_turns), "resync_errors": resync,
                           "streams_differing_from_a": mismatched,
                           "cpu_per_event_us": per_event_us(ub, sum(t.events for t in b_turns))},
            "relay_lag_b_minus_a_p50_ms": ms(pct(lags, 50)), "relay_lag_b_minus_a_p99_ms": ms(pct(lags, 99)),
            "wall_s": round(wall, 2),
        }


# ---- report -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", default=os.environ.get("BENCH_QUICK") == "1", help="smaller runs (< 2 min)")
    ap.add_argument("--scenario", action="append", choices=SCENARIOS, help="run only these (repeatable)")
    ap.add_argument("--profile", action="store_true", help="cProfile the app (sequential, throughput and history scenarios; py-spy too, if found, in throughput)")
    ap.add_argument("--py-spy", default=os.environ.get("PY_SPY") or shutil.which("py-spy"), help="py-spy binary for --profile")
    ap.add_argument("--pg-url", help="redis and sources scenarios: PostgreSQL server URL to create their databases through (BENCH_PG_URL)")
    ap.add_argument("--pg-db", help="redis scenario: name of the database it creates and drops (BENCH_PG_DB)")
    ap.add_argument("--redis-url", help="redis scenario: Redis URL with its DB number (BENCH_REDIS_URL, default DB 11)")
    args = ap.parse_args(argv)
    for flag, var in ((args.pg_url, "BENCH_PG_URL"), (args.pg_db, "BENCH_PG_DB"), (args.redis_url, "BENCH_REDIS_URL")):
        if flag:
            os.environ[var] = flag
    chosen = args.scenario or list(SCENARIOS)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # 1,000 sockets on each side; children inherit
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
    mode = "quick" if args.quick else "full"
    bench = Bench(mode, args.profile, args.py_spy)
    started = time.perf_counter()
    runners: dict[str, Callable[[], Awaitable[None]]] = {
        "sequential": bench.sequential, "throughput": bench.throughput, "concurrent": bench.concurrent,
        "idle": bench.idle, "dbwrites": bench.dbwrites, "history": bench.history,
        "peers": bench.peers, "servers": bench.servers_compare, "capacity": bench.capacity,
    }
    load: dict[str, float] = {}
    try:
        bench.start(need_app=any(s not in SERVERLESS for s in chosen))
        for name in chosen:
            log(f"scenario {name}")
            t = time.perf_counter()
            busy0, ours0 = machine_busy(), own_cpu() + bench.servers_cpu()
            if name == "redis":
                bench.redis_scenario()
            elif name == "sources":  # tests/bench/sources.py: SQLite and PostgreSQL, each in a process of its own
                p = PARAMS[mode]
                bench.results["sources"] = sources_bench.measure(p["src_objects"], p["src_rounds"], os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/test").rsplit("/", 1)[0])
            else:
                asyncio.run(runners[name]())
            wall = time.perf_counter() - t
            # CPU the rest of the machine used meanwhile (shared machines: read p99s with this in mind)
            load[name] = round(max(0.0, machine_busy() - busy0 - (own_cpu() + bench.servers_cpu() - ours0)) / wall, 2)
            log(f"  done in {wall:.1f}s (other processes used {load[name]} cores meanwhile)")
    finally:
        bench.stop()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip() or "?"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "chat", "config", "tools", "payloads", "pages"],
                           cwd=ROOT, capture_output=True, text=True).stdout.strip()
    commit += " + uncommitted changes" if dirty else ""
    meta = {"mode": mode, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit,
            "command": "make bench" if mode == "full" and not args.scenario else "python -m tests.bench.run " + " ".join(argv if argv is not None else sys.argv[1:]),
            "machine": f"{os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.system()} {platform.release()}",
            "duration_s": round(time.perf_counter() - started, 1), "scenarios": chosen,
            "other_load_cores": load, "loadavg_at_end": Path("/proc/loadavg").read_text().split()[:3]}
    result = {"meta": meta, "bars": [{"bar": b, "measured": m, "target": t, "result": verdict(ok)} for b, m, t, ok in bars(bench.results)],
              "results": bench.results}
    md = markdown(meta, bench.results)
    if set(chosen) == set(SCENARIOS) and mode == "full":  # only a full run replaces the committed result
        out_dir, stem = RESULTS, "latest"
    else:
        out_dir, stem = VAR, "quick" if set(chosen) == set(SCENARIOS) else "partial"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    (out_dir / f"{stem}.md").write_text(md)
    print(md)
    log(f"wrote {out_dir / stem}.md and .json in {meta['duration_s']}s")
    if stem == "latest":
        readme_write(result)
        log("README.md's Performance table regenerated from it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
