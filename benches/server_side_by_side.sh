#!/usr/bin/env bash
# The Agent Server (examples/debate_server, graph `debate`) beside
# LangGraph's own dev server (`langgraph dev`, benches/langgraph/server) on
# the same scripted debate, driven the same way over HTTP by one client
# (server/benches/agent_server_load): time to the first event, runs/s with
# 1 and with N clients, the server's resident memory and CPU per run.
#
#   bash benches/server_side_by_side.sh [--clients 16] [--seconds 10]
#        [--samples 20] [--rounds 2] [--postgres]
#
# Each server is started here on a free port of 127.0.0.1 with fresh state,
# measured alone, and stopped (also on failure or ^C). `--postgres` adds
# our server on a throwaway PostgreSQL (initdb + pg_ctl, Unix socket only;
# `debate_server --pg`). RUST_SERVER overrides our server's command (its
# flags but --addr, --db and --pg; default: the release `debate_server`, built here, with
# --token-delay-ms 0 --log warn). Needs python3 with venv and PyPI (the
# venv target/server-bench-venv, from benches/langgraph/server-requirements.txt).
# Writes target/server_side_by_side/{*.json,table.md}. Not in .ci/run: a
# few minutes.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
clients=16 seconds=10 samples=20 rounds=2 postgres=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --clients) clients="$2"; shift 2 ;;
        --seconds) seconds="$2"; shift 2 ;;
        --samples) samples="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        --postgres) postgres=1; shift ;;
        *) echo "usage: $0 [--clients N] [--seconds S] [--samples N] [--rounds N] [--postgres]" >&2; exit 2 ;;
    esac
done

say() { echo "server_side_by_side: $*" >&2; }
fail() { say "$*"; exit 1; }
for tool in python3 curl cargo; do
    command -v "$tool" >/dev/null || fail "needs $tool on PATH"
done
target="${CARGO_TARGET_DIR:-$root/target}"
out="$target/server_side_by_side"
venv="$target/server-bench-venv"
mkdir -p "$out"
work="$(mktemp -d "${TMPDIR:-/tmp}/server-side-by-side.XXXXXX")"
server_pid="" pg_stop="" db_pid=""

stop_server() {
    if [[ -n "$server_pid" ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}
cleanup() {
    stop_server
    if [[ -n "$pg_stop" ]]; then eval "$pg_stop" >/dev/null 2>&1 || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The official server's venv, refilled only when the pins change.
pins="benches/langgraph/server-requirements.txt"
if ! cmp -s "$pins" "$venv/installed-requirements.txt" 2>/dev/null; then
    say "installing $pins into $venv"
    [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv" || fail "python3 -m venv failed"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$pins" \
        || fail "pip install -r $pins failed"
    cp "$pins" "$venv/installed-requirements.txt"
fi

say "building the load client (and our server unless RUST_SERVER is set)"
cargo bench -q -p agent-state-server --bench agent_server_load --no-run 2>"$work/build.log" \
    || { cat "$work/build.log" >&2; fail "the load client did not build"; }
if [[ -z "${RUST_SERVER:-}" ]]; then
    cargo build -q --release -p debate-server || fail "debate_server did not build"
    RUST_SERVER="$target/release/debate_server --token-delay-ms 0 --log warn"
fi

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits for `listening on URL` in $1 from $server_pid; prints the URL.
wait_listening() {
    local url=""
    for _ in $(seq 1 300); do
        url="$(sed -n 's/^listening on \(http:[^ ]*\)$/\1/p' "$1" | head -n 1)"
        [[ -n "$url" ]] && { echo "$url"; return; }
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    cat "$1" >&2
    fail "the server did not start (log above)"
}

# Waits until $1/ok answers (LangGraph's server prints no fixed line).
wait_ok() {
    for _ in $(seq 1 600); do
        curl -sf "$1/ok" >/dev/null 2>&1 && return
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.2
    done
    tail -n 40 "$2" >&2
    fail "langgraph dev did not answer $1/ok (log above)"
}

# measure LABEL FILE URL [FLAGS..]: the load client against the server
# running now.
measure() {
    say "measuring $1 ($3, pid $server_pid)"
    cargo bench -q -p agent-state-server --bench agent_server_load -- run \
        --url "$3" --pid "$server_pid" --label "$1" --out "$out/$2.json" \
        --graph debate --input "{\"topic\": \"Should AI be regulated?\", \"maxRounds\": $rounds}" \
        --expect status=completed --expect round="$rounds" \
        --samples "$samples" --clients "1,$clients" --seconds "$seconds" "${@:4}" \
        2>"$work/$2.client.log" || { cat "$work/$2.client.log" >&2; fail "measuring $1 failed"; }
}

official() {
    mkdir -p "$work/official"
    cp benches/langgraph/server/langgraph.json benches/langgraph/server/debate.py "$work/official/"
    local port log="$work/official.log"
    port="$(free_port)"
    (cd "$work/official" && exec env LANGSMITH_TRACING=false LANGGRAPH_CLI_NO_ANALYTICS=1 \
        "$venv/bin/langgraph" dev --no-browser --no-reload --allow-blocking \
        --host 127.0.0.1 --port "$port") >"$log" 2>&1 &
    server_pid=$!
    wait_ok "http://127.0.0.1:$port" "$log"
    measure "langgraph dev" official "http://127.0.0.1:$port"
    stop_server
}

# ours LABEL FILE STORE-FLAGS..: our server on a fresh store; $db_pid, if
# set, is its database server's.
ours() {
    local label="$1" file="$2" log="$work/$2.log" url
    shift 2
    mkdir -p "$work/$file"
    # RUST_SERVER is a command line: split on spaces on purpose.
    # shellcheck disable=SC2086
    (cd "$work/$file" && exec $RUST_SERVER --addr 127.0.0.1:0 "$@") >"$log" 2>&1 &
    server_pid=$!
    url="$(wait_listening "$log")" || exit 1
    measure "$label" "$file" "$url" ${db_pid:+--db-pid "$db_pid"}
    stop_server
}

# A throwaway PostgreSQL on a Unix socket in $work/pg; sets pg_url.
start_postgres() {
    local bin data="$work/pg/data" as=()
    bin="$(dirname "$(command -v initdb || ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)")"
    [[ -x "$bin/initdb" && -x "$bin/pg_ctl" ]] || fail "--postgres needs initdb and pg_ctl (apt-get install postgresql)"
    mkdir -p "$work/pg"
    if [[ "$(id -u)" == 0 ]]; then
        # The server refuses to run as root: its files go to `postgres`,
        # who must reach them through $work (mktemp made it 0700).
        chmod 755 "$work"
        chown postgres:postgres "$work/pg"
        as=(runuser -u postgres --)
    fi
    "${as[@]}" "$bin/initdb" -D "$data" -A trust -U postgres -E UTF8 --no-sync >"$work/pg.log" 2>&1 \
        || { cat "$work/pg.log" >&2; fail "initdb failed"; }
    "${as[@]}" "$bin/pg_ctl" -D "$data" -o "-c listen_addresses='' -k $work/pg -p 5432" \
        -l "$work/pg/server.log" -w start >>"$work/pg.log" 2>&1 \
        || { cat "$work/pg.log" >&2; fail "PostgreSQL did not start"; }
    pg_stop="${as[*]} $bin/pg_ctl -D $data -m immediate stop"
    pg_url="host=$work/pg port=5432 user=postgres dbname=postgres"
    db_pid="$(head -n 1 "$data/postmaster.pid")"
}

official
ours "agent-state (SQLite)" sqlite --db debate.db
reports=("$out/official.json" "$out/sqlite.json")
if [[ "$postgres" == 1 ]]; then
    start_postgres
    ours "agent-state (PostgreSQL)" postgres --pg "$pg_url"
    reports+=("$out/postgres.json")
fi

{
    echo "\`bash benches/server_side_by_side.sh --clients $clients --seconds $seconds --samples $samples --rounds $rounds$([[ $postgres == 1 ]] && echo ' --postgres')\`, $(date -u +%Y-%m-%d), $(nproc) cores"
    echo
    cargo bench -q -p agent-state-server --bench agent_server_load -- table "${reports[@]}"
} >"$out/table.md"
echo
cat "$out/table.md"
