#!/usr/bin/env bash
# The debate server's page in a real headless browser: builds the server;
# test.mjs starts it on a free port with a fresh database and drives the
# page in Debian's chromium (`apt-get install chromium`; `CHROMIUM` names
# another binary) through playwright-core, which downloads no browser.
# Prints "N passed, N failed"; fails when any test does.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../../../.."

cargo build --quiet -p debate-server
# The pinned playwright-core, from the lockfile.
[ -d "$here/node_modules/playwright-core" ] || (cd "$here" && npm ci --no-audit --no-fund --silent)

dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
# The test starts the server itself (on a free port, a fresh database in
# $dir), to kill and restart it under the page.
node "$here/test.mjs" "${CARGO_TARGET_DIR:-target}/debug/debate_server" "$dir"
