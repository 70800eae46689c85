"""ToolRetryMiddleware (langchain 1.4.7): a tool failing twice then
answering, one always failing, per-tool filtering, the failure messages.
Delays are zero; jitter off."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from calls_common import emit, messages_of, scripted  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import ToolRetryMiddleware  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402


class ToolError(Exception):
    """Named as our agent names a tool's own error in the failure text."""


def run(calls, **options):
    tries = {"flaky": 0, "broken": 0}

    @tool
    def flaky(q: str) -> str:
        """Fails twice, then fetches."""
        tries["flaky"] += 1
        if tries["flaky"] <= 2:
            raise ToolError("timeout")
        return f"page for {q}"

    @tool
    def broken(q: str) -> str:
        """Always fails."""
        tries["broken"] += 1
        raise ToolError("boom")

    ask = AIMessage(
        "",
        tool_calls=[{"name": n, "args": {"q": "x"}, "id": f"call_{n}"} for n in calls],
    )
    model = scripted(ask, AIMessage("done"))
    retry = ToolRetryMiddleware(initial_delay=0.0, jitter=False, **options)
    agent = create_agent(model, tools=[flaky, broken], middleware=[retry])
    state = agent.invoke({"messages": [HumanMessage("go")]})
    return {"messages": messages_of(state), "tries": tries}


emit(
    {
        "defaults": run(["flaky", "broken"]),
        "one_retry_custom_text": run(
            ["broken"], max_retries=1, on_failure=lambda e: f"custom: {e}"
        ),
        "no_retries": run(["broken"], max_retries=0),
        "only_named_tools": run(["flaky"], tools=["flaky"]),
    }
)
