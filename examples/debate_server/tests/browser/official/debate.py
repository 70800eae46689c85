"""The debate of examples/debate_server (src/debate.rs) written for
LangGraph, so the page can be driven against the official server: the
same state keys, nodes, scripted lines and moderator, a token every 20 ms.
"""

import asyncio
from typing import Annotated, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

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


class State(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    round: int
    topic: str
    maxRounds: int
    status: str


class SlowFakeModel(GenericFakeChatModel):
    """The fake model, pausing before each token as the Rust one does."""

    async def _astream(self, *args, **kwargs):
        async for chunk in super()._astream(*args, **kwargs):
            await asyncio.sleep(0.02)
            yield chunk


def debater(name, lines):
    async def speak(state):
        r = state.get("round", 0)
        line = f'{lines[r % len(lines)]} ({name} on "{state["topic"]}")'
        model = SlowFakeModel(messages=iter([AIMessage(content=line, name=name)]))
        message = await model.ainvoke("argue")
        message.name = name
        update = {"messages": [message]}
        if name == "skeptic":
            update["round"] = r + 1
        return update

    return speak


def moderator(state):
    r, m = state.get("round", 0), state.get("maxRounds", 3)
    done = r >= m
    get_stream_writer()({"round": r, "maxRounds": m, "done": done})
    text = f"Round {r} of {m} closed. " + ("The debate is over." if done else "Next round.")
    update = {"messages": [AIMessage(content=text, name="moderator")]}
    if done:
        update["status"] = "completed"
    return update


def after_moderator(state):
    return END if state.get("status") == "completed" else "optimist"


builder = StateGraph(State)
builder.add_node("optimist", debater("optimist", OPTIMIST))
builder.add_node("skeptic", debater("skeptic", SKEPTIC))
builder.add_node("moderator", moderator)
builder.add_edge(START, "optimist")
builder.add_edge("optimist", "skeptic")
builder.add_edge("skeptic", "moderator")
builder.add_conditional_edges("moderator", after_moderator, ["optimist", END])
graph = builder.compile()
