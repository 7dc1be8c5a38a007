"""The bench's report: the quality bars, the results as Markdown, and the README's Performance table.

`python -m tests.bench.report --check` (run by `make lint`) fails when the README's table is not the one
rendered from tests/bench/results/latest.json; `--write` regenerates it (a full `make bench` does that itself).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
LATEST = Path(__file__).resolve().parent / "results" / "latest.json"
START, END = "<!-- bench-results:start -->", "<!-- bench-results:end -->"


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a is not None and b else None


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


def bars(r: dict[str, Any]) -> list[tuple[str, str, str, bool | None]]:
    """(bar, measured, target, pass) for every quality bar that the scenarios run measured."""
    rows: list[tuple[str, str, str, bool | None]] = []
    s = r.get("sequential")
    if s:
        sa = s["server_added"]
        rows.append(("Server-added time to first event, p50, one client", f"{sa['first_event_p50_ms']} ms (app {s['app']['first_event_p50_ms']} - bare ASGI {s['asgi']['first_event_p50_ms']})", "<= 5 ms", sa["first_event_p50_ms"] <= 5))
        rows.append(("Server-added time to first event, p99, one client", f"{sa['first_event_p99_ms']} ms (app {s['app']['first_event_p99_ms']} - bare ASGI {s['asgi']['first_event_p99_ms']})", "<= 25 ms", sa["first_event_p99_ms"] <= 25))
        rows.append(("Server-added time to first text, p50 / p99, one client (instant model)", f"{sa['first_text_p50_ms']} / {sa['first_text_p99_ms']} ms", "(reported)", None))
    c = r.get("concurrent", {}).get("50")
    if c:
        rows.append(("Server-added time to first event, p99, 50 concurrent (daphne)", f"{c['server_added_first_event_p99_ms']} ms (app {c['app']['first_event_p99_ms']} - bare ASGI {c['asgi']['first_event_p99_ms']})", "<= 25 ms", c["server_added_first_event_p99_ms"] <= 25))
    t = r.get("throughput")
    if t:
        rows.append(("Server CPU per delivered event (one stream, coalescing off)", f"{t['app']['cpu_per_event_us']} us (bare Channels {t['channels']['cpu_per_event_us']}, bare ASGI {t['asgi']['cpu_per_event_us']})", "<= 50 us", t["app"]["cpu_per_event_us"] <= 50))
        rows.append(("CPU ratio app / bare Channels relay (same frames)", f"{t['cpu_ratio_app_channels']}x (app / bare ASGI {t['cpu_ratio_app_asgi']}x)", "<= 1.5", t["cpu_ratio_app_channels"] <= 1.5))
        rows.append(("One stream sustains", f"{t['app']['events_per_s_median']} events/s (bare Channels {t['channels']['events_per_s_median']}, bare ASGI {t['asgi']['events_per_s_median']})", ">= 5,000 events/s", t["app"]["events_per_s_median"] >= 5000))
    i = r.get("idle")
    if i:
        rows.append(("Memory per idle authenticated socket", f"{i['app']['kib_per_socket']} KiB (bare Channels {i['channels']['kib_per_socket']}, bare ASGI {i['asgi']['kib_per_socket']})", "<= 64 KiB", i["app"]["kib_per_socket"] <= 64))
    d = r.get("dbwrites")
    if d:
        worst = max(v["db_writes"] for v in d.values())
        rows.append(("DB writes, 500-token turn (instant / 100 tok/s / 2nd turn at 100 tok/s; heartbeat apart)", f"{d['instant']['db_writes']} / {d['100_tok_s']['db_writes']} / {d['paced_conversation_turn2']['db_writes']}", "<= 12", worst <= 12))
    h = r.get("history")
    if h:
        rows.append(("Turn cost at message 1,000 / message 1 (wall p50; server CPU)", f"{h['ratio_turn_p50']}x; {h['ratio_cpu_per_turn']}x (1,000 / 100: {h['ratio_1000_100_turn_p50']}x; {h['ratio_1000_100_cpu_per_turn']}x)", "<= 1.1x", max(h["ratio_turn_p50"] or 0, h["ratio_cpu_per_turn"] or 0) <= 1.1))
    pe = r.get("peers")
    if pe:
        if "ratio_coalescing_off_uvicorn" in pe:  # evaluated on the production server (Chainlit runs on uvicorn too)
            rows.append(("Server CPU per token against Chainlit 2.12, coalescing off (same 2,000-token answer; uvicorn, the production server)", f"{pe['ratio_coalescing_off_uvicorn']}x on uvicorn, {pe['ratio_coalescing_off']}x on daphne ({pe['uvicorn_raw']['cpu_per_token_us']} / {pe['app_raw']['cpu_per_token_us']} / {pe['chainlit']['cpu_per_token_us']} us)", "<= 0.35x", pe["ratio_coalescing_off_uvicorn"] <= 0.35))
            rows.append(("Server CPU per token against Chainlit 2.12, default configuration (uvicorn, the production server)", f"{pe['ratio_default_uvicorn']}x on uvicorn, {pe['ratio_default']}x on daphne ({pe['uvicorn']['cpu_per_token_us']} / {pe['app']['cpu_per_token_us']} / {pe['chainlit']['cpu_per_token_us']} us)", "<= 0.10x", pe["ratio_default_uvicorn"] <= 0.10))
        else:  # results written before the uvicorn sides existed
            rows.append(("Server CPU per token against Chainlit 2.12, coalescing off (same 2,000-token answer)", f"{pe['ratio_coalescing_off']}x ({pe['app_raw']['cpu_per_token_us']} / {pe['chainlit']['cpu_per_token_us']} us)", "<= 0.35x", pe["ratio_coalescing_off"] <= 0.35))
            rows.append(("Server CPU per token against Chainlit 2.12, default configuration", f"{pe['ratio_default']}x ({pe['app']['cpu_per_token_us']} / {pe['chainlit']['cpu_per_token_us']} us)", "<= 0.10x", pe["ratio_default"] <= 0.10))
    sv = r.get("servers")
    if sv:
        u, dd = sv["uvicorn"], sv["daphne"]
        rows.append(("Server CPU per event, coalescing off, on uvicorn (the production server)", f"{u['throughput']['cpu_per_event_us']} us (daphne {dd['throughput']['cpu_per_event_us']} us)", "<= 30 us", u["throughput"]["cpu_per_event_us"] <= 30))
        rows.append(("Server-added time to first event, p99, 50 concurrent, uvicorn", f"{u['concurrent_50']['first_event_p99_ms']} ms (daphne {dd['concurrent_50']['first_event_p99_ms']} ms; client-side, including the bare transport)", "<= 25 ms", u["concurrent_50"]["first_event_p99_ms"] <= 25))
    if sv and "over_relay" in sv["uvicorn"]["sequential"]:  # each server against the relay on the same server
        sd, su = sv["daphne"]["sequential"], sv["uvicorn"]["sequential"]
        seq_note = f"; sequential scenario, daphne: {s['cpu_per_turn_ratio_app_channels']}x" if s else ""
        rows.append(("Server CPU per 100-token turn (production configuration) / bare Channels relay on the same server",
                     f"{sd['over_relay']}x on daphne, {su['over_relay']}x on uvicorn ({sd['cpu_per_turn_ms']} / {sd['relay_cpu_per_turn_ms']} ms, "
                     f"{su['cpu_per_turn_ms']} / {su['relay_cpu_per_turn_ms']} ms{seq_note})", "<= 2x",
                     max(sd["over_relay"] or 99, su["over_relay"] or 99) <= 2))
    elif s and sv:  # results written before the servers scenario ran the relay on both servers
        bare = s["channels"]["cpu_per_turn_ms"]
        rows.append(("Server CPU per 100-token turn (production configuration) / bare Channels relay", f"{ratio(s['app']['cpu_per_turn_ms'], bare)}x on daphne, {ratio(sv['uvicorn']['sequential']['cpu_per_turn_ms'], bare)}x on uvicorn ({s['app']['cpu_per_turn_ms']} / {sv['uvicorn']['sequential']['cpu_per_turn_ms']} / {bare} ms)", "<= 2x", (ratio(sv['uvicorn']['sequential']['cpu_per_turn_ms'], bare) or 99) <= 2))
    bu = r.get("burst")
    if bu:
        bd, bv = bu["daphne"], bu["uvicorn"]
        rows.append((f"Burst: {bu['conversations']} conversations send in the same instant, first event p99 from that instant (daphne, one process)",
                     f"{bd['first_event_p99_ms']} ms (p50 {bd['first_event_p50_ms']}; uvicorn p50 / p99 {bv['first_event_p50_ms']} / {bv['first_event_p99_ms']} ms)",
                     "<= 100 ms", bd["first_event_p99_ms"] <= 100))
    cap = r.get("capacity")
    if cap:
        rows.append(("Capacity: conversations streaming at 30 tokens/s per process (first-event p99 <= 100 ms, no answer late)", f"{cap['conversations_per_process']} per process, {cap['conversations_per_core']} per core of server CPU", "(reported)", None))
    so = r.get("sources")
    if so:
        rows += source_bars(so)
    lost = dup = ooo = mism = 0
    for turnset in _integrity_blocks(r):
        lost += turnset.get("gaps", 0) + turnset.get("missing_terminal", 0)
        dup += turnset.get("duplicates", 0)
        ooo += turnset.get("out_of_order", 0)
        mism += turnset.get("text_mismatch", 0)
    extra = ""
    if "redis" in r:
        extra = f"; Redis follower: {r['redis']['follower_b']['resync_errors']} resync errors, {r['redis']['follower_b']['streams_differing_from_a']} streams differing"
    rows.append(("Lost / duplicated / out-of-order events (all scenarios)", f"{lost} / {dup} / {ooo}; streamed != persisted text: {mism}{extra}", "0 / 0 / 0",
                 lost == dup == ooo == mism == 0 and ("redis" not in r or (r["redis"]["follower_b"]["resync_errors"] == 0 and r["redis"]["follower_b"]["streams_differing_from_a"] == 0))))
    return rows


SOURCE_P50_MS = 100  # a search the assistant runs before it answers: a person should not wait on it
SOURCE_PRECISION = 0.9  # tests/tools/test_sources.py holds the shipped corpus to the same bar
SOURCE_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


def source_bars(so: dict[str, Any]) -> list[tuple[str, str, str, bool | None]]:
    """The sources scenario's bars: search time at its object count on each backend, and precision of the top 8."""
    b = so["backends"]
    n = f"{so['objects']:,}"
    times = "; ".join(f"{SOURCE_NAMES.get(k, k)} {x['p50_ms']} / {x['p95_ms']} ms" for k, x in b.items())
    prec = "; ".join(f"{SOURCE_NAMES.get(k, k)} {x['precision_at_8']} (no match: {x['no_match_correct']} / {x['no_match_total']} empty)" for k, x in b.items())
    return [
        (f"Source search at {n} objects, p50 / p95 (demo queries, top 8; SQLite FTS5, PostgreSQL full-text)", times,
         f"p50 <= {SOURCE_P50_MS} ms", all(x["p50_ms"] <= SOURCE_P50_MS for x in b.values())),
        (f"Source search precision of the top 8 at {n} objects (demo queries)", prec, f">= {SOURCE_PRECISION}, no-match queries empty",
         all(x["precision_at_8"] >= SOURCE_PRECISION and x["no_match_correct"] == x["no_match_total"] for x in b.values())),
    ]


def _integrity_blocks(r: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            if "gaps" in x and "duplicates" in x:
                out.append(x)
            for v in x.values():
                if isinstance(v, dict):
                    walk(v)

    walk(r)
    return out


def markdown(meta: dict[str, Any], r: dict[str, Any]) -> str:
    L = [f"# Benchmark results ({meta['mode']})", "",
         f"`{meta['command']}` on {meta['date']}, commit `{meta['commit']}`, {meta['machine']}. "
         "Every number is measured from the client side, app and baselines side by side in one run; "
         "server CPU is the server process's own run time, summed over its threads at nanosecond resolution (`/proc/<pid>/task/*/schedstat`). Compare ratios, not absolute times. "
         f"Other processes on this shared machine used, per scenario, {', '.join(f'{k} {v}' for k, v in meta['other_load_cores'].items())} cores "
         "(read p99s with that in mind).", "",
         "| Bar | Measured | Target | Result |", "|---|---|---|---|"]
    for name, measured, target, ok in bars(r):
        L.append(f"| {name} | {measured} | {target} | {verdict(ok)} |")
    s = r.get("sequential")
    if s:
        L += ["", "## One client, sequential turns (100-token instant model)", "",
              "| | first event p50 / p99 | first text p50 / p99 | turn p50 | server CPU per turn |", "|---|---|---|---|---|"]
        for name, label in (("app", "app (websocket)"), ("sse", "app (SSE)"), ("channels", "bare Channels relay"), ("asgi", "bare ASGI relay")):
            x = s[name]
            L.append(f"| {label} | {x['first_event_p50_ms']} / {x['first_event_p99_ms']} ms | {x['first_text_p50_ms']} / {x['first_text_p99_ms']} ms | {x['turn_p50_ms']} ms | {x['cpu_per_turn_ms']} ms |")
        L.append(f"\n{s['app']['turns']} turns per server (a turn is {s['app']['events'] // max(s['app']['turns'], 1)} coalesced events); app DB writes per turn {s['app']['db_writes_per_turn']}, SQL statements per turn {s['app']['db_statements_per_turn']}.")
        split = s["app"].get("cpu_per_turn_by_thread_ms")
        if split:  # results from before the split was measured have none
            L.append("The app's server CPU per turn by thread: " + ", ".join(f"{k} {v} ms" for k, v in split.items())
                     + " (chat-ack stores the message, its run and the empty answer before the acknowledgement; chat-runs holds the run's own database work).")
        f = s.get("fixed")
        if f:  # where the 100-token turn's CPU goes: a fixed part per turn, and a part per token
            L.append(f"A turn's fixed cost: a 1-token turn costs {f['cpu_per_1_token_turn_ms']} ms of server CPU ("
                     + ", ".join(f"{k} {v} ms" for k, v in f["cpu_per_1_token_turn_by_thread_ms"].items())
                     + f"), and each further token {f['cpu_per_token_us']} us ({f['turns']} turns of each, interleaved with 100-token turns"
                     + f" that cost {f['cpu_per_100_token_turn_ms']} ms). The bare Channels relay's whole turn costs {s['channels']['cpu_per_turn_ms']} ms.")
    t = r.get("throughput")
    if t:
        L += ["", f"## One stream, instant model, coalescing off ({t['events_per_stream']} events per stream)", "",
              "| | events/s (median) | stream time | CPU per event | CPU per 1,000 events |", "|---|---|---|---|---|"]
        for name, label in (("app", "app"), ("channels", "bare Channels relay"), ("asgi", "bare ASGI relay"),
                            ("asgi_yield", "bare ASGI relay, one frame per loop turn")):
            x = t[name]
            L.append(f"| {label} | {x['events_per_s_median']} | {x['stream_ms_median']} ms | {x['cpu_per_event_us']} us | {x['cpu_per_1000_events_ms']} ms |")
        L.append(f"\nRatios: CPU app / bare Channels {t['cpu_ratio_app_channels']}x, app / bare ASGI {t['cpu_ratio_app_asgi']}x, "
                 f"app / bare ASGI one frame per loop turn {t['cpu_ratio_app_asgi_yield']}x; rate app / bare Channels {t['rate_ratio_app_channels']}x. "
                 f"The bench client used {t['client_cpu_share']} of a core.")
    c = r.get("concurrent")
    if c:
        L += ["", "## Concurrent conversations (100 tokens at 100 tokens/s per turn; baselines replay the recorded run at its pace)", "",
              "| conversations | app first event p50 / p99 | bare Channels p50 / p99 | bare ASGI p50 / p99 | app first text p99 | app events/s | CPU per event app / Channels / ASGI | server / client CPU (cores) | SSE first event p50 / p99 |", "|---|---|---|---|---|---|---|---|---|"]
        for level, row in c.items():
            a, ch, b = row["app"], row["channels"], row["asgi"]
            L.append(f"| {level} | {a['first_event_p50_ms']} / {a['first_event_p99_ms']} ms | {ch['first_event_p50_ms']} / {ch['first_event_p99_ms']} ms | {b['first_event_p50_ms']} / {b['first_event_p99_ms']} ms | {a['first_text_p99_ms']} ms | {a['events_per_s']} | {a['cpu_per_event_us']} / {ch['cpu_per_event_us']} / {b['cpu_per_event_us']} us | {a['server_cpu_share']} / {a['client_cpu_share']} | {a.get('sse', {}).get('first_event_p50_ms')} / {a.get('sse', {}).get('first_event_p99_ms')} ms |")
    i = r.get("idle")
    if i:
        L += ["", f"## {i['sockets']} idle sockets (RSS delta of the server process)", "", "| | KiB per socket | RSS before -> after |", "|---|---|---|"]
        for name, label in (("app", "app (token-authenticated)"), ("channels", "bare Channels"), ("asgi", "bare ASGI")):
            x = i[name]
            L.append(f"| {label} | {x['kib_per_socket']} | {x['rss_before_mib']} -> {x['rss_after_mib']} MiB |")
    d = r.get("dbwrites")
    if d:
        L += ["", "## DB writes per 500-token turn", "",
              "Writes are the turn's INSERT/UPDATE/DELETE statements; the process heartbeat (one UPDATE per "
              "CHAT_HEARTBEAT_INTERVAL for all of its running runs, not per turn) is shown apart.", "",
              "| turn | writes | all SQL statements | by table |", "|---|---|---|---|"]
        for label, x in d.items():
            L.append(f"| {label} ({x['turn_ms']} ms) | {x['db_writes']} (+{x['heartbeat_writes']} heartbeat) | {x['db_statements']} | {', '.join(f'{k}: {v}' for k, v in x['writes_by_table'].items())} |")
    h = r.get("history")
    if h:
        L += ["", f"## Message 1 vs message 1,000 of one conversation ({h['prefilled_messages']} messages prefilled)", "",
              "| | turn p50 | first event p50 | first text p50 | server CPU per turn (median of 2-turn blocks; mean) | SQL per turn |", "|---|---|---|---|---|---|"]
        for side in ("message_1", "message_100", "message_1000"):
            x = h[side]
            L.append(f"| {side.replace('_', ' ')} | {x['turn_p50_ms']} ms | {x['first_event_p50_ms']} ms | {x['first_text_p50_ms']} ms | {x['cpu_per_turn_ms']} ms; {x.get('cpu_per_turn_mean_ms', '-')} ms | {x['db_statements_per_turn']} |")
        L.append(f"\nRatios 1,000 / 1: turn {h['ratio_turn_p50']}x, CPU {h['ratio_cpu_per_turn']}x, first text {h['ratio_first_text_p50']}x. "
                 f"Growth alone, 1,000 / 100 (both with a full {60}-message history window): turn {h['ratio_1000_100_turn_p50']}x, CPU {h['ratio_1000_100_cpu_per_turn']}x.")
    pe = r.get("peers")
    if pe:
        L += ["", f"## Against Chainlit 2.12 (the same {pe['tokens_per_answer']}-token answer, same words, {pe['rounds']} interleaved rounds)", "",
              "Chainlit runs as its docs run it (`chainlit run app.py --headless`: uvicorn) from its own virtualenv, streaming with "
              "`msg.stream_token`; its socket.io client is the one its web app uses. Server CPU per token of the answer:", "",
              "| | CPU per token | frames per answer | answer time (median) | complete answers |", "|---|---|---|---|---|"]
        for name, label in (("chainlit", "Chainlit 2.12 (uvicorn)"), ("app_raw", "app, coalescing off (daphne)"), ("app", "app, default configuration (daphne)"),
                            ("uvicorn_raw", "app, coalescing off (uvicorn)"), ("uvicorn", "app, default configuration (uvicorn)")):
            if name not in pe:
                continue
            x = pe[name]
            L.append(f"| {label} | {x['cpu_per_token_us']} us | {x['frames_per_answer']} | {x['answer_ms_median']} ms | {x['answers_complete']} / {pe['rounds']} |")
        L.append(f"\nRatios app / Chainlit: {pe['ratio_coalescing_off']}x with coalescing off, {pe['ratio_default']}x by default (daphne)"
                 + (f"; {pe['ratio_coalescing_off_uvicorn']}x and {pe['ratio_default_uvicorn']}x on uvicorn." if "ratio_default_uvicorn" in pe else "."))
    sv = r.get("servers")
    if sv:
        L += ["", "## The same app on daphne and on uvicorn (uvloop, httptools, websockets)", "",
              "| server | CPU per 100-token turn | first event p50 / p99 (sequential) | CPU per event, coalescing off | events/s, one stream | first event p99, 50 concurrent |",
              "|---|---|---|---|---|---|"]
        for name in ("daphne", "uvicorn"):
            x = sv[name]
            relay = f" (bare Channels relay {x['sequential']['relay_cpu_per_turn_ms']} ms, {x['sequential']['over_relay']}x)" if "over_relay" in x["sequential"] else ""
            L.append(f"| {name} | {x['sequential']['cpu_per_turn_ms']} ms{relay} | {x['sequential']['first_event_p50_ms']} / {x['sequential']['first_event_p99_ms']} ms | "
                     f"{x['throughput']['cpu_per_event_us']} us | {x['throughput']['events_per_s_median']} | {x['concurrent_50']['first_event_p99_ms']} ms |")
        q = sv["ratio_uvicorn_daphne"]
        L.append(f"\nuvicorn / daphne: CPU per turn {q['cpu_per_turn']}x, CPU per event {q['cpu_per_event']}x, first-event p99 at 50 concurrent {q['first_event_p99_50']}x.")
    bu = r.get("burst")
    if bu:
        L += ["", f"## A burst: {bu['conversations']} conversations send in the same instant (`{bu['message']}`, {bu['rounds']} rounds; "
              "the first round starts new conversations, the others go on with them)", "",
              "Each first event is timed from the burst's instant, before the client writes the first of its frames.", "",
              "| server | first event p50 / p99 | first text p99 | first event p50 / slowest, by round | failed | server CPU (cores) |", "|---|---|---|---|---|---|"]
        for name in ("daphne", "uvicorn"):
            x = bu[name]
            by_round = ", ".join(f"{q['first_event_p50_ms']} / {q['first_event_max_ms']}" for q in x["per_round"])
            L.append(f"| {name} | {x['first_event_p50_ms']} / {x['first_event_p99_ms']} ms | {x['first_text_p99_ms']} ms | {by_round} ms | {x['failed']} | {x['server_cpu_share']} |")
    cap = r.get("capacity")
    if cap:
        L += ["", f"## Capacity (`{cap['message']}` answers back to back, {cap['seconds_per_level']} s per level, daphne, SQLite)", "",
              "| conversations | first event p50 / p99 | late answers | failed | server CPU (cores) | bench client CPU (cores) |", "|---|---|---|---|---|---|"]
        for level, x in cap["levels"].items():
            L.append(f"| {level} | {x['first_event_p50_ms']} / {x['first_event_p99_ms']} ms | {x['late_answers']} / {x['turns']} | {x['failed']} | {x['server_cpu_share']} | {x['client_cpu_share']} |")
        L.append(f"\nConversations per process: {cap['conversations_per_process']}; per core of server CPU: {cap['conversations_per_core']}. "
                 "The bench client shares the machine's cores with the server: on 2 cores it is part of the limit.")
    so = r.get("sources")
    if so:
        sm = meta.get("sources")
        where = (f" (`{sm['command']}` on {sm['date']}, commit `{sm['commit']}`; other processes, the database server included, "
                 f"used {sm['other_load_cores']} cores)") if sm else ""
        L += ["", f"## Source search at {so['objects']:,} objects (the demo's articles source){where}", "",
              f"The shipped corpus copied to {so['objects']:,} objects, each index rebuilt with `chat_sources_rebuild`, then "
              f"`source_search` (top 8) over the {next(iter(so['backends'].values()))['queries']} demo queries of `search_quality`, {so['rounds']} rounds after a warm-up round.", "",
              "| backend | search p50 / p95 | precision of the top 8 | no-match queries empty | searches | seeding | index rebuild |",
              "|---|---|---|---|---|---|---|"]
        for k, x in so["backends"].items():
            L.append(f"| {SOURCE_NAMES.get(k, k)} | {x['p50_ms']} / {x['p95_ms']} ms | {x['precision_at_8']} | {x['no_match_correct']} / {x['no_match_total']} | "
                     f"{x['searches']} | {x['seed_s']} s | {x['index_s']} s |")
    x = r.get("redis")
    if x:
        a, b = x["owner_a"], x["follower_b"]
        L += ["", "## Two processes over PostgreSQL + Redis (runs started on A, followed from B with chat.resume)", "",
              f"{x['conversations']} conversations x {x['turns_each']} turns (`{x['message']}`): A delivered {a['events']} events, "
              f"B relayed {b['events']}; B gaps {b['gaps']}, duplicates {b['duplicates']}, out of order {b['out_of_order']}, "
              f"failed {b['failed']}, resync errors {b['resync_errors']}, streams differing from A {b['streams_differing_from_a']}. "
              f"Relay lag B - A p50 {x['relay_lag_b_minus_a_p50_ms']} ms, p99 {x['relay_lag_b_minus_a_p99_ms']} ms. "
              f"A first event p50 / p99 {a['first_event_p50_ms']} / {a['first_event_p99_ms']} ms; CPU per event A {a['cpu_per_event_us']} us, B {b['cpu_per_event_us']} us."]
    return "\n".join(L) + "\n"


def readme_table(result: dict[str, Any]) -> str:
    """The README's block: where the numbers come from, then every bar."""
    meta = result["meta"]
    lines = [START,
             f"Generated from [tests/bench/results/latest.json](tests/bench/results/latest.json) (`{meta['command']}`, "
             f"{meta['date']}, commit `{meta['commit']}`, {meta['machine']}; other processes used "
             f"{max(meta['other_load_cores'].values(), default=0)} cores at most during a scenario"
             + (f"; source search: `{meta['sources']['command']}`, {meta['sources']['date']}, commit `{meta['sources']['commit']}`, "
                f"other processes {meta['sources']['other_load_cores']} cores" if "sources" in meta else "")
             + "). Every scenario: "
             "[tests/bench/results/latest.md](tests/bench/results/latest.md).", "",
             "| Bar | Measured | Target | Result |", "|---|---|---|---|"]
    lines += [f"| {b['bar']} | {b['measured']} | {b['target']} | {b['result']} |" for b in result["bars"]]
    lines.append(END)
    return "\n".join(lines)


def readme_with_table(readme: str, result: dict[str, Any]) -> str:
    """`readme` with its bench block replaced by the one rendered from `result`."""
    head, rest = readme.split(START, 1)
    _, tail = rest.split(END, 1)
    return head + readme_table(result) + tail


def readme_write(result: dict[str, Any]) -> None:
    README.write_text(readme_with_table(README.read_text(), result))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="fail when the README's table differs from the results file")
    ap.add_argument("--write", action="store_true", help="rewrite the README's table from the results file")
    args = ap.parse_args(argv)
    result = json.loads(LATEST.read_text())
    current = README.read_text()
    wanted = readme_with_table(current, result)
    if args.write:
        README.write_text(wanted)
        return 0
    if current != wanted:
        print("README.md's Performance table differs from tests/bench/results/latest.json: "
              "run `python -m tests.bench.report --write` (or a full `make bench`)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
