"""An MCP server for agent-state's MCP tests, on the official Python SDK.

Tools: `add` (two integers), `whoami` (echoes the auth the call carried:
the HTTP header named by `--auth-header`, `authorization` unless set, and
the `_meta` key of that name), `fail` (answers with `isError`), `slow`
(sleeps, for the client's timeout), `cancelled` (how many
`slow` calls were cancelled), `crash` (ends the process, for a
server that dies mid-call).

    server.py stdio [--auth-header NAME]
    server.py http [--auth-header NAME]   # prints "listening on URL"
    server.py schemas                     # prints {tool: inputSchema}, as listed
"""

import argparse
import asyncio
import json
import os
import socket
import sys

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

parser = argparse.ArgumentParser()
parser.add_argument("transport", choices=["stdio", "http", "schemas"])
parser.add_argument("--auth-header", default="authorization")
options = parser.parse_args()

server = MCPServer("agent-state-test", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> str:
    """Adds two integers."""
    return str(a + b)


@server.tool()
def whoami(ctx: Context) -> str:
    """Says which credentials the call carried."""
    headers = ctx.headers
    meta = ctx.request_context.meta
    seen = {
        "header": None if headers is None else headers.get(options.auth_header),
        "meta": None if meta is None else meta.get(options.auth_header),
        "label": os.environ.get("AGENT_STATE_LABEL"),
    }
    return json.dumps(seen, sort_keys=True)


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason given."""
    raise ToolError(f"refused: {reason}")


cancelled_calls = []


@server.tool()
async def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        cancelled_calls.append(seconds)
        raise
    return "done"


@server.tool()
def cancelled() -> str:
    """How many `slow` calls the client cancelled."""
    return str(len(cancelled_calls))


@server.tool()
def crash() -> str:
    """Ends the server process mid-call."""
    os._exit(3)


def serve_http() -> None:
    """Serves streamable HTTP on an ephemeral port, printed once bound."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    app = server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning")
    print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if options.transport == "stdio":
    server.run("stdio")
elif options.transport == "schemas":
    listed = asyncio.run(server.list_tools())
    print(json.dumps({tool.name: tool.input_schema for tool in listed}, sort_keys=True))
else:
    serve_http()
    sys.exit(0)
