#!/usr/bin/env bash
# AG-UI's conformance validator (ag-ui-validate, pinned in
# requirements.txt) against the real server: builds the `serve` example,
# starts it on a free port of 127.0.0.1 with a fresh database, runs the
# validator's own CLI on `POST /ag-ui/assistant` (its default input), then
# validate.py (a conversation, a browser tool handed back and answered, the
# agent's own tool, an interrupt and its resume, each validated live), and
# stops it. Exits non-zero on any error or warning of the validator.
#
# AGUI_VENV=path uses (or creates) the virtualenv there; by default
# target/agui-validate-venv.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
here="$root/server/tests/agui"
venv="${AGUI_VENV:-$root/target/agui-validate-venv}"
if [ ! -x "$venv/bin/ag-ui-validate" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet -r "$here/requirements.txt"
fi
target="${CARGO_TARGET_DIR:-$root/target}"
work="$(mktemp -d)"
cargo build --quiet -p agent-state-server --example serve --manifest-path "$root/Cargo.toml"
log="$work/server.log"
"$target/debug/examples/serve" --port 0 --db "$work/server.db" > "$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
url=""
for _ in $(seq 1 100); do
    url="$(sed -n 's/^listening on \(http:[^ ]*\)$/\1/p' "$log" | head -n 1)"
    [ -n "$url" ] && break
    sleep 0.1
done
if [ -z "$url" ]; then
    echo "the server did not start:" >&2
    cat "$log" >&2
    exit 1
fi
"$venv/bin/ag-ui-validate" "$url/ag-ui/assistant" --no-color --max-warnings 0 \
    --features agentic-chat,shared-state --timeout 30
"$venv/bin/python" "$here/validate.py" "$url"
