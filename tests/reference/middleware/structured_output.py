"""LangChain 1.4.7's structured output (`create_agent(response_format=...)`)
through fixed scenarios, printed as deterministic JSON for
tests/middleware/structured_output.rs to compare with.

Each scenario runs a scripted chat model (its replies fixed, its requests
recorded) and prints the final messages (ids dropped), the structured
response, the requests the model saw (tool names, tool choice, response
format) or the error that ended the run. Validation messages are pydantic's
here and serde's in Rust: the text between "Failed to parse data to <Type>: "
and the end (".\n Please fix your mistakes." or "."), and the JSON parser's
message after "but parsing failed: ", become "<error>", on both sides.
"""

import json
import re
from typing import Any

from langchain.agents import create_agent
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from pydantic import BaseModel


class Weather(BaseModel):
    """The weather in a city."""

    city: str
    celsius: float


@tool
def get_forecast(city: str) -> str:
    """The forecast for a city."""
    return f"sunny in {city}, 21.5 C"


class Scripted(BaseChatModel):
    """Answers with its replies in order; records what each call was bound with."""

    replies: list[AIMessage]
    seen: list[dict[str, Any]] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, **kwargs):
        return self.bind(tools=tools, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs):
        self.seen.append(request_of(kwargs))
        reply = self.replies[len(self.seen) - 1]
        return ChatResult(generations=[ChatGeneration(message=reply)])


def request_of(kwargs: dict[str, Any]) -> dict[str, Any]:
    tools = [{"name": t.name, "description": t.description} for t in kwargs.get("tools", [])]
    out: dict[str, Any] = {"tools": tools, "tool_choice": kwargs.get("tool_choice")}
    fmt = kwargs.get("response_format")
    if fmt is not None:
        schema = fmt["json_schema"]
        out["response_format"] = {
            "type": fmt["type"],
            "name": schema["name"],
            "strict": schema.get("strict", False),
            "properties": sorted(schema["schema"]["properties"]),
            "required": sorted(schema["schema"]["required"]),
        }
    return out


def call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def normalise(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    text = re.sub(
        r"(Failed to parse data to \w+: ).*?(\.(\n Please fix your mistakes\.)?)$",
        r"\1<error>\2",
        text,
        flags=re.S,
    )
    return re.sub(r"(but parsing failed: ).*(\.\.)$", r"\1<error>\2", text, flags=re.S)


def message(m: BaseMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"type": m.type, "content": normalise(m.content)}
    if m.type == "ai" and m.tool_calls:
        out["tool_calls"] = [{"name": c["name"], "args": c["args"], "id": c["id"]} for c in m.tool_calls]
    if m.type == "tool":
        out["name"] = m.name
        out["tool_call_id"] = m.tool_call_id
        out["status"] = m.status
    return out


def run(replies: list[AIMessage], tools: list[Any], response_format: Any) -> dict[str, Any]:
    model = Scripted(replies=replies, seen=[])
    agent = create_agent(model, tools=tools, response_format=response_format)
    try:
        state = agent.invoke({"messages": [{"role": "user", "content": "Weather in Paris?"}]})
    except Exception as error:  # the run's error is part of the record
        return {"error": normalise(str(error)), "requests": model.seen}
    value = state.get("structured_response")
    return {
        "messages": [message(m) for m in state["messages"]],
        "structured_response": value.model_dump() if value is not None else None,
        "requests": model.seen,
    }


GOOD = {"city": "Paris", "celsius": 21.5}
BAD = {"city": "Paris", "celsius": "warm"}

scenarios = {
    # A tool call, a value that does not parse, two values at once, then one.
    "tool_strategy_retries": run(
        [
            AIMessage(content="", tool_calls=[call("get_forecast", {"city": "Paris"}, "c1")]),
            AIMessage(content="", tool_calls=[call("Weather", BAD, "c2")]),
            AIMessage(content="", tool_calls=[call("Weather", GOOD, "c3"), call("Weather", GOOD, "c4")]),
            AIMessage(content="", tool_calls=[call("Weather", GOOD, "c5")]),
        ],
        [get_forecast],
        ToolStrategy(Weather),
    ),
    # No tools: a plain answer goes back to the model.
    "tool_strategy_without_tools": run(
        [
            AIMessage(content="It is sunny."),
            AIMessage(content="", tool_calls=[call("Weather", GOOD, "c1")]),
        ],
        [],
        ToolStrategy(Weather),
    ),
    # The value next to another tool call: the tool runs, then the loop ends.
    "tool_strategy_with_another_call": run(
        [
            AIMessage(
                content="",
                tool_calls=[call("get_forecast", {"city": "Paris"}, "c1"), call("Weather", GOOD, "c2")],
            ),
        ],
        [get_forecast],
        ToolStrategy(Weather),
    ),
    "custom_messages": run(
        [
            AIMessage(content="", tool_calls=[call("Weather", BAD, "c1")]),
            AIMessage(content="", tool_calls=[call("Weather", GOOD, "c2")]),
        ],
        [get_forecast],
        ToolStrategy(Weather, tool_message_content="Got it.", handle_errors="Try again."),
    ),
    "errors_not_handled": run(
        [AIMessage(content="", tool_calls=[call("Weather", BAD, "c1")])],
        [get_forecast],
        ToolStrategy(Weather, handle_errors=False),
    ),
    "provider_strategy": run(
        [
            AIMessage(content="", tool_calls=[call("get_forecast", {"city": "Paris"}, "c1")]),
            AIMessage(content=json.dumps(GOOD)),
        ],
        [get_forecast],
        ProviderStrategy(Weather, strict=True),
    ),
    "provider_strategy_bad_json": run(
        [AIMessage(content="sunny, 21.5")],
        [get_forecast],
        ProviderStrategy(Weather),
    ),
}



def drawing(tools: list[Any], response_format: Any) -> str:
    agent = create_agent(Scripted(replies=[]), tools=tools, response_format=response_format)
    return agent.get_graph().draw_mermaid()


# What LangChain draws for these agents (`get_graph().draw_mermaid()`).
scenarios["drawings"] = {
    "tool_strategy": drawing([get_forecast], ToolStrategy(Weather)),
    "tool_strategy_without_tools": drawing([], ToolStrategy(Weather)),
    "provider_strategy": drawing([get_forecast], ProviderStrategy(Weather)),
    "provider_strategy_without_tools": drawing([], ProviderStrategy(Weather)),
}

print(json.dumps(scenarios, indent=2, sort_keys=True))
