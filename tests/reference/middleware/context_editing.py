"""ContextEditingMiddleware with ClearToolUsesEdit (langchain 1.4.7): the
approximate token count on varied messages, then an agent whose model is
sent old tool results cleared (keep, exclude_tools, clear_tool_inputs,
clear_at_least, placeholder) while the state keeps them."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from calls_common import emit, messages_of, scripted  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

COUNTED = {
    "plain": [HumanMessage("hello")],
    "system_and_names": [SystemMessage("Be brief."), HumanMessage("hi there", name="ann")],
    "tool_calls": [
        AIMessage(
            "calling",
            tool_calls=[
                {"name": "s", "args": {"q": "it's", "n": [1, 2.5, True, None]}, "id": "c1"},
                {"name": "t", "args": {"nested": {"k": "v\nw", "e": {}}}, "id": "c2"},
            ],
        ),
        ToolMessage("result", tool_call_id="c1", name="s"),
    ],
    "unicode": [HumanMessage("café ünïcode 日本語 ✓")],
    "blocks": [
        HumanMessage(
            [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "http://x/y.png"}},
                {"type": "other", "data": 1},
                "bare",
            ]
        )
    ],
}


def ask(name, q, call_id):
    return AIMessage("", tool_calls=[{"name": name, "args": {"q": q}, "id": call_id}])


def run(edit):
    @tool
    def search(q: str) -> str:
        """Searches."""
        return f"result {q}: " + "lorem ipsum " * 20

    @tool
    def keep_me(q: str) -> str:
        """Never cleared when excluded."""
        return f"kept {q}: " + "dolor sit " * 20

    model = scripted(
        ask("search", "one", "c1"),
        ask("keep_me", "two", "c2"),
        ask("search", "three", "c3"),
        AIMessage("done"),
    )
    agent = create_agent(
        model,
        tools=[search, keep_me],
        middleware=[ContextEditingMiddleware(edits=[edit])],
    )
    state = agent.invoke({"messages": [HumanMessage("find it")]})
    return {"messages": messages_of(state), "seen": model.seen}


emit(
    {
        "tokens": {k: count_tokens_approximately(v) for k, v in COUNTED.items()},
        "agents": {
            "keep_one": run(ClearToolUsesEdit(trigger=100, keep=1)),
            "inputs_and_exclude": run(
                ClearToolUsesEdit(
                    trigger=100,
                    keep=0,
                    clear_tool_inputs=True,
                    exclude_tools=["keep_me"],
                    placeholder="[gone]",
                )
            ),
            "clear_at_least": run(ClearToolUsesEdit(trigger=100, keep=0, clear_at_least=10)),
            "below_trigger": run(ClearToolUsesEdit(trigger=100_000, keep=0)),
        },
    }
)
