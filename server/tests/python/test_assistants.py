"""Assistants through the official Python client (langgraph-sdk):
created, read, changed (each change a version), set back to a version,
searched, counted, deleted, their subgraphs listed, and used by runs.

Run by run.sh (SDK_TEST=test_assistants.py) against the `serve` example,
or against `langgraph dev` on reference/: python test_assistants.py URL
Prints one line per check, then "N passed, N failed"; exits 1 on a failure.
"""

import uuid

import httpx
from checks import check, run

# The official server's assistant id for the graph named "approval".
APPROVAL = "e234584d-b7bf-527f-9d06-ba77f8f5172d"



async def refused(status, awaitable):
    """The call fails with this HTTP status and a `detail`."""
    try:
        await awaitable
    except httpx.HTTPStatusError as e:
        assert e.response.status_code == status, (e.response.status_code, e.response.text)
        assert "detail" in e.response.json(), e.response.text
        return e.response.json()["detail"]
    raise AssertionError(f"expected a {status}")


async def mine(client, **fields):
    """A new assistant of `approval` with a fresh id and a tag of its own."""
    tag = str(uuid.uuid4())
    made = await client.assistants.create(
        "approval",
        assistant_id=str(uuid.uuid4()),
        config={"configurable": {"model": "x"}},
        metadata={"tag": tag},
        name="mine",
        description="d",
        **fields,
    )
    return made, tag


@check
async def created_as_the_official_server_makes_them(client):
    made, tag = await mine(client)
    keys = {"assistant_id", "graph_id", "config", "context", "metadata", "name",
            "created_at", "updated_at", "version", "description"}
    assert set(made) == keys, made
    assert made["context"] == {"model": "x"}, made
    assert (made["version"], made["name"], made["description"]) == (1, "mine", "d"), made
    assert made["metadata"] == {"tag": tag}, made
    assert await client.assistants.get(made["assistant_id"]) == made
    plain = await client.assistants.create("countdown", context={"k": 1})
    assert (plain["name"], plain["config"]) == ("Untitled", {"configurable": {"k": 1}}), plain
    same = await client.assistants.create(
        "countdown", assistant_id=made["assistant_id"], if_exists="do_nothing"
    )
    assert same == made, same
    await refused(409, client.assistants.create("approval", assistant_id=made["assistant_id"]))
    await refused(404, client.assistants.create("nope"))
    await refused(422, client.assistants.create("approval", assistant_id="abc"))


@check
async def changes_are_versions(client):
    made, tag = await mine(client)
    aid = made["assistant_id"]
    v2 = await client.assistants.update(aid, metadata={"x": 1}, name="renamed")
    assert (v2["version"], v2["name"]) == (2, "renamed"), v2
    assert v2["metadata"] == {"tag": tag, "x": 1}, v2
    assert v2["created_at"] == made["created_at"], v2
    v3 = await client.assistants.update(aid, context={"k": "v"})
    assert (v3["version"], v3["config"]) == (3, {"configurable": {"k": "v"}}), v3
    versions = await client.assistants.get_versions(aid)
    assert [v["version"] for v in versions] == [3, 2, 1], versions
    assert "updated_at" not in versions[0], versions[0]
    some = await client.assistants.get_versions(aid, metadata={"x": 1}, limit=1)
    assert [v["version"] for v in some] == [3], some
    back = await client.assistants.set_latest(aid, 1)
    assert (back["version"], back["name"], back["metadata"]) == (1, "mine", {"tag": tag}), back
    assert (await client.assistants.get(aid))["version"] == 1
    await refused(404, client.assistants.set_latest(aid, 9))
    await refused(404, client.assistants.update(str(uuid.uuid4()), name="x"))
    await refused(404, client.assistants.update(aid, graph_id="nope"))
    await refused(404, client.assistants.get_versions(str(uuid.uuid4())))


@check
async def searched_and_counted_with_the_graphs_own(client):
    made, tag = await mine(client)
    found = await client.assistants.search(metadata={"tag": tag})
    assert [a["assistant_id"] for a in found] == [made["assistant_id"]], found
    approval = await client.assistants.search(graph_id="approval", limit=100)
    ids = [a["assistant_id"] for a in approval]
    assert made["assistant_id"] in ids and APPROVAL in ids, ids
    assert ids.index(made["assistant_id"]) < ids.index(APPROVAL), "newest first"
    picked = await client.assistants.search(metadata={"tag": tag}, select=["name"])
    assert picked == [{"name": "mine"}], picked
    assert await client.assistants.count(metadata={"tag": tag}) == 1
    paged = await client.assistants.search(graph_id="approval", limit=1, response_format="object")
    assert (len(paged["assistants"]), paged["next"]) == (1, "1"), paged
    last = await client.assistants.search(metadata={"tag": tag}, response_format="object")
    assert last["next"] is None, last
    assert await client.assistants.count(graph_id="approval") == len(approval)
    await refused(404, client.assistants.search(graph_id="nope"))


@check
async def deleted(client):
    made, _ = await mine(client)
    aid = made["assistant_id"]
    await client.assistants.delete(aid)
    await refused(404, client.assistants.get(aid))
    await refused(404, client.assistants.delete(aid))
    await refused(404, client.runs.wait(None, aid, input={"topic": "x"}))


@check
async def deleted_with_its_threads(client):
    made, _ = await mine(client)
    aid = made["assistant_id"]
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], aid, input={"topic": "x"})
    await client.assistants.delete(aid, delete_threads=True)
    await refused(404, client.threads.get(thread["thread_id"]))


@check
async def a_run_uses_its_assistant(client):
    made = await client.assistants.create(
        "countdown", context={"model": "m", "shared": "a"}, metadata={"team": "t"}
    )
    aid = made["assistant_id"]
    thread = await client.threads.create()
    tid = thread["thread_id"]
    out = await client.runs.wait(
        tid, aid, input={"n": 2}, context={"shared": "run", "own": 1}, metadata={"m": 1}
    )
    assert out == {"n": 0}, out
    (run,) = await client.runs.list(tid)
    assert run["assistant_id"] == aid, run
    configurable = run["kwargs"]["config"]["configurable"]
    assert (configurable["model"], configurable["shared"], configurable["own"]) == ("m", "run", 1), configurable
    assert (run["metadata"]["team"], run["metadata"]["m"]) == ("t", 1), run["metadata"]
    meta = (await client.threads.get(tid))["metadata"]
    assert (meta["assistant_id"], meta["graph_id"]) == (aid, "countdown"), meta


@check
async def subgraphs(client):
    nest = (await client.assistants.search(graph_id="nest", metadata={"created_by": "system"}))[0]
    listed = await client.assistants.get_subgraphs(nest["assistant_id"])
    assert list(listed) == ["child"], listed
    assert listed["child"]["config_schema"] == {}, listed
    assert list(await client.assistants.get_subgraphs(nest["assistant_id"], recurse=True)) == ["child"]
    named = await client.assistants.get_subgraphs(nest["assistant_id"], namespace="child")
    assert list(named) == ["child"], named
    assert await client.assistants.get_subgraphs(nest["assistant_id"], namespace="zzz") == {}
    countdown = (await client.assistants.search(graph_id="countdown", metadata={"created_by": "system"}))[0]
    assert await client.assistants.get_subgraphs(countdown["assistant_id"]) == {}
    await refused(404, client.assistants.get_subgraphs(str(uuid.uuid4())))


@check
async def a_graphs_own_assistant_may_be_changed(client):
    before = await client.assistants.get(APPROVAL)
    changed = await client.assistants.update(APPROVAL, metadata={"seen": True})
    assert changed["version"] > before["version"], (before, changed)
    assert changed["metadata"] == {**before["metadata"], "seen": True}, changed


if __name__ == "__main__":
    run()
