"""The debate of examples/debate_server (src/debate.rs) for LangGraph's own
server, the official half of benches/server_side_by_side.sh. Change both or
neither:

* state: messages (add_messages), round, topic, maxRounds (default 3),
  status ("running" until the moderator closes the debate); the input is
  {"topic": .., "maxRounds": ..};
* START -> optimist -> skeptic -> moderator -> optimist again, or END once
  the moderator has closed round maxRounds; the skeptic advances round;
* the debaters answer through a chat model that streams the same scripted
  words as the Rust side's ScriptedModel (each word with its leading space,
  the last chunk marked), so `messages-tuple` carries one chunk per word on
  both sides; the moderator writes {"round", "maxRounds", "done"} in
  `custom` mode and adds its closing message.

No sleep anywhere: the Rust side runs with --token-delay-ms 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, AnyMessage, SystemMessage
from langchain_core.outputs import ChatGenerationChunk
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

OPTIMIST = [
    "Clear rules let good products ship faster: builders know where the lines are.",
    "Audits of high-risk systems catch failures before they reach patients and courts.",
    "Shared safety standards make it cheaper for small teams to compete with giants.",
    "Regulation done well is an accelerator, the way seat belts made cars sellable.",
]

SKEPTIC = [
    "Rules written today will freeze yesterday's models into law.",
    "Compliance costs fall hardest on the small labs you want to protect.",
    "Regulators lack the expertise to audit systems that change every month.",
    "Badly scoped rules push research offshore without making anyone safer.",
]


class DebateState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    round: int
    topic: str
    maxRounds: int
    status: str


def tokens(text: str) -> list[str]:
    """`text` cut before each space, as the Rust ScriptedModel streams it."""
    out, start = [], 0
    for i, ch in enumerate(text):
        if ch == " " and i > start:
            out.append(text[start:i])
            start = i
    out.append(text[start:])
    return out


class ScriptedModel(GenericFakeChatModel):
    """GenericFakeChatModel streaming a word (with its leading space) per
    chunk, where its own `_stream` makes a chunk of every word and every
    space."""

    def _stream(self, messages, stop=None, run_manager=None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        text = self._generate(messages, stop=stop).generations[0].message.content
        words = tokens(text)
        for i, word in enumerate(words):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=word))
            if i == len(words) - 1:
                chunk.message.chunk_position = "last"
            if run_manager:
                run_manager.on_llm_new_token(word, chunk=chunk)
            yield chunk


def line(role: str, state: DebateState) -> str:
    lines = OPTIMIST if role == "optimist" else SKEPTIC
    return f'{lines[state.get("round", 0) % len(lines)]} ({role} on "{state["topic"]}")'


def prompt(role: str, state: DebateState) -> str:
    side = "argue that the benefits win" if role == "optimist" else "argue that the risks win"
    rnd, of = state.get("round", 0) + 1, state.get("maxRounds", 3)
    return (
        f'You are the {role} in a debate on "{state["topic"]}", round {rnd} of {of}: '
        f"{side}. Answer the last argument in two sentences."
    )


async def speak(role: str, state: DebateState) -> AIMessage:
    model = ScriptedModel(messages=iter([line(role, state)]))
    request = [SystemMessage(prompt(role, state)), *state.get("messages", [])]
    answer = await model.ainvoke(request)
    answer.name = role
    return answer


async def optimist(state: DebateState) -> dict:
    return {"messages": [await speak("optimist", state)]}


async def skeptic(state: DebateState) -> dict:
    return {"messages": [await speak("skeptic", state)], "round": state.get("round", 0) + 1}


def moderator(state: DebateState) -> dict:
    rnd, of = state.get("round", 0), state.get("maxRounds", 3)
    done = rnd >= of
    get_stream_writer()({"round": rnd, "maxRounds": of, "done": done})
    text = f"Round {rnd} of {of} closed. " + ("The debate is over." if done else "Next round.")
    update: dict = {"messages": [AIMessage(text, name="moderator")]}
    if done:
        update["status"] = "completed"
    return update


def route(state: DebateState) -> str:
    return END if state.get("status") == "completed" else "optimist"


builder = StateGraph(DebateState)
builder.add_node("optimist", optimist)
builder.add_node("skeptic", skeptic)
builder.add_node("moderator", moderator)
builder.add_edge(START, "optimist")
builder.add_edge("optimist", "skeptic")
builder.add_edge("skeptic", "moderator")
builder.add_conditional_edges("moderator", route, ["optimist", END])
debate = builder.compile()
