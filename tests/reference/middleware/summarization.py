"""LangChain's side of tests/middleware/summarization.rs: SummarizationMiddleware
with scripted models on both sides (the agent's and the summarising one):
when it triggers (tokens, messages, fraction, an AND clause), where it cuts
(last N messages, last N tokens, never between an AI message and its tool
answers), what the summarising model is asked (the prompt, the trimmed
messages as XML) and the messages that replace the history; and the
approximate token counter on its own."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import SummarizationMiddleware  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.messages.utils import count_tokens_approximately  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from scripted import ScriptedChat, call, dump, emit  # noqa: E402


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


QUESTION = "Find the weather in Paris & Rome <today>.\nThen compare them.\nKeep it short."


def replies() -> list:
    lookups = [call("weather", {"city": c}, f"c{i}") for i, c in enumerate(["Paris", "Rome"])]
    return [
        AIMessage(content="Looking both up.", tool_calls=lookups),
        AIMessage(content="Paris and Rome are both sunny."),
        AIMessage(content="Berlin too."),
    ]


def scenario(middleware_kwargs: dict, profile: dict | None = None) -> dict:
    """Two runs of one thread; the second is where the history is long
    enough to summarise."""
    model = ScriptedChat(replies=replies())
    summarizer = ScriptedChat(replies=[AIMessage(content="  Both cities are sunny.  ")])
    if profile is not None:
        model.profile = profile
        summarizer.profile = profile
    middleware = SummarizationMiddleware(model=summarizer, **middleware_kwargs)
    agent = create_agent(model, tools=[weather], middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage(QUESTION)]}, config)
    out = agent.invoke({"messages": [HumanMessage("And Berlin?")]}, config)
    return {
        "messages": dump(out["messages"]),
        "summarizer_requests": summarizer.seen,
        "last_model_request": model.seen[-1],
    }


def counts() -> list:
    lookups = [call("weather", {"city": "Zürich"}, "c1")]
    history = [
        HumanMessage("hello there"),
        AIMessage(content="", tool_calls=lookups),
        ToolMessage("Zürich: sunny", tool_call_id="c1", name="weather"),
        AIMessage(
            content="It is sunny.",
            usage_metadata={"input_tokens": 30, "output_tokens": 30, "total_tokens": 60},
            response_metadata={"model_provider": "openai"},
        ),
        HumanMessage([{"type": "text", "text": "and this?"}, {"type": "image_url", "image_url": {"url": "x"}}]),
    ]
    return [
        count_tokens_approximately(history),
        count_tokens_approximately(history, use_usage_metadata_scaling=True),
        count_tokens_approximately(history[:4], use_usage_metadata_scaling=True),
        count_tokens_approximately(history[:1]),
    ]


emit(
    {
        "counts": counts(),
        "messages_keep_cut_back_to_the_ai_message": scenario(
            {"trigger": ("tokens", 100), "keep": ("messages", 3)}
        ),
        "tokens_keep": scenario({"trigger": ("messages", 6), "keep": ("tokens", 40)}),
        "fraction_and_clause": scenario(
            {"trigger": [{"fraction": 0.5, "messages": 6}], "keep": ("messages", 2)},
            profile={"max_input_tokens": 200},
        ),
        "trimmed_for_the_summary": scenario(
            {"trigger": ("messages", 6), "keep": ("messages", 1), "trim_tokens_to_summarize": 92,
             "summary_prompt": "Summarise:\n{messages}\n\n"}
        ),
    }
)
