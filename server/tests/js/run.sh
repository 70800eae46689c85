#!/usr/bin/env bash
# The official JS client (@langchain/langgraph-sdk, pinned in package.json
# and package-lock.json) against the real server: builds the `serve`
# example, starts it on a free port of 127.0.0.1 with a fresh database,
# runs test_sdk.mjs with node, stops it. Prints "N passed, N failed";
# exits non-zero on a failure.
#
# The client is installed with `npm ci` (the lockfile's exact versions)
# into node_modules here when it is missing.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
here="$root/server/tests/js"
if [ ! -d "$here/node_modules/@langchain/langgraph-sdk" ]; then
    (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi
cargo build --quiet -p agent-state-server --example serve --manifest-path "$root/Cargo.toml"
target="${CARGO_TARGET_DIR:-$root/target}"
work="$(mktemp -d)"
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
    echo "0 passed, 1 failed"
    exit 1
fi
node "$here/test_sdk.mjs" "$url"
