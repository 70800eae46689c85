"""ModelFallbackMiddleware (langchain 1.4.7): fallback models tried in
order on any error; what each model was sent; the last error when all
fail."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from calls_common import emit, messages_of, scripted  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import ModelFallbackMiddleware  # noqa: E402
from langchain_core.exceptions import (  # noqa: E402
    ModelAPIError,
    ModelAuthenticationError,
    ModelRateLimitError,
)
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402


def run(primary, *fallbacks):
    agent = create_agent(
        primary,
        tools=[],
        system_prompt="Be brief.",
        middleware=[ModelFallbackMiddleware(*fallbacks)],
    )
    models = [primary, *fallbacks]
    out: dict = {}
    try:
        state = agent.invoke({"messages": [HumanMessage("hi")]})
        out["messages"] = messages_of(state)
    except Exception as exc:  # noqa: BLE001
        out["raised"] = type(exc).__name__
        out["message"] = str(exc)
    out["calls"] = [m.calls for m in models]
    out["seen"] = [m.seen for m in models]
    return out


emit(
    {
        "second_fallback_answers": run(
            scripted(ModelAPIError("primary down")),
            scripted(ModelAuthenticationError("bad key")),
            scripted(AIMessage("from fallback 2")),
        ),
        "primary_answers": run(
            scripted(AIMessage("from primary")), scripted(AIMessage("unused"))
        ),
        "all_fail": run(
            scripted(ModelAPIError("primary down")),
            scripted(ModelRateLimitError("busy")),
        ),
    }
)
