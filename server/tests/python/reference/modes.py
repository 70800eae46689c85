"""The graphs the stream-mode fixtures were recorded from (see
../../fixtures/README.md): LangGraph's own server serving them answered
the runs whose streams the Rust tests compare with ours.

    langgraph dev --config langgraph.modes.json --no-browser --no-reload \
        --allow-blocking --port 2024
"""

import operator
from typing import Annotated

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict


def talk(state: MessagesState):
    """Streams "hello there friend" token by token, as message m1."""
    answer = AIMessage(content="hello there friend", id="m1")
    model = GenericFakeChatModel(messages=iter([answer]))
    return {"messages": [model.invoke(state["messages"])]}


b = StateGraph(MessagesState)
b.add_node("talk", talk)
b.add_edge(START, "talk")
chat = b.compile()


class Pair(TypedDict):
    topic: str
    log: Annotated[list[str], operator.add]


b = StateGraph(Pair)
b.add_node("first", lambda s: {"log": ["first:" + s["topic"]]})
b.add_node("second", lambda s: {"log": ["second"]})
b.add_edge(START, "first")
b.add_edge("first", "second")
pair = b.compile()


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


def say(state: MessagesState):
    """Returns a message whole: no model call streams it."""
    return {"messages": [AIMessage(content="done", id="m2")]}


b = StateGraph(MessagesState)
b.add_node("say", say)
b.add_edge(START, "say")
reply = b.compile()


class Asked(TypedDict):
    answer: str


def question(state: Asked):
    """Pauses inside the subgraph until a person answers."""
    return {"answer": interrupt({"question": "why?"})}


b = StateGraph(Asked)
b.add_node("question", question)
b.add_edge(START, "question")
inner_ask = b.compile()

b = StateGraph(Asked)
b.add_node("child", inner_ask)
b.add_edge(START, "child")
ask = b.compile()

b = StateGraph(Count)
b.add_node("mid", nest)
b.add_node("last", lambda s: {"n": s["n"] + 100})
b.add_edge(START, "mid")
b.add_edge("mid", "last")
deep = b.compile()
