#!/usr/bin/env bash
# Creates the venv the `mcp` feature's tests run their MCP server from
# (the official Python SDK, `mcp`, pinned in requirements.txt), at
# target/mcp-venv unless AGENT_STATE_MCP_VENV says where. Reruns are
# cheap: pip finds everything installed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${AGENT_STATE_MCP_VENV:-${CARGO_TARGET_DIR:-$root/target}/mcp-venv}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    --require-virtualenv -r "$here/requirements.txt"
"$venv/bin/python" -c 'import mcp.server.mcpserver, uvicorn'
echo "MCP test venv ready: $venv"
