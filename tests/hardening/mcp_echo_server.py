"""An MCP server whose one tool answers with the text it is given (tests/hardening/test_data_fence.py).

`python tests/hardening/mcp_echo_server.py PORT` serves streamable HTTP on 127.0.0.1:PORT/mcp.
"""
from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("echo", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Answer with `text`, unchanged."""
    return text


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
