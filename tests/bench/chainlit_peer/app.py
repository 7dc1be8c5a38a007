"""The peer: a Chainlit app streaming the bench answer token by token (`msg.stream_token`), as a Chainlit
developer would write it. Run by the bench in Chainlit's own virtualenv: `chainlit run app.py --headless`."""
from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import chainlit as cl

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repo root, for tests.bench.words only
from tests.bench.words import token_text

DIRECTIVE = re.compile(r"bench:tokens=(\d+)")


@cl.on_message
async def on_message(message: cl.Message) -> None:
    """Stream `bench:tokens=N` tokens as fast as the server relays them (yielding between tokens, like ours)."""
    m = DIRECTIVE.search(message.content)
    n = int(m.group(1)) if m else 100
    msg = cl.Message(content="")
    for i in range(n):
        await asyncio.sleep(0)  # a real stream yields to the loop between network reads (so does our bench model)
        await msg.stream_token(token_text(i))
    await msg.send()
