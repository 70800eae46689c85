"""The official Python client (langgraph-sdk) against agent-state-server.

Run by run.sh against the `serve` example (graphs `chat`, `approval`,
`countdown` and `nest`): python test_sdk.py http://127.0.0.1:PORT
Prints one line per check, then "N passed, N failed"; exits 1 on a failure.
"""

import asyncio
import uuid

import httpx
from checks import check, run

# The official server's assistant id for a graph named "approval".
APPROVAL = "e234584d-b7bf-527f-9d06-ba77f8f5172d"



async def refused(status, awaitable):
    """The call fails with this HTTP status (the SDK's typed errors, such
    as NotFoundError, are httpx.HTTPStatusError too)."""
    try:
        await awaitable
    except httpx.HTTPStatusError as e:
        assert e.response.status_code == status, (e.response.status_code, e.response.text)
        assert "detail" in e.response.json(), e.response.text
        return
    raise AssertionError(f"expected a {status}")


@check
async def assistants(client):
    found = await client.assistants.search(graph_id="approval")
    assert [a["assistant_id"] for a in found] == [APPROVAL], found
    one = await client.assistants.get(APPROVAL)
    assert one["graph_id"] == "approval", one
    graph = await client.assistants.get_graph(APPROVAL)
    assert {"source": "draft", "target": "review"} in graph["edges"], graph
    schemas = await client.assistants.get_schemas(APPROVAL)
    assert schemas["graph_id"] == "approval", schemas
    assert "topic" in schemas["input_schema"]["properties"], schemas


@check
async def graph_xray(client):
    # `nest`'s node `child` is a graph of its own: drawn expanded with
    # `xray`, its node `inc` as `child:inc`, where the official server
    # draws it.
    flat = await client.assistants.get_graph("nest")
    assert [n["id"] for n in flat["nodes"]] == ["__start__", "child", "done", "__end__"], flat
    drawn = await client.assistants.get_graph("nest", xray=True)
    assert [n["id"] for n in drawn["nodes"]] == ["__start__", "done", "__end__", "child:inc"], drawn
    assert drawn["edges"] == [
        {"source": "__start__", "target": "child:inc"},
        {"source": "child:inc", "target": "done"},
        {"source": "done", "target": "__end__"},
    ], drawn
    assert await client.assistants.get_graph("nest", xray=1) == drawn
    await refused(422, client.assistants.get_graph("nest", xray=0))
    await refused(422, client.assistants.get_graph("nest", params={"xray": "deep"}))


@check
async def threads(client):
    tid = str(uuid.uuid4())
    t = await client.threads.create(thread_id=tid, metadata={"user": "sdk"})
    assert (t["thread_id"], t["status"]) == (tid, "idle"), t
    await refused(409, client.threads.create(thread_id=tid))
    same = await client.threads.create(thread_id=tid, if_exists="do_nothing")
    assert same["metadata"] == {"user": "sdk"}, same
    patched = await client.threads.update(tid, metadata={"k": "v"})
    assert patched["metadata"] == {"user": "sdk", "k": "v"}, patched
    found = await client.threads.search(metadata={"k": "v"}, status="idle", limit=5)
    assert [x["thread_id"] for x in found] == [tid], found
    await client.threads.delete(tid)
    await refused(404, client.threads.get(tid))


@check
async def stream_interrupt_and_resume(client):
    t = await client.threads.create()
    tid = t["thread_id"]
    parts = [
        p
        async for p in client.runs.stream(
            tid, "approval", input={"topic": "x"}, stream_mode=["values", "updates", "custom"]
        )
    ]
    names = [p.event for p in parts]
    assert names == ["metadata", "values", "custom", "updates", "values", "updates", "values"], names
    assert parts[0].data["attempt"] == 1, parts[0]
    assert parts[5].data["__interrupt__"][0]["value"] == {"question": "approve?"}, parts[5]
    t = await client.threads.get(tid)
    assert t["status"] == "interrupted", t
    assert t["metadata"]["graph_id"] == "approval", t
    state = await client.threads.get_state(tid)
    assert state["next"] == ["review"], state
    out = await client.runs.wait(tid, "approval", command={"resume": True})
    assert out == {"topic": "x", "log": ["draft:x", "review"], "approved": True}, out
    assert (await client.threads.get(tid))["status"] == "idle"
    runs = await client.runs.list(tid)
    assert [r["status"] for r in runs] == ["success", "success"], runs
    run = await client.runs.get(tid, runs[0]["run_id"])
    assert run["thread_id"] == tid, run
    history = await client.threads.get_history(tid, limit=3)
    assert len(history) == 3 and history[0]["values"]["approved"] is True, history


@check
async def use_stream_sequence(client):
    """What useStream sends for a chat turn, in order."""
    thread = await client.threads.create(metadata={"graph_id": "chat"})
    tid = thread["thread_id"]
    parts = [
        p
        async for p in client.runs.stream(
            tid,
            "chat",
            input={"messages": [{"type": "human", "content": "hello there"}]},
            stream_mode=["messages-tuple", "values"],
            on_disconnect="cancel",
        )
    ]
    run_id = parts[0].data["run_id"]
    chunks = [p.data[0] for p in parts if p.event == "messages"]
    assert chunks and all(c["id"] == chunks[0]["id"] for c in chunks), chunks
    assert chunks[-1]["chunk_position"] == "last", chunks[-1]
    text = "".join(c["content"] for c in chunks)
    assert text == "You said: hello there", text
    meta = next(p.data[1] for p in parts if p.event == "messages")
    assert (meta["langgraph_node"], meta["thread_id"], meta["run_id"]) == ("echo", tid, run_id), meta
    last = [p.data for p in parts if p.event == "values"][-1]
    assert [m["type"] for m in last["messages"]] == ["human", "ai"], last
    run = await client.runs.get(tid, run_id)
    assert run["status"] == "success", run
    history = await client.threads.get_history(tid, limit=10)
    assert history[0]["values"]["messages"][-1]["content"] == text, history[0]
    found = await client.threads.search(metadata={"graph_id": "chat"}, limit=100)
    assert tid in [t["thread_id"] for t in found], found


@check
async def messages_mode(client):
    """`messages`: the message's metadata once, then the message so far."""
    parts = [
        p
        async for p in client.runs.stream(
            None, "chat", input={"messages": [{"type": "human", "content": "hi"}]},
            stream_mode=["messages", "values"],
        )
    ]
    names = [p.event for p in parts]
    assert names[:3] == ["metadata", "values", "messages/metadata"], names
    (mid, meta), = parts[2].data.items()
    assert meta["metadata"]["langgraph_node"] == "echo", meta
    partial = [p.data[0] for p in parts if p.event == "messages/partial"]
    assert all(m["id"] == mid and m["type"] == "ai" for m in partial), partial
    texts = [m["content"] for m in partial]
    assert texts[-1] == "You said: hi" and all(texts[-1].startswith(t) for t in texts), texts


@check
async def debug_mode(client):
    """`debug`: checkpoints and tasks in LangGraph's envelope."""
    tid = (await client.threads.create())["thread_id"]
    parts = [
        p async for p in client.runs.stream(tid, "countdown", input={"n": 1}, stream_mode="debug")
    ]
    kinds = [(p.data["type"], p.data["step"]) for p in parts if p.event == "debug"]
    assert kinds == [
        ("checkpoint", -1), ("checkpoint", 0), ("task", 1), ("task_result", 1), ("checkpoint", 1)
    ], kinds
    last = parts[-1].data["payload"]
    assert last["values"] == {"n": 0} and last["checkpoint"]["thread_id"] == tid, last
    assert parts[3].data["payload"]["name"] == "tick", parts[3].data


@check
async def events_mode(client):
    """`events`: astream_events v2, what @ag-ui/langgraph reads."""
    parts = [
        p
        async for p in client.runs.stream(
            None, "chat", input={"messages": [{"type": "human", "content": "hi"}]},
            stream_mode="events",
        )
    ]
    seen = [(p.data["event"], p.data["name"]) for p in parts if p.event == "events"]
    model = [e for e, _ in seen if e.startswith("on_chat_model")]
    assert seen[:2] == [("on_chain_start", "chat"), ("on_chain_start", "echo")], seen
    assert seen[-3:] == [
        ("on_chain_stream", "echo"), ("on_chain_end", "echo"), ("on_chain_end", "chat")
    ], seen
    assert model[0] == "on_chat_model_start" and model[-1] == "on_chat_model_end", model
    streamed = [p.data for p in parts if p.event == "events"
                and p.data["event"] == "on_chat_model_stream"]
    text = "".join(e["data"]["chunk"]["content"] for e in streamed)
    assert text == "You said: hi", streamed
    assert streamed[0]["metadata"]["langgraph_node"] == "echo", streamed[0]
    assert streamed[0]["data"]["chunk"]["type"] == "AIMessageChunk", streamed[0]


@check
async def subgraphs_stream(client):
    """`stream_subgraphs`: a subgraph's events under `mode|node:task`."""
    parts = [
        p
        async for p in client.runs.stream(
            None, "nest", input={"n": 1}, stream_mode=["updates"], stream_subgraphs=True
        )
    ]
    names = [p.event.split(":")[0] for p in parts[1:]]
    assert names == ["updates|child", "updates", "updates"], names
    assert [p.data for p in parts[1:]] == [
        {"inc": {"n": 2}}, {"child": {"n": 2}}, {"done": {"n": 20}}
    ], parts
    alone = [p.event async for p in client.runs.stream(None, "nest", input={"n": 1})]
    assert alone == ["metadata", "values", "values", "values"], alone


@check
async def update_state(client):
    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "approval", input={"topic": "y"})
    await client.threads.update_state(tid, {"log": ["by hand"]}, as_node="draft")
    state = await client.threads.get_state(tid)
    assert state["values"]["log"] == ["draft:y", "by hand"], state


@check
async def stateless_runs(client):
    out = await client.runs.wait(None, "countdown", input={"n": 2})
    assert out == {"n": 0}, out
    parts = [p async for p in client.runs.stream(None, "countdown", input={"n": 2})]
    assert [p.data for p in parts[1:]] == [{"n": 2}, {"n": 1}, {"n": 0}], parts


@check
async def background_run_joined(client):
    tid = (await client.threads.create())["thread_id"]
    run = await client.runs.create(tid, "countdown", input={"n": 3})
    assert run["status"] == "pending", run
    parts = [p async for p in client.runs.join_stream(tid, run["run_id"])]
    assert [p.data for p in parts if p.event == "values"][-1] == {"n": 0}, parts
    assert await client.runs.join(tid, run["run_id"]) == {"n": 0}
    await client.runs.create(tid, "countdown", input={"n": 30})
    running = await client.runs.list(tid, limit=1)
    await client.runs.cancel(tid, running[0]["run_id"], wait=True)
    assert (await client.runs.get(tid, running[0]["run_id"]))["status"] == "interrupted"


@check
async def bad_inputs(client):
    tid = (await client.threads.create())["thread_id"]
    unknown = str(uuid.uuid4())
    await refused(404, client.runs.wait(unknown, "approval", input={"topic": "x"}))
    await refused(422, client.runs.wait(tid, "nope", input={}))
    await refused(422, client.runs.wait(tid, "approval", input={"topic": 5}))
    await refused(422, client.threads.get(".."))
    stream = client.runs.stream(tid, "approval", input={"topic": "x"}, stream_mode="bogus")
    await refused(422, anext(stream))


@check
async def busy_thread_rejects(client):
    tid = (await client.threads.create())["thread_id"]
    first = asyncio.create_task(client.runs.wait(tid, "countdown", input={"n": 5}))
    await asyncio.sleep(0.3)
    assert (await client.threads.get(tid))["status"] == "busy"
    await refused(
        409,
        client.runs.wait(tid, "countdown", input={"n": 1}, multitask_strategy="reject"),
    )
    assert await first == {"n": 0}


@check
async def run_control(client):
    """interrupt_before, command goto with update, a run from a checkpoint."""
    tid = (await client.threads.create())["thread_id"]
    out = await client.runs.wait(tid, "approval", input={"topic": "x"}, interrupt_before=["review"])
    assert out["log"] == ["draft:x"] and "__interrupt__" not in out, out
    assert (await client.threads.get_state(tid))["next"] == ["review"]
    await client.runs.wait(tid, "approval", input=None)
    await client.runs.wait(tid, "approval", command={"resume": True})
    out = await client.runs.wait(tid, "approval", command={"goto": "draft", "update": {"topic": "y"}})
    assert out["log"] == ["draft:x", "review", "draft:y"], out
    first = (await client.threads.get_history(tid, limit=100))[-1]
    out = await client.runs.wait(
        tid, "approval", input={"topic": "z"}, checkpoint_id=first["checkpoint_id"]
    )
    assert out["log"] == ["draft:z"], out
    await refused(422, client.runs.wait(tid, "approval", command={"goto": "nope"}))
    await refused(422, client.runs.wait(tid, "approval", input={}, interrupt_after=["nope"]))


@check
async def copy_rollback_delete(client):
    tid = (await client.threads.create(metadata={"user": "py"}))["thread_id"]
    await client.runs.wait(tid, "countdown", input={"n": 1})
    copy = await client.threads.copy(tid)
    assert copy["metadata"]["user"] == "py" and copy["thread_id"] != tid, copy
    before = await client.threads.get_history(tid, limit=100)
    copied = await client.threads.get_history(copy["thread_id"], limit=100)
    assert [s["values"] for s in copied] == [s["values"] for s in before], copied
    first = await client.runs.create(tid, "countdown", input={"n": 20})
    await asyncio.sleep(0.5)
    out = await client.runs.wait(tid, "countdown", input={"n": 1}, multitask_strategy="rollback")
    assert out == {"n": 0}, out
    await refused(404, client.runs.get(tid, first["run_id"]))
    after = await client.threads.get_history(tid, limit=100)
    assert all(s["values"].get("n", 0) <= 1 for s in after), after
    runs = await client.runs.list(tid)
    await client.runs.delete(tid, runs[0]["run_id"])
    await refused(404, client.runs.get(tid, runs[0]["run_id"]))


@check
async def oversized_body(client):
    tid = (await client.threads.create())["thread_id"]
    big = "a" * (3 << 20)
    await refused(413, client.runs.wait(tid, "approval", input={"topic": big}))


@check
async def store_items(client):
    # The Store's endpoints through the SDK's StoreClient: a missing item
    # is None, a search finds by filter, namespaces list, a delete sticks.
    user = f"u{uuid.uuid4().hex[:8]}"
    await client.store.put_item(["users", user], "profile", {"work": "geology", "level": 3})
    await client.store.put_item(["users", user, "notes"], "n1", {"text": "likes tea", "level": 1})
    item = await client.store.get_item(["users", user], "profile")
    assert item["value"] == {"work": "geology", "level": 3}, item
    assert item["namespace"] == ["users", user], item
    assert await client.store.get_item(["users", user], "missing") is None
    found = await client.store.search_items(["users", user], filter={"level": {"$gte": 2}})
    assert [i["key"] for i in found["items"]] == ["profile"], found
    listed = await client.store.list_namespaces(prefix=["users", user])
    assert listed["namespaces"] == [["users", user], ["users", user, "notes"]], listed
    deep = await client.store.list_namespaces(prefix=["users", user], max_depth=2)
    assert deep["namespaces"] == [["users", user]], deep
    await client.store.delete_item(["users", user], "profile")
    assert await client.store.get_item(["users", user], "profile") is None


@check
async def store_refusals(client):
    # Refused, nothing written, with the official server's statuses: 400
    # for what its store refuses, 422 for a label that does not validate.
    user = f"u{uuid.uuid4().hex[:8]}"
    for namespace, status in ((["langgraph", user], 400), ([user, ""], 422)):
        try:
            await client.store.put_item(namespace, "k", {"a": 1})
        except httpx.HTTPStatusError as e:
            assert e.response.status_code == status, e.response.text
        else:
            raise AssertionError(f"{namespace} was stored")
    # The official server reads a filter only on the items it finds.
    await client.store.put_item([user, "seed"], "k", {"a": 1})
    try:
        await client.store.search_items([user], filter={"a": {"$near": 1}})
    except httpx.HTTPStatusError as e:
        assert e.response.status_code == 400, e.response.text
        assert "$near" in e.response.text, e.response.text
    else:
        raise AssertionError("an unknown operator was accepted")
    listed = await client.store.list_namespaces(prefix=[user])
    assert listed["namespaces"] == [[user, "seed"]], listed


if __name__ == "__main__":
    run()
