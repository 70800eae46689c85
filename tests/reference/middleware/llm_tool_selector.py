"""LLMToolSelectorMiddleware (langchain 1.4.7): the selection call (its
prompt, its structured-output tool and schema), max_tools, always_include,
retries of malformed replies, on_parsing_failure, invalid selections."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from calls_common import emit, messages_of, scripted  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import LLMToolSelectorMiddleware  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402


@tool
def weather(city: str) -> str:
    """Gets the weather of a city."""
    return f"sunny in {city}"


@tool
def calendar(day: str) -> str:
    """Lists the events of a day."""
    return f"nothing on {day}"


@tool
def email(to: str) -> str:
    """Sends an email."""
    return f"sent to {to}"


@tool
def search(q: str) -> str:
    """Searches the web."""
    return f"found {q}"


TOOLS = [weather, calendar, email, search]


def pick(*names):
    return AIMessage(
        "", tool_calls=[{"name": "ToolSelectionResponse", "args": {"tools": list(names)}, "id": "sel"}]
    )


def run(main_script, selector_script=None, **options):
    main = scripted(*main_script, record_schemas=selector_script is None)
    selector = scripted(*selector_script, record_schemas=True) if selector_script else None
    middleware = LLMToolSelectorMiddleware(model=selector, **options)
    agent = create_agent(main, tools=TOOLS, system_prompt="You help.", middleware=[middleware])
    out: dict = {}
    try:
        state = agent.invoke({"messages": [HumanMessage("weather in Paris, then mail Bob")]})
        out["messages"] = messages_of(state)
    except Exception as exc:  # noqa: BLE001
        out["raised"] = f"{type(exc).__name__}: {exc}"
    out["main_seen"] = main.seen
    if selector:
        out["selector_seen"] = selector.seen
    return out


call_weather = AIMessage(
    "", tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "w1"}]
)
emit(
    {
        "agent_model_selects": run(
            [pick("email", "weather", "calendar"), AIMessage("done")],
            max_tools=2,
            always_include=["search"],
        ),
        "separate_model_every_call": run(
            [call_weather, AIMessage("done")],
            [pick("weather", "weather"), pick("calendar")],
            system_prompt="Pick tools.",
        ),
        "retries_then_all": run(
            [AIMessage("done")], [AIMessage("no idea")], on_parsing_failure="all"
        ),
        "fallback_list": run(
            [AIMessage("done")],
            [AIMessage("no idea")],
            max_retries=0,
            max_tools=1,
            on_parsing_failure=["email", "search"],
        ),
        "invalid_selection": run([AIMessage("unused")], [pick("weather", "nope")]),
        "malformed_error": run([AIMessage("unused")], [AIMessage("no idea")], max_retries=0),
        "missing_always_include": run(
            [AIMessage("unused")], [pick("weather")], always_include=["fax"]
        ),
    }
)
