"""ModelRetryMiddleware (langchain 1.4.7) through scripted scenarios: which
errors are retried, how often, and what the agent answers once the
attempts are spent. Delays are zero; jitter off."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from calls_common import emit, messages_of, scripted  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import ModelRetryMiddleware  # noqa: E402
from langchain_core.exceptions import (  # noqa: E402
    ModelAPIError,
    ModelAuthenticationError,
    ModelRateLimitError,
)
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402


def run(model, **options):
    retry = ModelRetryMiddleware(initial_delay=0.0, jitter=False, **options)
    agent = create_agent(model, tools=[], middleware=[retry])
    try:
        state = agent.invoke({"messages": [HumanMessage("hi")]})
    except Exception as exc:  # noqa: BLE001
        return {"raised": type(exc).__name__, "message": str(exc), "calls": model.calls}
    return {"messages": messages_of(state), "calls": model.calls}


slow = ModelRateLimitError("slow down")
out = {
    "recovers": run(scripted(slow, slow, AIMessage("hello"))),
    "exhausted": run(scripted(ModelAPIError("server down"))),
    "one_attempt": run(scripted(slow), max_retries=0),
    "not_retryable": run(scripted(ModelAuthenticationError("bad key"))),
    "on_failure_error": run(scripted(slow), on_failure="error"),
    "on_failure_text": run(scripted(slow), max_retries=1, on_failure=lambda e: f"sorry: {e}"),
    "retry_on_predicate": run(
        scripted(ModelAuthenticationError("bad key"), AIMessage("in")),
        retry_on=lambda e: isinstance(e, ModelAuthenticationError),
    ),
}
emit(out)
