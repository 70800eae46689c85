"""LangChain's side of tests/middleware/model_call_limit.rs: ModelCallLimitMiddleware
over two runs of one thread (the thread count persists, the run count starts
over), the run limit, and `exit_behavior="error"`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import ModelCallLimitMiddleware  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from scripted import ScriptedChat, call, dump, emit  # noqa: E402


@tool
def echo(text: str) -> str:
    """Says the text back."""
    return text


def lookup() -> AIMessage:
    return AIMessage(content="", tool_calls=[call("echo", {"text": "hi"}, "c1")])


def run(agent, text: str, thread: str) -> dict:
    config = {"configurable": {"thread_id": thread}}
    out = agent.invoke({"messages": [("user", text)]}, config)
    stored = agent.get_state(config).values
    return {
        "messages": dump(out["messages"]),
        "stored_thread_count": stored.get("thread_model_call_count"),
        "stored_run_count": stored.get("run_model_call_count"),
    }


def thread_limit() -> list:
    model = ScriptedChat(replies=[lookup(), AIMessage(content="done"), lookup()])
    limit = ModelCallLimitMiddleware(thread_limit=3, run_limit=2)
    agent = create_agent(model, tools=[echo], middleware=[limit], checkpointer=InMemorySaver())
    first = run(agent, "one", "t")
    second = run(agent, "two", "t")
    return [first, second, len(model.seen)]


def run_limit() -> dict:
    model = ScriptedChat(replies=[lookup()])
    limit = ModelCallLimitMiddleware(run_limit=1, exit_behavior="end")
    agent = create_agent(model, tools=[echo], middleware=[limit], checkpointer=InMemorySaver())
    return run(agent, "one", "r")


def error() -> str:
    model = ScriptedChat(replies=[lookup()])
    limit = ModelCallLimitMiddleware(thread_limit=1, run_limit=1, exit_behavior="error")
    agent = create_agent(model, tools=[echo], middleware=[limit])
    try:
        agent.invoke({"messages": [("user", "one")]})
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"
    return "no error"


def bad_config() -> list:
    out = []
    for kwargs in ({}, {"run_limit": 1, "exit_behavior": "stop"}):
        try:
            ModelCallLimitMiddleware(**kwargs)
        except ValueError as e:
            out.append(str(e))
    return out


emit({"thread_limit": thread_limit(), "run_limit": run_limit(), "error": error(), "bad_config": bad_config()})
