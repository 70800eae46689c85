"""The official Python client (langgraph-sdk) on the run and thread routes
beyond the basics: a state at a checkpoint, a fork at a checkpoint, a
history from a checkpoint, two interrupts resumed by id (the `twin`
graph), stateless background runs and batches, cancelling several runs,
and a thread's join stream.

Run by run.sh (SDK_TEST=test_routes.py) against the `serve` example, or
against LangGraph's own server on reference/ (see README.md):
python test_routes.py http://127.0.0.1:PORT
Prints one line per check, then "N passed, N failed"; exits 1 on a failure.
"""

import asyncio

import httpx
from checks import check, run



async def paused_approval(client):
    """A thread paused on the approval graph's review, and its history."""
    t = await client.threads.create()
    tid = t["thread_id"]
    await client.runs.wait(tid, "approval", input={"topic": "x", "log": []})
    return tid, await client.threads.get_history(tid)


@check
async def state_at_checkpoint(client):
    tid, history = await paused_approval(client)
    older = history[1]["checkpoint"]
    at = await client.threads.get_state(tid, checkpoint=older)
    assert at["checkpoint"]["checkpoint_id"] == older["checkpoint_id"], at
    assert at["values"]["log"] == [] and at["next"] == ["draft"], at
    by_id = await client.threads.get_state(tid, checkpoint_id=older["checkpoint_id"])
    assert by_id["values"] == at["values"] and by_id["next"] == at["next"], by_id
    # A checkpoint config that names no id: the latest state.
    latest = await client.threads.get_state(tid, checkpoint={})
    assert latest["checkpoint"]["checkpoint_id"] == history[0]["checkpoint"]["checkpoint_id"]


@check
async def fork_and_history_at_checkpoint(client):
    tid, history = await paused_approval(client)
    first = history[-1]["checkpoint"]
    written = await client.threads.update_state(
        tid, {"topic": "forked"}, checkpoint_id=first["checkpoint_id"]
    )
    now = await client.threads.get_state(tid)
    assert now["checkpoint"]["checkpoint_id"] == written["checkpoint"]["checkpoint_id"], now
    assert now["parent_checkpoint"]["checkpoint_id"] == first["checkpoint_id"], now
    assert now["values"]["topic"] == "forked" and now["values"]["log"] == [], now
    again = await client.threads.update_state(tid, {"topic": "again"}, checkpoint=first)
    now = await client.threads.get_state(tid)
    assert now["checkpoint"]["checkpoint_id"] == again["checkpoint"]["checkpoint_id"], now
    assert now["parent_checkpoint"]["checkpoint_id"] == first["checkpoint_id"], now
    # A history from a checkpoint is that checkpoint alone.
    one = await client.threads.get_history(tid, checkpoint=history[1]["checkpoint"])
    assert [s["checkpoint"]["checkpoint_id"] for s in one] == [
        history[1]["checkpoint"]["checkpoint_id"]
    ], one


@check
async def resume_two_interrupts_by_id(client):
    t = await client.threads.create()
    tid = t["thread_id"]
    paused = await client.runs.wait(tid, "twin", input={"answers": []})
    assert len(paused["__interrupt__"]) == 2, paused
    state = await client.threads.get_state(tid)
    asked = {i["value"]["ask"]: i["id"] for i in state["interrupts"]}
    assert sorted(asked) == ["left", "right"], state
    # One of them by id: that one goes on, the other waits.
    half = await client.runs.wait(tid, "twin", command={"resume": {asked["left"]: "L"}})
    assert [i["id"] for i in half["__interrupt__"]] == [asked["right"]], half
    state = await client.threads.get_state(tid)
    assert state["values"]["answers"] == ["left:L"] and state["next"] == ["right"], state
    done = await client.runs.wait(tid, "twin", command={"resume": {asked["right"]: "R"}})
    assert done == {"answers": ["left:L", "right:R"]}, done
    # Both at once, on a new thread.
    t = await client.threads.create()
    tid = t["thread_id"]
    await client.runs.wait(tid, "twin", input={"answers": []})
    state = await client.threads.get_state(tid)
    both = {i["id"]: i["value"]["ask"].upper() for i in state["interrupts"]}
    done = await client.runs.wait(tid, "twin", command={"resume": both})
    assert done == {"answers": ["left:LEFT", "right:RIGHT"]}, done
    assert (await client.threads.get(tid))["status"] == "idle"


async def gone(client, tid):
    """The thread is deleted, within a few seconds."""
    for _ in range(100):
        try:
            await client.threads.get(tid)
        except httpx.HTTPStatusError as e:
            assert e.response.status_code == 404, e.response.text
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"thread {tid} was kept")


@check
async def stateless_background_runs(client):
    run = await client.runs.create(None, "countdown", input={"n": 1})
    assert run["status"] == "pending" and run["kwargs"]["temporary"] is True, run
    out = await client.runs.join(run["thread_id"], run["run_id"])
    assert out == {"n": 0}, out
    await gone(client, run["thread_id"])
    kept = await client.runs.create(
        None, "countdown", input={"n": 1}, on_completion="keep", metadata={"k": 1}
    )
    await client.runs.join(kept["thread_id"], kept["run_id"])
    thread = await client.threads.get(kept["thread_id"])
    assert thread["values"] == {"n": 0} and thread["metadata"]["k"] == 1, thread
    runs = await client.runs.create_batch(
        [
            {"assistant_id": "countdown", "input": {"n": 1}, "on_completion": "keep"},
            {"assistant_id": "countdown", "input": {"n": 2}, "on_completion": "keep"},
        ]
    )
    assert len(runs) == 2 and runs[0]["thread_id"] != runs[1]["thread_id"], runs
    for run in runs:
        assert await client.runs.join(run["thread_id"], run["run_id"]) == {"n": 0}


async def settled(client, tid, rid):
    for _ in range(100):
        run = await client.runs.get(tid, rid)
        if run["status"] not in ("pending", "running"):
            return run["status"]
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {rid} never settled")


@check
async def cancel_many(client):
    t = await client.threads.create()
    tid = t["thread_id"]
    first = await client.runs.create(tid, "countdown", input={"n": 50})
    second = await client.runs.create(tid, "countdown", input={"n": 50})
    ids = [first["run_id"], second["run_id"]]
    assert await client.runs.cancel_many(thread_id=tid, run_ids=ids) is None
    assert [await settled(client, tid, rid) for rid in ids] == ["interrupted"] * 2
    try:
        await client.runs.cancel_many(thread_id=tid, run_ids=ids)
    except httpx.HTTPStatusError as e:
        assert e.response.status_code == 404, e.response.text
    else:
        raise AssertionError("ended runs were cancelled again")
    try:
        await client.runs.cancel_many(status="bogus")
    except httpx.HTTPStatusError as e:
        assert e.response.status_code == 422, e.response.text
    else:
        raise AssertionError("a bad status was accepted")


async def follow(client, tid, runs):
    """A thread's join stream, until `runs` runs are done: (event, data)."""
    seen = []
    # The SDK's `join_stream` is a coroutine that returns the stream.
    async for part in await client.threads.join_stream(tid):
        seen.append((part.event, part.data))
        done = [d for e, d in seen if e == "metadata" and d.get("status") == "run_done"]
        if len(done) == runs:
            return seen
    return seen


@check
async def thread_join_stream(client):
    t = await client.threads.create()
    tid = t["thread_id"]
    joined = asyncio.create_task(follow(client, tid, 2))
    # The stream is listening before the runs start.
    await asyncio.sleep(0.5)
    first = await client.runs.create(tid, "countdown", input={"n": 1})
    second = await client.runs.create(
        tid, "countdown", input={"n": 2}, stream_mode=["updates"]
    )
    seen = await asyncio.wait_for(joined, 20)
    assert [e for e, _ in seen] == [
        "metadata", "values", "values", "metadata",
        "metadata", "updates", "updates", "metadata",
    ], seen
    assert seen[0][1]["run_id"] == first["run_id"], seen
    assert seen[3][1] == {"status": "run_done", "run_id": first["run_id"]}, seen
    assert seen[4][1]["run_id"] == second["run_id"], seen
    assert [d for _, d in seen[5:7]] == [{"tick": {"n": 1}}, {"tick": {"n": 0}}], seen


if __name__ == "__main__":
    run()
