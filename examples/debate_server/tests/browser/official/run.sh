#!/usr/bin/env bash
# The page against LangGraph's own server (`langgraph dev`, pinned in
# requirements.txt, in a venv under the target directory) serving the same
# debate written in Python: the tests that do not restart our server or
# need its bounds pass there too, so the page is a LangGraph client and
# not a client of ours only. Not part of CI (it downloads the official
# server from PyPI); run by hand.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../../../../.."
venv="${CARGO_TARGET_DIR:-$root/target}/langgraph-dev"
[ -x "$venv/bin/langgraph" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q -r "$here/requirements.txt"; }
[ -d "$here/../node_modules/playwright-core" ] || (cd "$here/.." && npm ci --no-audit --no-fund --silent)

dir="$(mktemp -d)"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
cd "$here"
DEBATE_PAGE="$root/examples/debate_server/src/page.html" "$venv/bin/langgraph" dev --no-browser \
    --no-reload --allow-blocking --host 127.0.0.1 --port "$port" > "$dir/log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$dir" "$here/.langgraph_api"' EXIT
for _ in $(seq 120); do curl -sf "http://127.0.0.1:$port/ok" > /dev/null && break; sleep 0.5; done
node "$here/../test.mjs" --url "http://127.0.0.1:$port" "$dir"
