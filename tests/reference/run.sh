#!/usr/bin/env bash
# Reruns LangChain's side of the middleware tests and checks that it still
# prints what tests/expected/middleware/ records: every
# tests/reference/middleware/<name>.py against <name>.json. The venv comes
# from PyPI (benches/langgraph/requirements.txt: langchain 1.4.7 on
# langgraph 1.2.22), in target/langgraph-venv, shared with the benches.
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
    -r benches/langgraph/requirements.txt
failed=0
count=0
for script in tests/reference/middleware/*.py; do
    [[ -e "$script" ]] || continue
    name="$(basename "$script" .py)"
    expected="tests/expected/middleware/$name.json"
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
