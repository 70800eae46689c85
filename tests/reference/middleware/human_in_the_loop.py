"""LangChain's side of tests/middleware/human_in_the_loop.rs.

Runs langchain 1.4.7's `create_agent` with the real
`HumanInTheLoopMiddleware` (both modes) and a scripted chat model on an
`InMemorySaver`, one thread per scenario: the run pauses, is resumed with
`Command(resume={"decisions": [...]})` (per call: `Command(resume={id:
decision})`), and the script prints, per
scenario, the interrupt payloads, the conversation at the end (message
ids left out; tool call ids are the script's own) and the error, if any.
Arguments are written with their keys in order, as serde_json (and so the
Rust side, whose argument maps are sorted) keeps them.
"""

import json
import sys
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command


class Scripted(BaseChatModel):
    """Returns its replies in order, whatever it is asked."""

    replies: list[AIMessage]
    at: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        reply = self.replies[self.at]
        self.at += 1
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Any, **kwargs: Any) -> "Scripted":
        return self


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return f"Email sent to {to}: {body}"


@tool
def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"Sunny in {city}"


def call(name: str, call_id: str, **args: Any) -> dict:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


EMAIL = call("send_email", "call_1", body="Hi 'Al'\nSee you", to="alice@example.com")
WEATHER = call("get_weather", "call_2", city="Paris")


def plain(message: BaseMessage) -> dict:
    """What the comparison looks at in a message."""
    out: dict[str, Any] = {"type": message.type, "content": message.content}
    if message.type == "ai":
        out["tool_calls"] = [{"name": c["name"], "args": c["args"], "id": c["id"]} for c in message.tool_calls]
    if message.type == "tool":
        out.update(name=message.name, tool_call_id=message.tool_call_id, status=message.status)
    return out


def describe(tool_call: dict, state: Any, runtime: Any) -> str:
    return f"{tool_call['name']} wants {json.dumps(tool_call['args'], sort_keys=True)} after {len(state['messages'])} messages"


def run(name: str, calls: list[dict], interrupt_on: dict, resumes: list[Any], **options: Any) -> dict:
    model = Scripted(replies=[AIMessage(content="", tool_calls=calls), AIMessage(content="Done.")])
    try:
        middleware = HumanInTheLoopMiddleware(interrupt_on=interrupt_on, **options)
    except ValueError as error:
        return {"error": str(error)}
    agent = create_agent(model, tools=[send_email, get_weather], middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": name}}
    out: dict[str, Any] = {"interrupts": []}
    try:
        result = agent.invoke({"messages": [{"role": "user", "content": "Please help."}]}, config)
        for resume in [*resumes, None]:
            pending = [i.value for i in result.get("__interrupt__", [])]
            out["interrupts"].extend(pending)
            if not pending or resume is None:
                break
            result = agent.invoke(Command(resume=resume), config)
    except ValueError as error:
        out["error"] = str(error)
    out["messages"] = [plain(m) for m in agent.get_state(config).values["messages"]]
    return out


def decisions(*items: dict) -> dict:
    return {"decisions": list(items)}


APPROVE_REJECT = {"allowed_decisions": ["approve", "reject"]}

SCENARIOS = {
    "approve": ([EMAIL], {"send_email": True}, [decisions({"type": "approve"})], {}),
    "edit": (
        [EMAIL],
        {"send_email": True},
        [decisions({"type": "edit", "edited_action": {"name": "send_email", "args": {"body": "Hello", "to": "bob@example.com"}}})],
        {},
    ),
    "edit_to_other_tool": (
        [EMAIL],
        {"send_email": True},
        [decisions({"type": "edit", "edited_action": {"name": "get_weather", "args": {"city": "Oslo"}}})],
        {},
    ),
    "edit_without_notice": (
        [EMAIL],
        {"send_email": True},
        [decisions({"type": "edit", "edited_action": {"name": "send_email", "args": {"body": "Hello", "to": "bob@example.com"}}})],
        {"edit_notice": None},
    ),
    "reject_with_message": ([EMAIL], {"send_email": True}, [decisions({"type": "reject", "message": "Not to Alice."})], {}),
    "reject_without_message": ([EMAIL], {"send_email": True}, [decisions({"type": "reject"})], {}),
    "respond": ([EMAIL], {"send_email": True}, [decisions({"type": "respond", "message": "Alice is on leave."})], {}),
    "mixed": (
        [EMAIL, WEATHER],
        {"send_email": {**APPROVE_REJECT, "description": "Check the recipient."}, "get_weather": False},
        [decisions({"type": "reject", "message": "No."})],
        {},
    ),
    "two_reviewed": (
        [WEATHER, EMAIL],
        {"send_email": True, "get_weather": {"allowed_decisions": ["approve", "edit"], "description": describe}},
        [decisions({"type": "edit", "edited_action": {"name": "get_weather", "args": {"city": "Rome"}}}, {"type": "respond", "message": "Sent it myself."})],
        {"description_prefix": "Review needed"},
    ),
    "not_configured": ([WEATHER], {"send_email": True}, [], {}),
    "error_not_allowed": ([EMAIL], {"send_email": APPROVE_REJECT}, [decisions({"type": "respond", "message": "x"})], {}),
    "error_count": ([EMAIL], {"send_email": True}, [decisions({"type": "approve"}, {"type": "approve"})], {}),
    "error_config": ([EMAIL], {"send_email": {"allowed_decisions": []}}, [], {}),
}


def run_per_call(name: str, calls: list[dict], interrupt_on: dict, answer: Any) -> dict:
    """`interrupt_mode="per_call"`: every pending interrupt answered by id
    at once with `answer(value)`; the payloads in call id order."""
    model = Scripted(replies=[AIMessage(content="", tool_calls=calls), AIMessage(content="Done.")])
    middleware = HumanInTheLoopMiddleware(interrupt_on=interrupt_on, interrupt_mode="per_call")
    agent = create_agent(model, tools=[send_email, get_weather], middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": name}}
    result = agent.invoke({"messages": [{"role": "user", "content": "Please help."}]}, config)
    pending = result.get("__interrupt__", [])
    out: dict[str, Any] = {"interrupts": sorted((i.value for i in pending), key=lambda v: v["tool_call_id"])}
    try:
        agent.invoke(Command(resume={i.id: answer(i.value) for i in pending}), config)
    except ValueError as error:  # pydantic's ValidationError: the answer is refused
        out["error"] = str(error).splitlines()[0]
        out["still_pending"] = len(agent.get_state(config).interrupts)
    out["messages"] = [plain(m) for m in agent.get_state(config).values["messages"]]
    return out


def edit_or_reject(value: dict) -> dict:
    if value["name"] == "get_weather":
        return {"type": "reject", "message": "No."}
    return {"type": "edit", "edited_action": {"name": "send_email", "args": {"body": "B", "to": "x@y"}}}


PER_CALL = {
    "per_call_two": ([EMAIL, WEATHER], {"send_email": True, "get_weather": APPROVE_REJECT}, edit_or_reject),
    "per_call_not_allowed": ([WEATHER], {"get_weather": APPROVE_REJECT}, lambda v: {"type": "respond", "message": "x"}),
    "per_call_edit_renames": (
        [EMAIL],
        {"send_email": True},
        lambda v: {"type": "edit", "edited_action": {"name": "get_weather", "args": {"city": "Oslo"}}},
    ),
}


def main() -> None:
    out = {name: run(name, *scenario[:3], **scenario[3]) for name, scenario in SCENARIOS.items()}
    out.update({name: run_per_call(name, *scenario) for name, scenario in PER_CALL.items()})
    json.dump(out, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
