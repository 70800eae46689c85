"""LangChain's side of tests/middleware/todo_list.rs: TodoListMiddleware's
`write_todos` tool (definition, answer, state update), the system prompt it
appends, the error answers to parallel calls, and custom prompts."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import TodoListMiddleware  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from scripted import ScriptedChat, call, dump, emit  # noqa: E402

PLAN = [
    {"content": "Write the 'intro'", "status": "in_progress"},
    {"content": 'Say "café" \\ ship', "status": "pending"},
]


def write(todos: list, call_id: str) -> dict:
    return call("write_todos", {"todos": todos}, call_id)


def planning() -> dict:
    done = [{"content": "Write the 'intro'", "status": "completed"}]
    model = ScriptedChat(
        replies=[
            AIMessage(content="", tool_calls=[write(PLAN, "p1")]),
            AIMessage(content="", tool_calls=[write(done, "p2"), write([], "p3")]),
            AIMessage(content="Planned."),
        ]
    )
    agent = create_agent(model, system_prompt="You plan.", middleware=[TodoListMiddleware()])
    out = agent.invoke({"messages": [("user", "Plan it")]})
    return {
        "messages": dump(out["messages"]),
        "todos": out["todos"],
        "requests": model.seen,
        "tools": model.tools,
    }


def custom() -> dict:
    model = ScriptedChat(replies=[AIMessage(content="ok")])
    todo = TodoListMiddleware(system_prompt="Track work.", tool_description="Plans.")
    agent = create_agent(model, middleware=[todo])
    agent.invoke({"messages": [("user", "hi")]})
    return {"requests": model.seen, "tools": model.tools}


emit({"planning": planning(), "custom": custom()})
