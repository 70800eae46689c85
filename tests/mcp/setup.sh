#!/usr/bin/env bash
# Makes the two venvs of the `mcp` feature's tests, from PyPI, pinned:
# * target/mcp-venv (or AGENT_STATE_MCP_VENV): the MCP server the tests
#   start, on the official Python SDK (requirements.txt: mcp 2.x);
# * target/mcp-reference-venv: LangChain's side of the side-by-side test,
#   langchain with langchain-mcp-adapters, which needs mcp 1.x
#   (reference-requirements.txt; tests/reference/mcp/agent.py).
# Reruns are cheap: pip finds everything installed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"

make_venv() { # <dir> <requirements file>
    if [ ! -x "$1/bin/python" ]; then
        python3 -m venv "$1"
    fi
    "$1/bin/python" -m pip install --quiet --disable-pip-version-check \
        --require-virtualenv -r "$2"
}

venv="${AGENT_STATE_MCP_VENV:-$target/mcp-venv}"
make_venv "$venv" "$here/requirements.txt"
"$venv/bin/python" -c 'import mcp.server.mcpserver, uvicorn'
echo "MCP test venv ready: $venv"

reference="$target/mcp-reference-venv"
make_venv "$reference" "$here/reference-requirements.txt"
"$reference/bin/python" -c 'import langchain.agents, langchain_mcp_adapters'
echo "MCP reference venv ready: $reference"
