"""LangGraph half of the side-by-side debate benchmark (benches/side_by_side.sh).

Measures langgraph 1.2.22 (pinned in requirements.txt; the version whose
behaviour shared/LANGGRAPH.md documents) running a scripted three-agent
debate, so that agent-state's Rust runtime can be timed on exactly the same
workload by `cargo bench --bench side_by_side`.

Workload (the Rust side mirrors it; change both or neither):

* DebateState: messages (add_messages), round, topic, max_rounds, status.
* START -> optimist -> skeptic -> moderator -> (status == "completed" ? END
  : optimist). One AI message per node, so 3 node steps and 3 messages per
  round; the skeptic advances `round`, the moderator closes the debate once
  round >= max_rounds.
* The "model" is scripted: fixed f-strings, no network, no LLM. What is
  timed is the framework: reducers, channel bookkeeping, routing and (in
  mode `memory`) checkpointing.

Modes:

* none   - compiled without a checkpointer.
* memory - InMemorySaver (alias MemorySaver), fresh thread_id per run, with
           LangGraph's default durability ("async"): a checkpoint is taken
           after every step and invoke() waits for all of them before it
           returns, so their cost is inside the timed region.

For every (mode, rounds) pair: one warm-up invoke at 10 rounds, then timed
invokes (time.perf_counter around graph.invoke only) until they add up to
at least 1 s (at least one run; --repeat K fixes the count instead). The
figure reported is the median run time divided by the number of node steps
(3 * rounds), in microseconds. Every run's final state is checked.

Output: `langgraph,<mode>,<rounds>,<us_per_step>` lines on stdout; the
langgraph version and per-measurement details on stderr.

Usage: python debate.py [--rounds 10,100,1000] [--repeat K]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
import uuid

# Keep LangSmith tracing off whatever the caller's environment says: a
# traced run would send data over the network and time that instead.
os.environ["LANGSMITH_TRACING"] = "false"
os.environ["LANGCHAIN_TRACING_V2"] = "false"

from importlib.metadata import version  # noqa: E402
from typing import Annotated, TypedDict  # noqa: E402

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.graph.message import add_messages  # noqa: E402

TOPIC = "Should AI be regulated?"
STEPS_PER_ROUND = 3  # optimist, skeptic, moderator
WARMUP_ROUNDS = 10
MIN_TIME_S = 1.0  # adaptive repeat: time runs until they add up to this
MAX_RUNS = 10_000  # ... but never more runs than this


class DebateState(TypedDict):
    # add_messages: append, assign missing ids, replace on equal id. The
    # other fields have no reducer (LastValue: the write replaces the value).
    messages: Annotated[list[AnyMessage], add_messages]
    round: int
    topic: str
    max_rounds: int
    status: str  # "running" | "completed"


# Nodes are plain sync functions returning partial updates, as a LangGraph
# user would write them around a chat model call.


def optimist(state: DebateState) -> dict:
    return {
        "messages": [
            AIMessage(
                content=f"Optimist, round {state['round']}: {state['topic']} brings more good than harm.",
                name="optimist",
            )
        ]
    }


def skeptic(state: DebateState) -> dict:
    return {
        "messages": [
            AIMessage(
                content=f"Skeptic, round {state['round']}: {state['topic']} carries risks we cannot ignore.",
                name="skeptic",
            )
        ],
        "round": state["round"] + 1,
    }


def moderator(state: DebateState) -> dict:
    update: dict = {
        "messages": [
            AIMessage(
                content=f"Moderator: round {state['round']} of {state['max_rounds']} closed.",
                name="moderator",
            )
        ]
    }
    if state["round"] >= state["max_rounds"]:
        update["status"] = "completed"
    return update


def route_after_moderator(state: DebateState) -> str:
    return END if state["status"] == "completed" else "optimist"


def build_graph(mode: str):
    """Compile the debate graph, with an InMemorySaver in mode `memory`."""
    builder = StateGraph(DebateState)
    builder.add_node("optimist", optimist)
    builder.add_node("skeptic", skeptic)
    builder.add_node("moderator", moderator)
    builder.add_edge(START, "optimist")
    builder.add_edge("optimist", "skeptic")
    builder.add_edge("skeptic", "moderator")
    builder.add_conditional_edges(
        "moderator", route_after_moderator, {END: END, "optimist": "optimist"}
    )
    if mode == "none":
        return builder.compile(), None
    if mode == "memory":
        saver = InMemorySaver()
        return builder.compile(checkpointer=saver), saver
    raise ValueError(f"unknown mode {mode!r}")


def initial_state(rounds: int) -> dict:
    return {
        "messages": [HumanMessage(content=f"Debate topic: {TOPIC}")],
        "topic": TOPIC,
        "max_rounds": rounds,
        "round": 0,
        "status": "running",
    }


def run_config(rounds: int, thread_id: str | None) -> dict:
    # Every superstep counts against recursion_limit, and a debate of N
    # rounds needs a limit of at least 3N + 1 (3N fails, measured). The
    # default in langgraph 1.2.22 is 10007 (env LANGGRAPH_DEFAULT_RECURSION_
    # LIMIT; langchain-core's own default is 25), enough for 3335 rounds:
    # set it explicitly so any --rounds works and the Rust side can match.
    config: dict = {"recursion_limit": STEPS_PER_ROUND * rounds + 10}
    if thread_id is not None:
        config["configurable"] = {"thread_id": thread_id}
    return config


def check(final: dict, rounds: int, mode: str) -> None:
    """Fail loudly unless the run really did `rounds` full rounds."""
    msgs = final["messages"]
    problems = []
    if len(msgs) != 1 + STEPS_PER_ROUND * rounds:
        problems.append(f"len(messages) = {len(msgs)}, want {1 + STEPS_PER_ROUND * rounds}")
    if final["round"] != rounds:
        problems.append(f"round = {final['round']}, want {rounds}")
    if final["status"] != "completed":
        problems.append(f"status = {final['status']!r}, want 'completed'")
    # Cheap spot checks that the nodes ran in order: first reply, last reply.
    if len(msgs) > 1 and getattr(msgs[1], "name", None) != "optimist":
        problems.append(f"messages[1] is from {getattr(msgs[1], 'name', None)!r}, want 'optimist'")
    want_last = f"Moderator: round {rounds} of {rounds} closed."
    if msgs[-1].content != want_last:
        problems.append(f"last message {msgs[-1].content!r}, want {want_last!r}")
    if problems:
        raise SystemExit(f"debate.py: wrong final state (mode={mode}, rounds={rounds}): " + "; ".join(problems))


def invoke_once(graph, saver, rounds: int, mode: str) -> float:
    """One checked run; returns the seconds spent inside graph.invoke."""
    thread_id = f"bench-{uuid.uuid4()}" if saver is not None else None
    state = initial_state(rounds)
    config = run_config(rounds, thread_id)
    # Collect the previous run's garbage now rather than inside this run.
    gc.collect()
    start = time.perf_counter()
    final = graph.invoke(state, config)
    elapsed = time.perf_counter() - start
    check(final, rounds, mode)
    if saver is not None:
        # The saver must really have checkpointed this thread...
        if saver.get_tuple(config) is None:
            raise SystemExit(f"debate.py: no checkpoint saved for thread {thread_id}")
        # ...and is emptied (untimed) so memory does not pile up across runs:
        # a 1000-round thread holds hundreds of MB of serialized histories.
        saver.delete_thread(thread_id)
    return elapsed


def measure(mode: str, rounds: int, repeat: int | None) -> tuple[float, int]:
    """Median seconds per invoke at `rounds`, and how many runs it took."""
    graph, saver = build_graph(mode)
    invoke_once(graph, saver, WARMUP_ROUNDS, mode)  # warm-up, untimed
    times: list[float] = []
    while True:
        times.append(invoke_once(graph, saver, rounds, mode))
        if repeat is not None:
            if len(times) >= repeat:
                break
        elif sum(times) >= MIN_TIME_S or len(times) >= MAX_RUNS:
            break
    return statistics.median(times), len(times)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--rounds",
        default="10,100,1000",
        help="comma-separated debate lengths in rounds (default 10,100,1000)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=None,
        help="timed runs per measurement (default: adaptive, >= 1 s in total)",
    )
    args = p.parse_args(argv)
    try:
        args.rounds = [int(r) for r in args.rounds.split(",") if r.strip()]
    except ValueError:
        p.error(f"--rounds wants comma-separated integers, got {args.rounds!r}")
    if not args.rounds or any(r < 1 for r in args.rounds):
        p.error("--rounds wants positive integers")
    if args.repeat is not None and args.repeat < 1:
        p.error("--repeat wants a positive integer")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    print(f"langgraph {version('langgraph')} (python {sys.version.split()[0]})", file=sys.stderr)
    for mode in ("none", "memory"):
        for rounds in args.rounds:
            median_s, runs = measure(mode, rounds, args.repeat)
            steps = STEPS_PER_ROUND * rounds
            us_per_step = median_s * 1e6 / steps
            print(
                f"  {mode:6} {rounds:5} rounds: median {median_s * 1e3:.3f} ms/invoke over {runs} run(s)",
                file=sys.stderr,
            )
            print(f"langgraph,{mode},{rounds},{us_per_step:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
