"""The official Python client (langgraph-sdk) against the `owned` example:
custom auth with bearer tokens `token-alice` and `token-bob`, threads
scoped to their owner, each user's Store under their name.

Run by run.sh (SDK_EXAMPLE=owned SDK_TEST=test_auth.py):
python test_auth.py http://127.0.0.1:PORT
Prints one line per check, then "N passed, N failed"; exits 1 on a failure.
"""


from langgraph_sdk import get_client
import httpx
from checks import check, run



def as_user(url, name):
    return get_client(url=url, api_key=None, headers={"Authorization": f"Bearer token-{name}"})


async def refused(status, awaitable):
    """The call fails with this HTTP status and a `detail`."""
    try:
        await awaitable
    except httpx.HTTPStatusError as e:
        assert e.response.status_code == status, (e.response.status_code, e.response.text)
        assert "detail" in e.response.json(), e.response.text
        return
    raise AssertionError(f"expected a {status}")


@check
async def no_token_is_401(url):
    anonymous = get_client(url=url, api_key=None)
    await refused(401, anonymous.threads.search())
    await refused(401, anonymous.assistants.search())


@check
async def one_user_cannot_reach_anothers_thread(url):
    alice, bob = as_user(url, "alice"), as_user(url, "bob")
    thread = await alice.threads.create()
    tid = thread["thread_id"]
    assert thread["metadata"]["owner"] == "alice", thread
    paused = await alice.runs.wait(tid, "approval", input={"topic": "t", "log": [], "approved": False})
    assert "__interrupt__" in paused, paused
    await refused(404, bob.threads.get(tid))
    await refused(404, bob.threads.get_state(tid))
    await refused(404, bob.threads.get_history(tid))
    await refused(404, bob.threads.update(tid, metadata={"owner": "bob"}))
    await refused(404, bob.runs.list(tid))
    await refused(404, bob.runs.wait(tid, "approval", command={"resume": True}))
    assert tid not in [t["thread_id"] for t in await bob.threads.search(limit=100)]
    assert tid in [t["thread_id"] for t in await alice.threads.search(limit=100)]
    done = await alice.runs.wait(tid, "approval", command={"resume": True})
    assert done["approved"] is True, done


@check
async def each_user_has_their_own_store(url):
    alice, bob = as_user(url, "alice"), as_user(url, "bob")
    await alice.store.put_item(["notes"], "k", {"text": "alice's"})
    item = await alice.store.get_item(["notes"], "k")
    assert item["value"] == {"text": "alice's"}, item
    assert await bob.store.get_item(["notes"], "k") is None
    found = await bob.store.search_items(["notes"])
    assert found["items"] == [], found


if __name__ == "__main__":
    run(give=lambda url: url)
