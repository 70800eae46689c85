"""What the middleware references share: a chat model that answers from a
script and records what it was asked, and the JSON they print.

Imported by tests/reference/middleware/<name>.py (not itself a reference:
it lives outside that directory so tests/reference/run.sh does not run it).
"""

import json
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool


class ScriptedChat(BaseChatModel):
    """Answers with `replies` in order and records every request in `seen`."""

    replies: list[AIMessage]
    seen: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    profile: dict[str, Any] | None = None

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChat":
        self.tools = [convert_to_openai_tool(t)["function"] for t in tools]
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        system = [m.text for m in messages if m.type == "system"]
        self.seen.append(
            {
                "system_prompt": system[0] if system else None,
                "messages": dump([m for m in messages if m.type != "system"]),
                "tools": [t["name"] for t in self.tools],
            }
        )
        if len(self.seen) > len(self.replies):
            raise RuntimeError(f"the script has {len(self.replies)} replies")
        reply = self.replies[len(self.seen) - 1]
        return ChatResult(generations=[ChatGeneration(message=reply.model_copy())])


def dump(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """Messages as the Rust tests print them: ids left out (each side
    makes its own), the fields that matter kept."""
    out = []
    for m in messages:
        item: dict[str, Any] = {"type": m.type, "content": m.content}
        if m.name:
            item["name"] = m.name
        if m.additional_kwargs:
            item["additional_kwargs"] = m.additional_kwargs
        if m.type == "ai" and m.tool_calls:
            item["tool_calls"] = [
                {"name": c["name"], "args": c["args"], "id": c["id"]} for c in m.tool_calls
            ]
        if m.type == "tool":
            item["tool_call_id"] = m.tool_call_id
            item["status"] = m.status
        out.append(item)
    return out


def call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    """A tool call of a scripted reply."""
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def emit(value: Any) -> None:
    """Prints the recording: sorted keys, two-space indent."""
    print(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False))
