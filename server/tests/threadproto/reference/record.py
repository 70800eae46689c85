"""Records the official Agent Server's thread-centric protocol
(`POST /threads/{id}/commands`, `POST /threads/{id}/stream/events`) into
../expected/*.json, which server/tests/threadproto.rs replays against ours.

Start LangGraph's server on the reference graphs first:

    cd server/tests/python/reference
    langgraph dev --no-browser --no-reload --allow-blocking --port 2391

then `python3 record.py http://127.0.0.1:2391`. The script itself needs
only the standard library; requirements.txt pins the server it recorded.

Every scenario is a list of steps, each an HTTP exchange: a command (its
status and JSON body) or an event stream (its SSE frames: event name, `id`
and JSON data, read until the root namespace's terminal lifecycle event,
or for a fixed time). Ids and times are normalised as `normalise` says, so
two runs of the script write the same files.
"""

import http.client
import json
import os
import re
import sys
import threading
import time
import urllib.parse
import uuid

BASE = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:2391"
OUT = os.environ.get("THREADPROTO_OUT") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "expected")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
STREAM_ID = re.compile(r"^\d+-\d+(\.\d+)?$")
TERMINAL = {"completed", "failed", "interrupted"}


def connection():
    url = urllib.parse.urlparse(BASE)
    return http.client.HTTPConnection(url.hostname, url.port, timeout=30)


def request(method, path, body, raw=None):
    """One JSON exchange: (status, parsed body or text)."""
    c = connection()
    data = raw if raw is not None else json.dumps(body)
    c.request(method, path, data, {"content-type": "application/json"})
    r = c.getresponse()
    text = r.read().decode()
    try:
        return r.status, json.loads(text)
    except ValueError:
        return r.status, text


class Stream:
    """An event stream read on its own thread, frame by frame."""

    def __init__(self, path, body, raw=None, headers=None):
        self.frames, self.comments, self.status = [], [], None
        self.headers = {}
        self.done = threading.Event()
        self.conn = connection()
        data = raw if raw is not None else json.dumps(body)
        sent = {"content-type": "application/json", **(headers or {})}
        self.conn.request("POST", path, data, sent)
        r = self.conn.getresponse()
        self.status = r.status
        self.headers = {"content-type": r.getheader("content-type")}
        if r.status != 200:
            self.body = json.loads(r.read().decode())
            self.done.set()
            return
        self.body = None
        threading.Thread(target=self._read, args=(r,), daemon=True).start()

    def _read(self, r):
        frame = {}
        try:
            for raw in r:
                line = raw.decode().rstrip("\r\n")
                if line == "":
                    if frame:
                        self._frame(frame)
                    frame = {}
                elif line.startswith(":"):
                    self.comments.append(line)
                else:
                    key, _, value = line.partition(":")
                    frame[key] = value[1:] if value.startswith(" ") else value
        except Exception:
            pass
        self.done.set()

    def _frame(self, frame):
        data = json.loads(frame.get("data", "null"))
        self.frames.append({"event": frame.get("event"), "id": frame.get("id"), "data": data})
        params = data.get("params", {}) if isinstance(data, dict) else {}
        if (
            data.get("method") == "lifecycle"
            and params.get("namespace") == []
            and params.get("data", {}).get("event") in TERMINAL
        ):
            self.terminal = True

    def wait_terminal(self, count=1, timeout=15):
        end = time.time() + timeout
        while time.time() < end:
            n = sum(1 for f in self.frames if is_root_terminal(f))
            if n >= count or self.done.is_set():
                return
            time.sleep(0.05)

    def close(self, linger=0.4):
        time.sleep(linger)
        try:
            self.conn.sock.shutdown(2)
        except Exception:
            pass
        self.conn.close()
        if self.status != 200:
            return {"status": self.status, "body": self.body}
        return {
            "status": self.status,
            "content_type": self.headers["content-type"],
            "frames": list(self.frames),
            "heartbeats": sorted(set(self.comments)),
        }


def is_root_terminal(frame):
    d = frame["data"]
    p = d.get("params", {}) if isinstance(d, dict) else {}
    return (
        d.get("method") == "lifecycle"
        and p.get("namespace") == []
        and p.get("data", {}).get("event") in TERMINAL
    )


def normalise(value, names):
    """Uuids become `<uuid:N>` in order of first appearance; `timestamp`s 0;
    stream-entry event ids (`<ms>-<n>[.k]`) `<sid>` plus their suffix."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "timestamp" and isinstance(v, int):
                out[k] = 0
            elif k == "event_id" and isinstance(v, str) and STREAM_ID.match(v):
                out[k] = "<sid>" + (STREAM_ID.match(v).group(1) or "")
            else:
                out[k] = normalise(v, names)
        return out
    if isinstance(value, list):
        return [normalise(v, names) for v in value]
    if isinstance(value, str):
        return UUID.sub(lambda m: names.setdefault(m.group(0), f"<uuid:{len(names) + 1}>"), value)
    return value


class Scenario:
    def __init__(self, name):
        self.name, self.steps = name, []
        self.thread = str(uuid.uuid4())

    def command(self, body, thread=None, raw=None):
        path = f"/threads/{thread or self.thread}/commands"
        status, answer = request("POST", path, body, raw)
        self.steps.append({"kind": "command", "path": path, "request": body if raw is None else raw,
                           "status": status, "body": answer})
        return answer

    def stream(self, body, thread=None, raw=None, headers=None):
        path = f"/threads/{thread or self.thread}/stream/events"
        s = Stream(path, body, raw, headers)
        s.step = {"kind": "stream", "path": path, "request": body if raw is None else raw}
        if headers:
            s.step["headers"] = headers
        return s

    def finish(self, s, linger=0.4):
        s.step.update(s.close(linger))
        self.steps.append(s.step)

    def save(self):
        names = {}
        doc = {"scenario": self.name, "server": "langgraph-api 0.16.7 (langgraph dev)",
               "steps": normalise(self.steps, names)}
        with open(os.path.join(OUT, self.name + ".json"), "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        print("wrote", self.name, len(self.steps), "steps")


CHAT_IN = {"messages": [{"type": "human", "content": "hi there", "id": "m-1"}]}
ALL = ["values", "updates", "messages", "lifecycle", "input", "custom", "tasks", "tools", "checkpoints"]


def chat():
    """run.start on a new thread, values/updates/messages/lifecycle subscribed."""
    sc = Scenario("chat")
    s = sc.stream({"channels": ["values", "updates", "messages", "lifecycle"]})
    sc.command({"id": 1, "method": "run.start", "params": {"assistant_id": "chat", "input": CHAT_IN}})
    s.wait_terminal()
    sc.finish(s)
    # The same run as the REST API lists it.
    status, runs = request("GET", f"/threads/{sc.thread}/runs", None)
    sc.steps.append({"kind": "get", "path": f"/threads/{sc.thread}/runs", "status": status,
                     "body": [{"status": r["status"], "assistant_id": r["assistant_id"]} for r in runs]})
    # Reconnect: `since` in the body skips what was seen.
    s = sc.stream({"channels": ["values", "messages", "lifecycle"], "since": 5})
    s.wait_terminal()
    sc.finish(s)
    # `Last-Event-ID` is not how this stream resumes: it replays all.
    s = sc.stream({"channels": ["lifecycle"]}, headers={"Last-Event-ID": "5"})
    s.wait_terminal()
    sc.finish(s)
    sc.save()


def messages_only():
    """Only the messages channel: a streamed chat answer."""
    sc = Scenario("messages_only")
    s = sc.stream({"channels": ["messages"]})
    sc.command({"id": 7, "method": "run.start", "params": {"assistant_id": "chat", "input": CHAT_IN}})
    time.sleep(2.5)
    sc.finish(s, 0)
    sc.save()


def approval():
    """An interrupt on the input channel, answered with input.respond."""
    sc = Scenario("approval")
    chans = ["values", "updates", "lifecycle", "input", "custom"]
    s = sc.stream({"channels": chans})
    sc.command({"id": 1, "method": "run.start",
                "params": {"assistant_id": "approval", "input": {"topic": "cats"}}})
    s.wait_terminal()
    sc.finish(s)
    frames = sc.steps[-1]["frames"]
    asked = [f["data"]["params"]["data"] for f in frames if f["event"] == "input.requested"]
    iid = asked[0]["interrupt_id"] if asked else "none"
    sc.command({"id": 2, "method": "input.respond", "params": {"interrupt_id": "not-an-interrupt", "response": True}})
    s = sc.stream({"channels": chans})
    sc.command({"id": 3, "method": "input.respond", "params": {"interrupt_id": iid, "response": True}})
    s.wait_terminal(count=2)
    sc.finish(s)
    sc.command({"id": 4, "method": "input.respond", "params": {"interrupt_id": iid, "response": True}})
    sc.save()


def nest():
    """A subgraph: everything, then only the child's namespace."""
    sc = Scenario("nest")
    s = sc.stream({"channels": ["values", "updates", "lifecycle"]})
    sc.command({"id": 1, "method": "run.start", "params": {"assistant_id": "nest", "input": {"n": 1}}})
    s.wait_terminal()
    sc.finish(s)
    s = sc.stream({"channels": ["values", "updates", "lifecycle"], "namespaces": [["child"]]})
    time.sleep(1.5)
    sc.finish(s, 0)
    s = sc.stream({"channels": ["values", "updates", "lifecycle"], "namespaces": [[]], "depth": 0})
    time.sleep(1.5)
    sc.finish(s, 0)
    sc.save()


def cancel():
    """run.cancel (not a command of this protocol) and the REST cancel."""
    sc = Scenario("cancel")
    s = sc.stream({"channels": ["lifecycle", "values"]})
    ans = sc.command({"id": 1, "method": "run.start",
                      "params": {"assistant_id": "countdown", "input": {"n": 10}}})
    end = time.time() + 10
    while len(s.frames) < 3 and time.time() < end:
        time.sleep(0.05)
    run_id = ans.get("result", {}).get("run_id")
    sc.command({"id": 2, "method": "run.cancel", "params": {"run_id": run_id}})
    status, body = request("POST", f"/threads/{sc.thread}/runs/{run_id}/cancel", None, raw="")
    sc.steps.append({"kind": "rest", "path": f"/threads/{sc.thread}/runs/{run_id}/cancel", "status": status})
    s.wait_terminal(timeout=4)
    sc.finish(s)
    status, runs = request("GET", f"/threads/{sc.thread}/runs", None)
    sc.steps.append({"kind": "get", "path": f"/threads/{sc.thread}/runs", "status": status,
                     "body": [{"status": r["status"]} for r in runs]})
    sc.save()


def errors():
    """Refusals: status and body."""
    sc = Scenario("errors")
    sc.command(None, raw="{not json")
    sc.command({"method": "run.start"})
    sc.command({"id": "1", "method": "run.start"})
    sc.command({"id": 1})
    sc.command([1, 2])
    sc.command({"id": 3, "method": "run.stop"})
    sc.command({"id": 4, "method": "run.start", "params": {}})
    sc.command({"id": 5, "method": "run.start", "params": {"assistant_id": ""}})
    sc.command({"id": 6, "method": "run.start", "params": {"assistant_id": "nope", "input": {}}})
    sc.command({"id": 7, "method": "run.start", "params": {"assistant_id": "chat",
                "config": {"configurable": {"checkpoint_id": "abc"}}}})
    sc.command({"id": 8, "method": "run.start", "params": {"assistant_id": "chat",
                "config": {"configurable": {"checkpoint_id": 5}}}})
    sc.command({"id": 9, "method": "input.respond", "params": {}})
    sc.command({"id": 10, "method": "input.respond", "params": {"interrupt_id": "x", "namespace": "a"}})
    sc.command({"id": 11, "method": "input.respond", "params": {"responses": []}})
    sc.command({"id": 12, "method": "input.respond", "params": {"responses": [1]}})
    sc.command({"id": 13, "method": "input.respond", "params": {"responses": [{}]}})
    sc.command({"id": 14, "method": "input.respond", "params": {"interrupt_id": "x", "response": 1}})
    sc.command({"id": 15, "method": "agent.getTree"})
    sc.command({"id": 16, "method": "subscription.subscribe", "params": {"channels": ["values"]}})
    sc.command({"id": 17, "method": "subscription.subscribe", "params": {"channels": []}})
    sc.command({"id": 18, "method": "subscription.unsubscribe", "params": {}})
    for body, raw in [(None, "{nope"), ({}, None), ({"channels": []}, None),
                      ({"channels": "values"}, None), ({"channels": ["values", "debug", 3]}, None)]:
        s = sc.stream(body, raw=raw)
        sc.finish(s, 0)
    sc.save()


if __name__ == "__main__":
    for scenario in (sys.argv[2:] or ["chat", "messages_only", "approval", "nest", "cancel", "errors"]):
        globals()[scenario]()
