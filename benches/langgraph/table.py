"""Markdown table of the side-by-side debate benchmark (benches/side_by_side.sh).

Reads CSV lines `<impl>,<mode>,<rounds>,<us_per_step>` from the files given
on the command line (LangGraph's from debate.py, agent-state's from
`cargo bench --bench side_by_side`) and prints one row per (rounds, pairing):

* no checkpointer: LangGraph `none` against agent-state `none`;
* checkpoint every step: LangGraph `memory` (InMemorySaver) against
  agent-state `sqlite` (its SQLite-file checkpointer).

ratio = LangGraph / agent-state, so above 1 means agent-state is faster. A
measurement missing on one side shows as "-". Lines that are not such CSV
(blank, comments, stray output) are skipped; if the same measurement comes
twice, the last one wins. Standard library only, so it runs with any python3.

Usage: python table.py LANGGRAPH_CSV AGENT_STATE_CSV
"""

from __future__ import annotations

import sys

# (row label, LangGraph mode, agent-state mode)
PAIRINGS = [
    ("no checkpointer", "none", "none"),
    ("checkpoint every step (LangGraph memory vs agent-state SQLite)", "memory", "sqlite"),
]
KNOWN = {("langgraph", m) for _, m, _ in PAIRINGS} | {("agent-state", m) for _, _, m in PAIRINGS}


def read(paths: list[str]) -> dict[tuple[str, str, int], float]:
    """(impl, mode, rounds) -> µs per node step, from every file given."""
    found: dict[tuple[str, str, int], float] = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                fields = [x.strip() for x in line.strip().split(",")]
                if len(fields) != 4 or (fields[0], fields[1]) not in KNOWN:
                    continue
                try:
                    rounds, us = int(fields[2]), float(fields[3])
                except ValueError:
                    print(f"table.py: {path}: skipping malformed line {line.strip()!r}", file=sys.stderr)
                    continue
                found[(fields[0], fields[1], rounds)] = us
    return found


def fmt_us(us: float | None) -> str:
    if us is None:
        return "-"
    if us >= 100:
        return f"{us:,.0f}"
    if us >= 10:
        return f"{us:.1f}"
    if us >= 1:
        return f"{us:.2f}"
    return f"{us:.3f}"


def fmt_ratio(lg: float | None, rs: float | None) -> str:
    if lg is None or rs is None or rs <= 0:
        return "-"
    r = lg / rs
    return f"{r:,.0f}x" if r >= 100 else f"{r:.1f}x" if r >= 10 else f"{r:.2f}x"


def table(found: dict[tuple[str, str, int], float]) -> str:
    rows = [
        "| rounds | mode | LangGraph µs/step | agent-state µs/step | ratio (LangGraph / agent-state) |",
        "| ---: | --- | ---: | ---: | ---: |",
    ]
    for rounds in sorted({k[2] for k in found}):
        for label, lg_mode, rs_mode in PAIRINGS:
            lg = found.get(("langgraph", lg_mode, rounds))
            rs = found.get(("agent-state", rs_mode, rounds))
            if lg is None and rs is None:
                continue
            rows.append(f"| {rounds} | {label} | {fmt_us(lg)} | {fmt_us(rs)} | {fmt_ratio(lg, rs)} |")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    found = read(argv)
    if not found:
        print(f"table.py: no measurements in {' or '.join(argv)}", file=sys.stderr)
        return 1
    print(table(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
