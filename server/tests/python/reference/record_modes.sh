#!/usr/bin/env bash
# Records the official server's streams that server/tests/modes.rs
# compares with ours, into server/tests/fixtures/official_mode_*.sse.
# Start LangGraph's server on modes.py first (in this directory):
#   langgraph dev --config langgraph.modes.json --no-browser --no-reload \
#       --allow-blocking --port 2024
# then: B=http://127.0.0.1:2024 ./record_modes.sh
set -euo pipefail
B="${B:-http://127.0.0.1:2024}"
out="$(cd "$(dirname "$0")/../../fixtures" && pwd)"
new_thread() {
    curl -sf -X POST "$B/threads" -H 'content-type: application/json' -d '{}' |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["thread_id"])'
}
record() { # name graph modes input [more body]
    thread="${thread_for_next:-$(new_thread)}"
    curl -sf -N -X POST "$B/threads/$thread/runs/stream" -H 'content-type: application/json' \
        -d "{\"assistant_id\": \"$2\", \"stream_mode\": $3, \"input\": $4 ${5:-}}" \
        > "$out/official_mode_$1.sse"
    echo "$1: $(grep -c '^event' "$out/official_mode_$1.sse") events"
}
chat='{"messages": [{"type": "human", "content": "hi"}]}'
record debug pair '["debug"]' '{"topic": "x"}'
record messages_values chat '["messages", "values"]' "$chat"
record messages_complete reply '["messages"]' "$chat"
record several chat '["messages", "values", "messages-tuple"]' "$chat"
record events_pair pair '["events"]' '{"topic": "x"}'
record events_chat chat '["events"]' "$chat"
record events_nest nest '["events"]' '{"n": 1}' ', "stream_subgraphs": true'
record subgraphs nest '["values", "updates"]' '{"n": 1}' ', "stream_subgraphs": true'
record subgraphs_debug nest '["debug", "messages-tuple", "tasks"]' '{"n": 1}' ', "stream_subgraphs": true'
# A run that pauses, then its resume on the same thread.
thread_for_next="$(new_thread)"
record events_approval approval '["events", "updates"]' '{"topic": "x"}'
record events_approval_resume approval '["events", "updates"]' 'null' ', "command": {"resume": true}'
# A subgraph that pauses, then its resume.
thread_for_next="$(new_thread)"
record subgraph_pause ask '["values", "updates"]' '{"answer": ""}' ', "stream_subgraphs": true'
record subgraph_resume ask '["values", "updates"]' 'null' ', "command": {"resume": "because"}, "stream_subgraphs": true'
# A paused approval answered with `command.resume` together with `update`
# and `goto` (one run each, on a thread of its own).
for case in 'resume_update:{"resume": true, "update": {"log": ["upd"]}}' \
    'resume_goto:{"resume": true, "goto": "draft"}' \
    'resume_update_goto:{"resume": false, "update": {"topic": "y"}, "goto": ["draft"]}'; do
    thread_for_next="$(new_thread)"
    record "command_${case%%:*}_pause" approval '["values", "updates"]' '{"topic": "x"}'
    record "command_${case%%:*}" approval '["values", "updates"]' 'null' ", \"command\": ${case#*:}"
    rm "$out/official_mode_command_${case%%:*}_pause.sse"
done
