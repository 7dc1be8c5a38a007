"""docs/examples/ws_client.py, the program client the protocol reference shows, run as a user would run it against a
live server: a turn with a tool, approvals answered both ways, `chat.resume` from a seq, and a connection cut mid-run
by a proxy, after which the client reconnects and prints the rest of the answer exactly once."""
from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from tests.e2e.conftest import ROOT, LiveServer
from tests.interop.test_standard_clients import _token

CLIENT = ROOT / "docs" / "examples" / "ws_client.py"


@pytest.fixture(scope="module")
def server(start_live_server: Callable[..., LiveServer]) -> LiveServer:
    return start_live_server("example_client", CHAT_OFFLINE_DELAY="0.03")


def run_client(server_url: str, token: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    ws_url = server_url.replace("http://", "ws://") + "/api/ws/"
    return subprocess.run([sys.executable, str(CLIENT), "--url", ws_url, "--token", token, *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def answer_of(server: LiveServer, run_id: str) -> str:
    return str(server.wait_for_row("SELECT m.content FROM pagechat_message m JOIN pagechat_run r ON r.assistant_message_id = m.id "
                                   "WHERE r.id = ? AND r.status = 'completed'", run_id.replace("-", ""))[0])


def printed_run(stdout: str) -> tuple[int, str]:
    m = re.search(r"\[conversation (\d+), run ([0-9a-f-]+)\]", stdout)
    assert m, stdout
    return int(m.group(1)), m.group(2)


def test_a_turn_with_a_tool_streams_to_its_complete(server: LiveServer) -> None:
    done = run_client(server.url, _token(server, "demo"), "What is 17*23+4?")
    assert done.returncode == 0, done.stderr
    _conversation, run_id = printed_run(done.stdout)
    # every streamed word, as stored, the tool's card where the server marked its place
    card = '[tool calculate {"expression": "17*23+4"}]'
    assert answer_of(server, run_id).replace("[[tool:0]]", card) in done.stdout and "17*23+4 = 395." in done.stdout

    # the same run again from after its acknowledgement: the rest of its events, then its end
    again = run_client(server.url, _token(server, "demo"), "--resume", run_id, "--after", "1")
    assert again.returncode == 0, again.stderr
    assert answer_of(server, run_id).replace("[[tool:0]]", card) in again.stdout and printed_run(again.stdout)[1] == run_id


@pytest.mark.parametrize("choice", ["--approve", "--deny"])
def test_a_tool_that_asks_is_answered_by_the_flag(server: LiveServer, choice: str) -> None:
    stream_id, name = server.query("SELECT s.id, s.name FROM pagechat_demo_researchstream s JOIN auth_user u ON u.id = s.owner_id "
                                   "WHERE u.username = 'demo' ORDER BY s.id LIMIT 1")[0]
    new_name = "Oncology Watch" if choice == "--approve" else "Cardiology Watch"
    done = run_client(server.url, _token(server, "demo"), "--page", "streams_list", choice, f"rename stream {stream_id} to {new_name}")
    assert done.returncode == 0, done.stderr
    approved = choice == "--approve"
    assert f"[{'approved' if approved else 'denied'}: rename_stream]" in done.stdout
    stored = server.query("SELECT name FROM pagechat_demo_researchstream WHERE id = ?", stream_id)[0][0]
    assert stored == (new_name if approved else name)


class CuttingProxy:
    """A TCP proxy to the server that cuts its first connection right after forwarding the first `text_delta`."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.connections = 0
        self.cut = threading.Event()
        self.loop = asyncio.new_event_loop()
        self.port = 0
        ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait(10)

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        cut_this = self.connections == 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, watch: bool) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
                    if watch and b'"text_delta"' in data:
                        self.cut.set()
                        raise ConnectionResetError("cut by the test")
            except (ConnectionError, OSError):
                pass
            finally:
                for w in (writer, up_writer):
                    w.close()

        await asyncio.gather(pipe(reader, up_writer, False), pipe(up_reader, writer, cut_this))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture
def proxy(server: LiveServer) -> Iterator[CuttingProxy]:
    port = int(server.url.rsplit(":", 1)[1])
    p = CuttingProxy(port)
    yield p
    p.close()


def test_a_connection_cut_mid_answer_is_resumed_without_a_gap_or_a_repeat(server: LiveServer, proxy: CuttingProxy) -> None:
    done = run_client(f"http://127.0.0.1:{proxy.port}", _token(server, "demo"), "hello, what can you do here?")
    assert done.returncode == 0, done.stderr
    assert proxy.cut.is_set() and proxy.connections == 2, (proxy.connections, done.stderr)
    assert "[connection lost" in done.stderr
    _conversation, run_id = printed_run(done.stdout)
    answer = answer_of(server, run_id)
    assert len(answer) > 100 and done.stdout.count(answer) == 1, (answer, done.stdout)  # the whole answer, once
    assert server.query("SELECT COUNT(*) FROM pagechat_run WHERE id = ?", run_id.replace("-", ""))[0][0] == 1


def test_without_a_server_it_says_so_and_fails() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    done = subprocess.run([sys.executable, str(CLIENT), "--url", f"ws://127.0.0.1:{port}/api/ws/", "--token", "x", "--retries", "2", "hi"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "gave up reconnecting" in done.stderr
