"""Hostile input through the official Python client (langgraph-sdk):
values of the wrong type in the SDK's own calls, odd strings, streams a
client leaves, many runs at once. Every refusal is a 4xx with a
`detail`, never a 500, and the server goes on serving.

Run by run.sh: SDK_TEST=test_hostile.py bash server/tests/python/run.sh
(or python test_hostile.py http://127.0.0.1:PORT against any server of
the serve example's graphs, `langgraph dev` on reference/ included).
Prints one line per check, then "N passed, N failed"; exits 1 on a
failure.
"""

import asyncio

import httpx
from checks import check, run



async def status_of(awaitable):
    """The HTTP status the call ends with (200 when it succeeds), and the
    answer's text; a 5xx fails the check."""
    try:
        await awaitable
        return 200, ""
    except httpx.HTTPStatusError as e:
        status = e.response.status_code
        assert status < 500, (status, e.response.text)
        assert "detail" in e.response.json(), e.response.text
        return status, e.response.json()["detail"]


@check
async def wrong_types_in_sdk_calls(client):
    """Values the SDK passes through as they are: each a 422 naming its
    field (the official server's names it in its schema's words)."""
    thread = await client.threads.create()
    tid = thread["thread_id"]
    calls = [
        ("limit", lambda: client.threads.search(limit=0)),
        ("limit", lambda: client.threads.search(limit=10**6)),
        ("offset", lambda: client.threads.search(offset=-1)),
        ("status", lambda: client.threads.search(status="bogus")),
        ("config", lambda: client.runs.wait(tid, "countdown", input={"n": 1}, config="x")),
        (
            "recursion_limit",
            lambda: client.runs.wait(tid, "countdown", input={"n": 1}, config={"recursion_limit": "5"}),
        ),
        ("on_completion", lambda: client.runs.wait(None, "countdown", input={"n": 1}, on_completion="bogus")),
        ("if_not_exists", lambda: client.runs.wait(tid, "countdown", input={"n": 1}, if_not_exists="bogus")),
        (
            "multitask_strategy",
            lambda: client.runs.wait(tid, "countdown", input={"n": 1}, multitask_strategy="bogus"),
        ),
        ("metadata", lambda: client.runs.wait(tid, "countdown", input={"n": 1}, metadata=[1])),
        ("limit", lambda: client.threads.get_history(tid, limit=0)),
    ]
    for field, call in calls:
        status, detail = await status_of(call())
        assert status == 422, (field, status, detail)
        assert field in detail, (field, detail)
    runs = await client.runs.list(tid)
    assert runs == [], runs


@check
async def odd_strings_are_stored_or_refused(client):
    """Unicode, NUL and very long strings in metadata and inputs."""
    odd = {"nul": "a\u0000b", "emoji": "\U0001F600", "rtl": "\u202eabc", "long": "x" * 100_000}
    status, detail = await status_of(client.threads.create(metadata=odd))
    assert status in (200, 422), (status, detail)
    thread = await client.threads.create()
    run = client.runs.wait(thread["thread_id"], "approval", input={"topic": "t\u0000\U0001F600"})
    try:
        status, detail = await status_of(run)
        assert status in (200, 400, 422), (status, detail)
    except httpx.HTTPError:
        raise
    except Exception as e:
        # The SDK raises a run's own error: on PostgreSQL (whose `jsonb`
        # holds no NUL) one that names the field.
        assert "U+0000" in str(e) and "topic" in str(e), e
    assert (await client.threads.get(thread["thread_id"]))["thread_id"] == thread["thread_id"]


@check
async def ids_that_are_not_uuids(client):
    """Thread and run ids that are no UUID: 422 (or 404), never a 500."""
    thread = await client.threads.create()
    tid = thread["thread_id"]
    for bad in ["abc", "..", "%00", "a/b", "\u00e9", "0" * 36]:
        status, _ = await status_of(client.threads.get(bad))
        assert status in (404, 422), (bad, status)
        status, _ = await status_of(client.runs.get(tid, bad))
        assert status in (404, 422), (bad, status)


@check
async def a_client_that_leaves_mid_stream(client):
    """on_disconnect=cancel stops the run when its client leaves; the
    default lets it finish."""
    for mode, ends in [("cancel", "interrupted"), ("continue", "success")]:
        thread = await client.threads.create()
        tid = thread["thread_id"]
        stream = client.runs.stream(
            tid, "countdown", input={"n": 6}, stream_mode="values", on_disconnect=mode
        )
        async for part in stream:
            if part.event == "values":
                break
        await stream.aclose()
        for _ in range(60):
            runs = await client.runs.list(tid)
            if runs and runs[0]["status"] not in ("pending", "running"):
                break
            await asyncio.sleep(0.1)
        assert runs[0]["status"] == ends, (mode, runs[0]["status"])


@check
async def many_runs_at_once_on_one_thread(client):
    """200 background runs sent at once to one thread: each accepted,
    the thread busy while they go, every one run in turn."""
    thread = await client.threads.create()
    tid = thread["thread_id"]
    runs = await asyncio.gather(
        *[client.runs.create(tid, "countdown", input={"n": 0}, multitask_strategy="enqueue") for _ in range(200)]
    )
    assert len({r["run_id"] for r in runs}) == 200
    assert (await client.threads.get(tid))["status"] == "busy"
    for _ in range(300):
        listed = await client.runs.list(tid, limit=1000)
        if all(r["status"] not in ("pending", "running") for r in listed):
            break
        await asyncio.sleep(0.2)
    assert sorted({r["status"] for r in listed}) == ["success"], {r["status"] for r in listed}


@check
async def deleting_a_thread_while_its_run_streams(client):
    thread = await client.threads.create()
    tid = thread["thread_id"]
    seen = []

    async def follow():
        async for part in client.runs.stream(tid, "countdown", input={"n": 30}, stream_mode="values"):
            seen.append(part.event)

    task = asyncio.create_task(follow())
    await asyncio.sleep(0.5)
    await client.threads.delete(tid)
    try:
        await asyncio.wait_for(task, 10)
    except (httpx.HTTPError, asyncio.TimeoutError) as e:
        raise AssertionError(f"the stream did not end: {e!r}") from e
    status, _ = await status_of(client.threads.get(tid))
    assert status == 404, status


if __name__ == "__main__":
    run()
