"""What the reference scripts of the call middleware share (ModelRetry,
ModelFallback, ToolRetry, LLMToolSelector, ContextEditing, PII): a scripted
chat model of our own and a normaliser of messages to deterministic JSON.

Not a scenario itself: it lives outside tests/reference/middleware/, which
run.sh runs script by script."""

import json
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool


class ScriptedChat(BaseChatModel):
    """Answers with its script, one step per call: an AIMessage, or an
    exception to raise. Records what each call was sent."""

    script: list[Any]
    calls: int = 0
    seen: list[dict] = []
    record_schemas: bool = False

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        converted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=converted, tool_choice=tool_choice, **kwargs)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        tools = kwargs.get("tools") or []
        seen = {
            "messages": [plain(m, metadata=True) for m in messages],
            "tools": [t["function"]["name"] for t in tools],
            "tool_choice": kwargs.get("tool_choice"),
        }
        if self.record_schemas:
            seen["tool_schemas"] = [t["function"] for t in tools]
        self.seen.append(seen)
        step = self.script[self.calls % len(self.script)]
        self.calls += 1
        if isinstance(step, BaseException):
            raise step
        return ChatResult(generations=[ChatGeneration(message=step.model_copy())])


def scripted(*steps, record_schemas=False) -> ScriptedChat:
    return ScriptedChat(script=list(steps), seen=[], record_schemas=record_schemas)


def plain(message: BaseMessage, metadata: bool = False) -> dict:
    """A message as the tests compare it: no ids (LangChain's and ours are
    random), the fields that say what was said."""
    out: dict = {"type": message.type, "content": message.content}
    if message.name:
        out["name"] = message.name
    if isinstance(message, AIMessage) and message.tool_calls:
        out["tool_calls"] = [
            {"name": c["name"], "args": c["args"], "id": c["id"]} for c in message.tool_calls
        ]
    if message.type == "tool":
        out["tool_call_id"] = message.tool_call_id
        out["status"] = message.status
    if metadata:
        meta = {k: v for k, v in message.response_metadata.items() if k == "context_editing"}
        if meta:
            out["response_metadata"] = meta
    return out


def messages_of(state) -> list[dict]:
    return [plain(m) for m in state["messages"]]


def emit(value) -> None:
    print(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False))
