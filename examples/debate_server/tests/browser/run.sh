#!/usr/bin/env bash
# The debate server's page in a real headless browser: builds the server,
# starts it on a free port with a fresh database, and drives the page in
# Debian's chromium (`apt-get install chromium`; `CHROMIUM` names another
# binary) through playwright-core, which downloads no browser. Prints
# "N passed, N failed"; fails when any test does.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../../../.."

cargo build --quiet -p debate-server
# The pinned playwright-core, from the lockfile.
[ -d "$here/node_modules/playwright-core" ] || (cd "$here" && npm ci --no-audit --no-fund --silent)

dir="$(mktemp -d)"
# 20 ms between tokens: slow enough to see a turn being written.
"${CARGO_TARGET_DIR:-target}/debug/debate_server" --addr 127.0.0.1:0 \
    --db "$dir/debates.db" --token-delay-ms 20 --log warn > "$dir/out" 2> "$dir/log" &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 100); do grep -q "^listening on " "$dir/out" && break; sleep 0.1; done
url="$(sed -n 's/^listening on //p' "$dir/out")"
[ -n "$url" ] || { echo "the server did not start:" >&2; cat "$dir/log" >&2; exit 1; }

node "$here/test.mjs" "$url" "$dir/profile"
