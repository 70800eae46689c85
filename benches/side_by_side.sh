#!/usr/bin/env bash
# Side-by-side benchmark: LangGraph (Python) against agent-state (Rust) on the
# same scripted three-agent debate (see benches/langgraph/debate.py for the
# workload), and a Markdown table of the two.
#
#   bash benches/side_by_side.sh [--rounds 10,100,1000] [--repeat K]
#
# The arguments go unchanged to both halves:
#   * benches/langgraph/debate.py, in a venv at target/langgraph-venv that
#     this script creates and fills from benches/langgraph/requirements.txt
#     (needs python3 with venv and pip, and PyPI);
#   * cargo bench --bench side_by_side -- ARGS, which prints
#     `agent-state,<none|sqlite>,<rounds>,<us_per_step>` lines on stdout.
#     (cargo also passes `--bench` to a harness = false target: accept it.)
# Each side writes CSV lines `<impl>,<mode>,<rounds>,<us_per_step>`, kept in
# target/side_by_side/; benches/langgraph/table.py pairs LangGraph `none`
# with agent-state `none`, and LangGraph `memory` (InMemorySaver) with
# agent-state `sqlite` (a SQLite-file checkpointer, i.e. we persist to disk
# and they do not).
#
# Slow (about a minute for LangGraph alone at the default rounds, most of it
# the 1000-round checkpointed run) and not part of .ci/run.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

venv="target/langgraph-venv"
out="target/side_by_side"
lg_csv="$out/langgraph.csv"
rs_raw="$out/agent-state.out"
rs_csv="$out/agent-state.csv"
mkdir -p "$out"

# --- LangGraph --------------------------------------------------------------
if [[ ! -x "$venv/bin/python" ]]; then
    echo "side_by_side: creating $venv" >&2
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r benches/langgraph/requirements.txt

echo "side_by_side: running LangGraph (benches/langgraph/debate.py $*)" >&2
"$venv/bin/python" benches/langgraph/debate.py "$@" | tee "$lg_csv"

# --- agent-state --------------------------------------------------------------
: >"$rs_csv"
if [[ -f benches/side_by_side.rs || -f benches/side_by_side/main.rs ]]; then
    echo "side_by_side: running agent-state (cargo bench --bench side_by_side -- $*)" >&2
    cargo bench --bench side_by_side -- "$@" | tee "$rs_raw"
    grep '^agent-state,' "$rs_raw" >"$rs_csv" || {
        echo "side_by_side: cargo bench --bench side_by_side printed no agent-state CSV line" >&2
        exit 1
    }
else
    echo "side_by_side: WARNING: no bench target side_by_side yet (benches/side_by_side.rs);" \
        "the table has LangGraph figures only" >&2
fi

# --- table --------------------------------------------------------------------
echo
"$venv/bin/python" benches/langgraph/table.py "$lg_csv" "$rs_csv"
