"""A real MCP server for the tests, built with the SDK's MCPServer (v1's FastMCP); run as its own process.

`python tests/tools/mcp_server_app.py` serves stdio; `... http PORT` streamable HTTP on 127.0.0.1:PORT/mcp.
"""
from __future__ import annotations

import asyncio
import hashlib
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("testtools", log_level="WARNING")


@server.tool()
async def count(n: int, ctx: Context) -> str:
    """Count to n, reporting progress at each step."""
    for i in range(n):
        await ctx.report_progress(i + 1, n, f"counted {i + 1}")
        await asyncio.sleep(0.02)
    return f"counted to {n}"


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then answer (for timeouts)."""
    await asyncio.sleep(seconds)
    return "woke up"


@server.tool()
def whoami(ctx: Context) -> str:
    """Which credentials reached the server: a digest of the X-Api-Key header and of the env variable TOKEN."""
    def digest(value: str | None) -> str:
        return hashlib.sha256(value.encode()).hexdigest()[:12] if value else "none"

    headers = {k.lower(): v for k, v in dict(ctx.headers or {}).items()}
    return f"header={digest(headers.get('x-api-key'))} env={digest(os.environ.get('TOKEN'))}"


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("the tool broke")


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def wipe(target: str) -> str:
    """Deletes something (destructive)."""
    return f"wiped {target}"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
