#!/usr/bin/env bash
# Records the official server's `/assistants/{id}/graph` answers, with and
# without `xray`, that server/tests/drawing.rs compares with ours, into
# server/tests/fixtures/official_graph_xray.json. Start LangGraph's server
# on modes.py first (see record_modes.sh), then:
#   B=http://127.0.0.1:2024 ./record_graphs.sh
set -euo pipefail
B="${B:-http://127.0.0.1:2024}"
out="$(cd "$(dirname "$0")/../../fixtures" && pwd)/official_graph_xray.json"
B="$B" python3 - "$out" <<'PY'
import json, os, sys, urllib.error, urllib.request

base = os.environ["B"]
def answer(graph, query):
    url = f"{base}/assistants/{graph}/graph{query}"
    try:
        with urllib.request.urlopen(url) as r:
            return {"status": r.status, "body": json.load(r)}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "body": json.load(e)}

queries = ["", "?xray=false", "?xray=true", "?xray=1", "?xray=2",
           "?xray=0", "?xray=-1", "?xray=abc", "?xray=1.5"]
record = {g: {q: answer(g, q) for q in queries} for g in ["nest", "deep"]}
with open(sys.argv[1], "w") as f:
    json.dump(record, f, indent=1)
    f.write("\n")
PY
echo "wrote $out"
