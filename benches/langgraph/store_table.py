"""Markdown table of the store benchmark (benches/store_side_by_side.sh).

Reads the JSON lines both halves print (`{"impl", "backend", "op",
"us_per_op"}`) and prints, per backend and operation, LangGraph's figure,
agent-state's, and the ratio LangGraph / agent-state (above 1:
agent-state is faster). LangGraph's SQLite store with its own journal
(`sqlite-fsync`) is set beside agent-state's `sqlite`. Standard library
only.

Usage: python store_table.py LINES_JSONL
"""

from __future__ import annotations

import json
import sys

OPS = ["put_batch", "put", "get", "search_filter", "semantic_put", "semantic_search"]


def read(path: str) -> dict[tuple[str, str, str], float]:
    found = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if "us_per_op" in record:
                found[(record["impl"], record["backend"], record["op"])] = record["us_per_op"]
    return found


def main() -> None:
    found = read(sys.argv[1])
    print("| backend | operation | LangGraph (µs/op) | agent-state (µs/op) | ratio |")
    print("| --- | --- | ---: | ---: | ---: |")
    backends = ["memory", "sqlite", "sqlite-fsync", "postgres"]
    for backend in backends:
        ours = "sqlite" if backend == "sqlite-fsync" else backend
        for op in OPS:
            lg = found.get(("langgraph", backend, op))
            rs = found.get(("agent-state", ours, op))
            if lg is None and rs is None:
                continue
            ratio = f"{lg / rs:,.1f}×" if lg and rs else "-"
            lg_s = f"{lg:,.1f}" if lg is not None else "-"
            rs_s = f"{rs:,.2f}" if rs is not None else "-"
            print(f"| {backend} | {op} | {lg_s} | {rs_s} | {ratio} |")


if __name__ == "__main__":
    main()
