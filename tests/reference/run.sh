#!/usr/bin/env bash
# Reruns LangChain's side of the side-by-side tests and checks that it still
# prints what tests/expected/ records: every tests/reference/middleware/
# <name>.py against tests/expected/middleware/<name>.json, and the chat
# models' tests/reference/models/<name>.py against tests/expected/models/,
# and LangGraph's stores' tests/reference/store/<name>.py against
# tests/expected/store/ (tests/store_parity.rs compares ours with those).
# The venv comes from PyPI (benches/langgraph/requirements.txt: langchain
# 1.4.7 on langgraph 1.2.22, plus tests/reference/models/requirements.txt
# and tests/reference/store/requirements.txt), in target/langgraph-venv,
# shared with the benches.
#
#   tests/reference/run.sh            # check
#   tests/reference/run.sh --record   # write the recordings anew
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
venv="${CARGO_TARGET_DIR:-target}/langgraph-venv"
if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r benches/langgraph/requirements.txt -r tests/reference/models/requirements.txt \
    -r tests/reference/store/requirements.txt
failed=0
count=0
for script in tests/reference/middleware/*.py tests/reference/models/*.py \
    tests/reference/store/*.py; do
    [[ -e "$script" ]] || continue
    name="$(basename "$script" .py)"
    kind="$(basename "$(dirname "$script")")"
    expected="tests/expected/$kind/$name.json"
    count=$((count + 1))
    if [[ "${1:-}" == "--record" ]]; then
        "$venv/bin/python" "$script" > "$expected"
        echo "recorded $expected"
    elif diff -u "$expected" <("$venv/bin/python" "$script"); then
        echo "ok   $name"
    else
        echo "FAIL $name: LangChain no longer prints $expected" >&2
        failed=$((failed + 1))
    fi
done
echo "LangChain references: $((count - failed)) agree, $failed differ"
[[ "$failed" == 0 ]]
