"""Markdown table of the agent-loop benchmark (benches/agent_side_by_side.sh).

Reads CSV lines `<impl>,<mode>,<turns>,<us_per_turn>` from the files given
(LangChain's from agent.py, agent-state's from `cargo bench --bench agent`)
and prints, per (mode, turns), both figures and the ratio LangChain /
agent-state (above 1: agent-state is faster). Standard library only.

Usage: python agent_table.py LANGCHAIN_CSV AGENT_STATE_CSV
"""

from __future__ import annotations

import sys


def read(paths: list[str]) -> dict[tuple[str, str, int], float]:
    found: dict[tuple[str, str, int], float] = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                fields = [x.strip() for x in line.strip().split(",")]
                if len(fields) != 4 or fields[0] not in ("langchain", "agent-state"):
                    continue
                try:
                    found[(fields[0], fields[1], int(fields[2]))] = float(fields[3])
                except ValueError:
                    print(f"agent_table.py: skipping {line.strip()!r}", file=sys.stderr)
    return found


def main() -> None:
    found = read(sys.argv[1:])
    rows = sorted({(mode, turns) for _, mode, turns in found})
    print("| mode | turns | LangChain create_agent (µs/turn) | agent-state (µs/turn) | ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for mode, turns in rows:
        lc = found.get(("langchain", mode, turns))
        rs = found.get(("agent-state", mode, turns))
        ratio = f"{lc / rs:,.0f}×" if lc and rs else "-"
        lc_s = f"{lc:,.0f}" if lc else "-"
        rs_s = f"{rs:.2f}" if rs else "-"
        print(f"| {mode} | {turns} | {lc_s} | {rs_s} | {ratio} |")


if __name__ == "__main__":
    main()
