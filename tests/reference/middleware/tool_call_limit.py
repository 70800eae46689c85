"""LangChain's side of tests/middleware/tool_call_limit.rs: ToolCallLimitMiddleware
with `continue` for one tool over two runs of one thread (thread counts go
on, run counts start over), `end` for all tools, `error`, and the refused
configurations."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import ToolCallLimitMiddleware  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from scripted import ScriptedChat, call, dump, emit  # noqa: E402


@tool
def echo(text: str) -> str:
    """Says the text back."""
    return text


@tool
def other(text: str) -> str:
    """Says the text louder."""
    return text.upper()


def calls(*pairs: tuple[str, str]) -> AIMessage:
    return AIMessage(content="", tool_calls=[call(name, {"text": cid}, cid) for name, cid in pairs])


def run(agent, text: str, thread: str) -> dict:
    config = {"configurable": {"thread_id": thread}}
    out = agent.invoke({"messages": [("user", text)]}, config)
    stored = agent.get_state(config).values
    return {
        "messages": dump(out["messages"]),
        "stored_thread_counts": stored.get("thread_tool_call_count"),
        "stored_run_counts": stored.get("run_tool_call_count"),
    }


def continue_one_tool() -> list:
    model = ScriptedChat(
        replies=[
            calls(("echo", "c1"), ("echo", "c2"), ("other", "c3")),
            calls(("echo", "c4")),
            AIMessage(content="done"),
            calls(("echo", "c5"), ("echo", "c6")),
            AIMessage(content="done again"),
        ]
    )
    limit = ToolCallLimitMiddleware(tool_name="echo", thread_limit=3, run_limit=2)
    agent = create_agent(
        model, tools=[echo, other], middleware=[limit], checkpointer=InMemorySaver()
    )
    return [run(agent, "one", "t"), run(agent, "two", "t"), limit.name]


def end_all_tools() -> dict:
    model = ScriptedChat(replies=[calls(("echo", "a"), ("other", "b"))])
    limit = ToolCallLimitMiddleware(run_limit=1, exit_behavior="end")
    agent = create_agent(
        model, tools=[echo, other], middleware=[limit], checkpointer=InMemorySaver()
    )
    out = run(agent, "one", "e")
    out["name"] = limit.name
    return out


def error() -> str:
    model = ScriptedChat(replies=[calls(("echo", "x"), ("echo", "y"))])
    limit = ToolCallLimitMiddleware(tool_name="echo", thread_limit=1, exit_behavior="error")
    agent = create_agent(model, tools=[echo], middleware=[limit])
    try:
        agent.invoke({"messages": [("user", "one")]})
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"
    return "no error"


def bad_config() -> list:
    out = []
    for kwargs in ({}, {"run_limit": 1, "exit_behavior": "stop"}, {"thread_limit": 1, "run_limit": 2}):
        try:
            ToolCallLimitMiddleware(**kwargs)
        except ValueError as e:
            out.append(str(e))
    return out


emit(
    {
        "continue": continue_one_tool(),
        "end": end_all_tools(),
        "error": error(),
        "bad_config": bad_config(),
    }
)
