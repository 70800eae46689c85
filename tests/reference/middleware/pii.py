"""PIIMiddleware (langchain 1.4.7): every built-in detector and a custom
pattern under every strategy on tricky texts (the exact strings), then
agents redacting the input, tool results and output, and blocking."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from calls_common import emit, messages_of, scripted  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import PIIMiddleware  # noqa: E402
from langchain.agents.middleware._redaction import RedactionRule  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

TEXTS = [
    "Mail john.doe@example.com or JANE@Mail.Example.ORG today; a@b.c is short, x@y.co fine",
    "Card 4111 1111 1111 1111, bad 4111 1111 1111 1112, dashed 5500-0000-0000-0004, plain 4012888888881881",
    "IPs 192.168.1.1 and 10.0.0.255 but not 999.1.1.1 or 01.2.3.4 or 1.2.3.4.5",
    "MACs 00:1A:2B:3C:4D:5E and aa-bb-cc-dd-ee-ff, not 00:1A:2B:3C:4D",
    "See https://example.com/path?q=1, http://x, www.rust-lang.org and docs.rs/regex/latest plus example.com in prose",
    "Unicode: café josé@exemple.fr ok, ünïcode 4111-1111-1111-1111 and https://пример.рф/путь",
    "nothing here",
]
KINDS = ["email", "credit_card", "ip", "mac_address", "url"]
STRATEGIES = ["redact", "mask", "hash", "block"]
KEY = r"sk-[a-zA-Z0-9]{8,}"


def apply(kind, strategy, text, detector=None):
    rule = RedactionRule(pii_type=kind, strategy=strategy, detector=detector).resolve()
    try:
        return rule.apply(text)[0]
    except Exception as exc:  # noqa: BLE001
        return f"raised: {exc}"


def strings():
    out = {}
    for kind in KINDS:
        for strategy in STRATEGIES:
            out[f"{kind}/{strategy}"] = [apply(kind, strategy, t) for t in TEXTS]
    key_texts = ["key sk-abcdefgh1234 and sk-XYZ98765432 but not sk-short", "none"]
    for strategy in STRATEGIES:
        out[f"api_key/{strategy}"] = [apply("api_key", strategy, t, KEY) for t in key_texts]
    return out


def run(middleware, script, question):
    @tool
    def lookup(q: str) -> str:
        """Looks a customer up."""
        return "Customer: bob@corp.io, card 4111-1111-1111-1111"

    model = scripted(*script)
    agent = create_agent(model, tools=[lookup], middleware=middleware)
    try:
        state = agent.invoke({"messages": [HumanMessage(question)]})
    except Exception as exc:  # noqa: BLE001
        return {"raised": f"{type(exc).__name__}: {exc}", "seen": model.seen}
    return {"messages": messages_of(state), "seen": model.seen}


ask = AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": "bob"}, "id": "call_1"}])
answer = AIMessage("Bob is bob@corp.io at 10.1.2.3")
agents = {
    "input": run(
        [PIIMiddleware("email"), PIIMiddleware("ip", strategy="mask")],
        [AIMessage("noted")],
        "I am ann@example.com on 192.168.0.7",
    ),
    "tool_results_and_output": run(
        [
            PIIMiddleware("email", strategy="hash", apply_to_input=False,
                          apply_to_tool_results=True, apply_to_output=True),
            PIIMiddleware("credit_card", strategy="mask", apply_to_tool_results=True),
        ],
        [ask, answer],
        "Who is bob? ann@example.com asks",
    ),
    "block": run(
        [PIIMiddleware("email", strategy="block")], [AIMessage("unused")],
        "write to ann@example.com",
    ),
    "blocks_as_content": run(
        [PIIMiddleware("url", strategy="redact")], [AIMessage("ok")],
        [{"type": "text", "text": "see https://a.example/x"}, {"type": "image", "url": "u"}],
    ),
}
emit({"strings": strings(), "agents": agents})
