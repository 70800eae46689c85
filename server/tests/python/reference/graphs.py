"""The serve example's graphs written for LangGraph's own server, to run
test_sdk.py against it (see ../README.md):

    langgraph dev --no-browser --no-reload --allow-blocking --port 2024
    python ../test_sdk.py http://127.0.0.1:2024
"""

import asyncio
import operator
from typing import Annotated

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict


class Approval(TypedDict):
    topic: str
    log: Annotated[list[str], operator.add]
    approved: bool


def draft(state: Approval):
    get_stream_writer()({"progress": "drafting"})
    return {"log": ["draft:" + state["topic"]]}


def review(state: Approval):
    ok = interrupt({"question": "approve?"})
    return {"log": ["review"], "approved": bool(ok)}


b = StateGraph(Approval)
b.add_node("draft", draft)
b.add_node("review", review)
b.add_edge(START, "draft")
b.add_edge("draft", "review")
b.add_edge("review", END)
approval = b.compile()


class Countdown(TypedDict):
    n: int


async def tick(state: Countdown):
    await asyncio.sleep(0.2)
    return {"n": max(state["n"] - 1, 0)}


b = StateGraph(Countdown)
b.add_node("tick", tick)
b.add_edge(START, "tick")
b.add_conditional_edges("tick", lambda s: "tick" if s["n"] > 0 else END, ["tick", END])
countdown = b.compile()


def echo(state: MessagesState):
    heard = state["messages"][-1].content
    model = GenericFakeChatModel(messages=iter([AIMessage(content=f"You said: {heard}")]))
    return {"messages": [model.invoke(state["messages"])]}


b = StateGraph(MessagesState)
b.add_node("echo", echo)
b.add_edge(START, "echo")
chat = b.compile()


class Count(TypedDict):
    n: int


b = StateGraph(Count)
b.add_node("inc", lambda s: {"n": s["n"] + 1})
b.add_edge(START, "inc")
inner = b.compile()

b = StateGraph(Count)
b.add_node("child", inner)
b.add_node("done", lambda s: {"n": s["n"] * 10})
b.add_edge(START, "child")
b.add_edge("child", "done")
nest = b.compile()


class Twin(TypedDict):
    answers: Annotated[list[str], operator.add]


def left(state: Twin):
    said = interrupt({"ask": "left"})
    return {"answers": ["left:" + str(said)]}


def right(state: Twin):
    said = interrupt({"ask": "right"})
    return {"answers": ["right:" + str(said)]}


b = StateGraph(Twin)
b.add_node("left", left)
b.add_node("right", right)
b.add_edge(START, "left")
b.add_edge(START, "right")
twin = b.compile()
