"""LangChain's side of tests/anthropic.rs's side-by-side test.

langchain 1.4.7's `create_agent` on langchain-anthropic's `ChatAnthropic`
against a local server that answers with scripted Messages API replies
(JSON, then SSE), through one scenario: a turn with parallel tool calls
(one to a tool that does not exist) and an answer, first without then
with streaming (`stream_mode="messages"`). Prints, as sorted JSON, the
request bodies the server received, the final messages, and the streamed
chunks, and the replies themselves (the Rust side serves the same).
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_core.tools import tool

USAGE = {"input_tokens": 10, "output_tokens": 5,
         "cache_read_input_tokens": 4, "cache_creation_input_tokens": 2}
CALLS = [
    {"type": "text", "text": "Let me check."},
    {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {"city": "Paris"}},
    {"type": "tool_use", "id": "toolu_b", "name": "no_such_tool", "input": {}},
]
ANSWER = [{"type": "text", "text": "It is sunny."}]


def reply(content, stop):
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": content, "stop_reason": stop, "stop_sequence": None, "usage": USAGE}


def events(content, stop):
    """The SSE events of a streamed reply of `content` blocks."""
    out = [{"type": "message_start", "message": {
        "id": "msg_s", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1}}},
        {"type": "ping"}]
    for index, block in enumerate(content):
        if block["type"] == "text":
            out.append({"type": "content_block_start", "index": index,
                        "content_block": {"type": "text", "text": ""}})
            for word in block["text"].split(" "):
                piece = word if word == block["text"].split(" ")[0] else " " + word
                out.append({"type": "content_block_delta", "index": index,
                            "delta": {"type": "text_delta", "text": piece}})
        else:
            out.append({"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})
            text = json.dumps(block["input"])
            for piece in (text[:5], text[5:]):
                out.append({"type": "content_block_delta", "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": piece}})
        out.append({"type": "content_block_stop", "index": index})
    out.append({"type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": USAGE})
    out.append({"type": "message_stop"})
    return out


SCRIPT = [
    ("json", reply(CALLS, "tool_use")),
    ("json", reply(ANSWER, "end_turn")),
    ("sse", events(CALLS, "tool_use")),
    ("sse", events(ANSWER, "end_turn")),
]
REQUESTS = []


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["content-length"]))
        # The body only: the SDK's headers are its own (it sends a newer
        # `anthropic-version` than the documented 2023-06-01 ours sends).
        REQUESTS.append(json.loads(body))
        kind, payload = SCRIPT[len(REQUESTS) - 1]
        if kind == "json":
            data, content_type = json.dumps(payload).encode(), "application/json"
        else:
            text = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in payload)
            data, content_type = text.encode(), "text/event-stream"
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@tool
def get_weather(city: str) -> str:
    """The weather in a city"""
    return f"sunny in {city}"


def message(m):
    """What matters of a message, ids left out."""
    out = {"type": m.type, "content": m.text}
    if m.type == "ai":
        out["tool_calls"] = [{"id": c["id"], "name": c["name"], "args": c["args"]}
                             for c in m.tool_calls]
        out["usage_metadata"] = m.usage_metadata
        meta = m.response_metadata
        out["response_metadata"] = {k: meta.get(k) for k in
                                    ("model_name", "model_provider", "stop_reason")}
    if m.type == "tool":
        out["tool_call_id"] = m.tool_call_id
        out["status"] = m.status
    return out


def chunk(c):
    """What matters of a streamed piece."""
    meta = c.response_metadata
    return {
        "text": c.text,
        "tool_call_chunks": [{"index": t["index"], "id": t["id"], "name": t["name"],
                              "args": t["args"]} for t in c.tool_call_chunks],
        "usage_metadata": c.usage_metadata,
        "stop_reason": meta.get("stop_reason"),
        "model_name": meta.get("model_name"),
    }


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    model = ChatAnthropic(model="claude-test", api_key="sk-ant-test", max_retries=0,
                          base_url=f"http://127.0.0.1:{server.server_address[1]}")
    agent = create_agent(model, tools=[get_weather], system_prompt="You are terse.")
    state = agent.invoke({"messages": [{"role": "user", "content": "Weather in Paris?"}]})
    chunks = []
    for piece, meta in agent.stream(
        {"messages": [{"role": "user", "content": "Weather in Paris?"}]},
        stream_mode="messages",
    ):
        if meta["langgraph_node"] == "model":
            chunks.append(chunk(piece))
    server.shutdown()
    out = {
        "replies": [{"kind": kind, "payload": payload} for kind, payload in SCRIPT],
        "requests": REQUESTS,
        "messages": [message(m) for m in state["messages"]],
        "chunks": chunks,
    }
    print(json.dumps(out, indent=1, sort_keys=True))


main()
