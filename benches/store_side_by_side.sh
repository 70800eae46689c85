#!/usr/bin/env bash
# Store benchmark: LangGraph's InMemoryStore, SqliteStore and PostgresStore
# (Python) against agent-state's MemoryStore, SqliteStore and PostgresStore
# (Rust) on the same work (benches/langgraph/store.py's docstring: put,
# get, a filtered search of one namespace among 100, a semantic search),
# µs per operation and the ratio, from one run.
#
#   bash benches/store_side_by_side.sh [--n 100000] [--backends memory,sqlite,postgres]
#
# PostgreSQL: a throwaway server from Debian's binaries, on a Unix socket
# in a temporary directory, stopped at the end (both halves use it, each
# on a database of its own). SQLite: both halves on WAL with
# synchronous=NORMAL (the durability of agent-state's store); LangGraph's
# default journal is shown too (`sqlite-fsync`). Not part of .ci/run
# (several minutes).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
n=100000
backends="memory,sqlite,postgres"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --n) n="$2"; shift 2 ;;
        --backends) backends="$2"; shift 2 ;;
        *) echo "usage: $0 [--n N] [--backends memory,sqlite,postgres]" >&2; exit 2 ;;
    esac
done
venv="target/langgraph-venv"
out="target/store_side_by_side"
mkdir -p "$out"
: > "$out/lines.jsonl"
[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r benches/langgraph/requirements.txt -r benches/langgraph/store-requirements.txt
cargo build --release --quiet --bench store --features postgres

pg_dir=""
# The server refuses to run as root: as root, it runs as `postgres`.
as_pg=()
if [[ "$(id -u)" == 0 ]]; then as_pg=(runuser -u postgres --); fi
stop_pg() {
    if [[ -n "$pg_dir" ]]; then
        "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast stop >/dev/null 2>&1 || true
        rm -rf "$pg_dir"
    fi
}
trap stop_pg EXIT
if [[ ",$backends," == *",postgres,"* ]]; then
    pg_bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
    pg_dir="$(mktemp -d)"
    if [[ ${#as_pg[@]} -gt 0 ]]; then chown postgres:postgres "$pg_dir"; fi
    "${as_pg[@]}" "$pg_bin/initdb" -D "$pg_dir/data" -U postgres >/dev/null
    "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -o "-k $pg_dir -c listen_addresses=''" \
        -l "$pg_dir/log" -w start >/dev/null
    for db in langgraph agent_state; do
        "$pg_bin/psql" -h "$pg_dir" -U postgres -qc "CREATE DATABASE $db" postgres
    done
fi

for backend in ${backends//,/ }; do
    lg_url="host=$pg_dir user=postgres dbname=langgraph"
    rs_url="host=$pg_dir user=postgres dbname=agent_state"
    echo "store_side_by_side: LangGraph, $backend" >&2
    "$venv/bin/python" benches/langgraph/store.py --backend "$backend" --n "$n" --pg-url "$lg_url" \
        | tee -a "$out/lines.jsonl"
    if [[ "$backend" == sqlite ]]; then
        "$venv/bin/python" benches/langgraph/store.py --backend sqlite --sqlite-journal langgraph \
            --n "$n" | tee -a "$out/lines.jsonl"
    fi
    echo "store_side_by_side: agent-state, $backend" >&2
    cargo bench --quiet --bench store --features postgres -- --backend "$backend" --n "$n" \
        --pg-url "$rs_url" | grep '^{' | tee -a "$out/lines.jsonl"
done
echo
"$venv/bin/python" benches/langgraph/store_table.py "$out/lines.jsonl"
