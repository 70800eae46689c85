#!/usr/bin/env bash
# Many Agent Servers on one PostgreSQL: runs per second and time to first
# event for 1, 2 and 4 server processes (the `serve` example, release
# build) on one throwaway PostgreSQL database (initdb + pg_ctl, Unix
# socket only, stopped at the end), and the cost of a failover (kill -9 of
# the server running a background run, to the run's first event on
# another server). The client is server/benches/fleet.
#
#   bash benches/fleet.sh [--servers 1,2,4] [--runs 400] [--clients 32]
#        [--samples 30] [--failovers 3] [--lease-ms 2000]
#
# Needs PostgreSQL's server binaries (see tests/support/pg.rs). Not in
# .ci/run: a few minutes.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
cargo build --release -p agent-state-server --features postgres --example serve
cargo bench -p agent-state-server --features postgres --bench fleet -- \
    --serve "$target/release/examples/serve" "$@"
