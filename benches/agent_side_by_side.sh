#!/usr/bin/env bash
# Agent-loop benchmark: LangChain's `create_agent` (Python) against
# agent-state's agent (Rust) on the same scripted model ↔ tools loop (see
# benches/langgraph/agent.py for the workload), µs per turn and the ratio.
#
#   bash benches/agent_side_by_side.sh [--turns 10,100] [--repeat K]
#
# The arguments go unchanged to both halves:
#   * benches/langgraph/agent.py, in the venv at target/langgraph-venv that
#     this script creates and fills from benches/langgraph/requirements.txt
#     (langchain 1.4.7 on langgraph 1.2.22; needs python3 with venv and pip,
#     and PyPI);
#   * cargo bench --bench agent -- ARGS.
# Both print `<impl>,<mode>,<turns>,<us_per_turn>` CSV lines, kept in
# target/agent_side_by_side/; benches/langgraph/agent_table.py prints the
# table. Not part of .ci/run (a minute or two).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

venv="target/langgraph-venv"
out="target/agent_side_by_side"
mkdir -p "$out"

if [[ ! -x "$venv/bin/python" ]]; then
    echo "agent_side_by_side: creating $venv" >&2
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r benches/langgraph/requirements.txt

echo "agent_side_by_side: running LangChain (benches/langgraph/agent.py $*)" >&2
"$venv/bin/python" benches/langgraph/agent.py "$@" | tee "$out/langchain.csv"

echo "agent_side_by_side: running agent-state (cargo bench --bench agent -- $*)" >&2
cargo bench --bench agent -- "$@" | tee "$out/agent-state.out"
grep '^agent-state,' "$out/agent-state.out" >"$out/agent-state.csv"

echo
"$venv/bin/python" benches/langgraph/agent_table.py "$out/langchain.csv" "$out/agent-state.csv"
