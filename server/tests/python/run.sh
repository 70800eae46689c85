#!/usr/bin/env bash
# The official Python client (langgraph-sdk, pinned in requirements.txt)
# against the real server: builds the `serve` example, starts it on a free
# port of 127.0.0.1 with a fresh database, runs test_sdk.py, stops it.
# Prints "N passed, N failed"; exits non-zero on a failure.
#
# SDK_VENV=path uses (or creates) the virtualenv there; by default
# target/server-sdk-venv. SDK_POSTGRES=conninfo runs the server on that
# PostgreSQL database (an empty one) instead of a SQLite file.
# SDK_EXAMPLE=name and SDK_TEST=file run another example and test (the
# `owned` example with test_auth.py: custom auth).
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
here="$root/server/tests/python"
venv="${SDK_VENV:-$root/target/server-sdk-venv}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet -r "$here/requirements.txt"
fi
target="${CARGO_TARGET_DIR:-$root/target}"
work="$(mktemp -d)"
features=()
store=(--db "$work/server.db")
if [ -n "${SDK_POSTGRES:-}" ]; then
    features=(--features postgres)
    store=(--postgres "$SDK_POSTGRES")
fi
example="${SDK_EXAMPLE:-serve}"
cargo build --quiet -p agent-state-server "${features[@]}" --example "$example" --manifest-path "$root/Cargo.toml"
log="$work/server.log"
"$target/debug/examples/$example" --port 0 "${store[@]}" > "$log" 2>&1 &
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
    echo "0 passed, 1 failed"
    exit 1
fi
"$venv/bin/python" "$here/${SDK_TEST:-test_sdk.py}" "$url"
