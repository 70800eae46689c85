"""LangChain half of the agent-loop benchmark (benches/agent_side_by_side.sh).

Measures langchain 1.4.7's `create_agent` (pinned in requirements.txt, on
langgraph 1.2.22) running a scripted model ↔ tools loop, so that
agent-state's agent can be timed on exactly the same script by
`cargo bench --bench agent`.

Workload (the Rust side mirrors it; change both or neither):

* The state: LangChain's AgentState (messages), plus in mode `middleware`
  a `model_calls` counter of a middleware's own state schema.
* One invoke of T turns, from one human message. The scripted model reads
  how many AI messages the conversation has (k): while k < T - 1 it calls
  two tools, `lookup(key="k<k>a")` and `lookup(key="k<k>b")`, with ids
  `call_<k>_a` / `call_<k>_b`; then it answers "done". So T model calls,
  T - 1 tool steps of two calls each, 1 + 3 (T - 1) + 1 messages.
* `lookup` is a `@tool` with a typed argument (key: str) answering
  "value of <key>".
* Modes:
  - bare: the model and the tool, no middleware.
  - middleware: two middleware: `counter` (its state schema adds
    `model_calls`; `before_model` increments it) and `prompt`
    (`wrap_model_call` appends the turn to the system prompt and calls the
    handler once).
* No checkpointer, no network, no LLM: what is timed is the loop itself
  (model node, tools node, routing, reducers, hooks).

For every (mode, turns): one warm-up invoke, then timed invokes
(time.perf_counter around agent.invoke) until they add up to at least 1 s
(at least one; --repeat K fixes the count). Reported: the median invoke
time divided by T, in microseconds per turn. Every run's result is checked.

Output: `langchain,<mode>,<turns>,<us_per_turn>` lines on stdout.

Usage: python agent.py [--turns 10,100] [--repeat K]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

os.environ["LANGSMITH_TRACING"] = "false"
os.environ["LANGCHAIN_TRACING_V2"] = "false"

from importlib.metadata import version  # noqa: E402
from typing import Any, NotRequired  # noqa: E402

from langchain.agents import AgentState, create_agent  # noqa: E402
from langchain.agents.middleware import AgentMiddleware  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

SYSTEM_PROMPT = "You look things up."
MIN_TIME_S = 1.0
MAX_RUNS = 10_000


class ScriptedChat(BaseChatModel):
    """The script above: two lookups per turn until the last turn."""

    turns: int

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChat":
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        k = sum(1 for m in messages if isinstance(m, AIMessage))
        if k < self.turns - 1:
            calls = [
                {"name": "lookup", "args": {"key": f"k{k}{s}"}, "id": f"call_{k}_{s}", "type": "tool_call"}
                for s in ("a", "b")
            ]
            reply = AIMessage(content="", tool_calls=calls)
        else:
            reply = AIMessage(content="done")
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def lookup(key: str) -> str:
    """Looks a key up."""
    return f"value of {key}"


class CountState(AgentState):
    model_calls: NotRequired[int]


class Counter(AgentMiddleware):
    state_schema = CountState
    name = "counter"

    def before_model(self, state, runtime):
        return {"model_calls": state.get("model_calls", 0) + 1}


class Prompt(AgentMiddleware):
    name = "prompt"

    def wrap_model_call(self, request, handler):
        turn = sum(1 for m in request.messages if isinstance(m, AIMessage))
        return handler(request.override(system_prompt=f"{request.system_prompt} (turn {turn})"))


def build(mode: str, turns: int):
    middleware = [Counter(), Prompt()] if mode == "middleware" else []
    return create_agent(
        ScriptedChat(turns=turns),
        tools=[lookup],
        system_prompt=SYSTEM_PROMPT,
        middleware=middleware,
    )


def check(final: dict, turns: int, mode: str) -> None:
    msgs = final["messages"]
    want = 2 + 3 * (turns - 1)
    problems = []
    if len(msgs) != want:
        problems.append(f"len(messages) = {len(msgs)}, want {want}")
    if msgs[-1].content != "done":
        problems.append(f"last message {msgs[-1].content!r}")
    if turns > 1 and msgs[2].content != "value of k0a":
        problems.append(f"first tool answer {msgs[2].content!r}")
    if mode == "middleware" and final.get("model_calls") != turns:
        problems.append(f"model_calls = {final.get('model_calls')}, want {turns}")
    if problems:
        raise SystemExit(f"agent.py: wrong result (mode={mode}, turns={turns}): " + "; ".join(problems))


def invoke_once(agent, turns: int, mode: str) -> float:
    state = {"messages": [HumanMessage(content="Look everything up.")]}
    config = {"recursion_limit": 10 * turns + 20}
    gc.collect()
    start = time.perf_counter()
    final = agent.invoke(state, config)
    elapsed = time.perf_counter() - start
    check(final, turns, mode)
    return elapsed


def measure(mode: str, turns: int, repeat: int | None) -> float:
    agent = build(mode, turns)
    invoke_once(agent, turns, mode)  # warm-up
    times: list[float] = []
    while True:
        times.append(invoke_once(agent, turns, mode))
        if repeat is not None:
            if len(times) >= repeat:
                break
        elif sum(times) >= MIN_TIME_S or len(times) >= MAX_RUNS:
            break
    median = statistics.median(times)
    print(f"langchain {mode} {turns} turns: {len(times)} runs, median {median * 1e3:.2f} ms", file=sys.stderr)
    return median * 1e6 / turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", default="10,100")
    parser.add_argument("--repeat", type=int, default=None)
    args = parser.parse_args()
    turns = [int(t) for t in args.turns.split(",") if t.strip()]
    print(f"langchain {version('langchain')}, langgraph {version('langgraph')}", file=sys.stderr)
    for mode in ("bare", "middleware"):
        for t in turns:
            print(f"langchain,{mode},{t},{measure(mode, t, args.repeat):.3f}", flush=True)


if __name__ == "__main__":
    main()
