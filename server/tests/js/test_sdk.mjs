// The official JS client (@langchain/langgraph-sdk, pinned in
// package.json) against agent-state-server.
//
// Run by run.sh against the `serve` example (graphs `chat`, `approval`,
// `assistant`, `countdown` and `nest`): node test_sdk.mjs http://127.0.0.1:PORT
// Prints one line per check, then "N passed, N failed"; exits 1 on a
// failure.

import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";

const url = process.argv[2];
if (!url) {
  console.error("usage: node test_sdk.mjs http://127.0.0.1:PORT");
  process.exit(2);
}

// The official server's assistant id for a graph named "approval".
const APPROVAL = "e234584d-b7bf-527f-9d06-ba77f8f5172d";
const UNKNOWN = "00000000-0000-0000-0000-000000000000";

const client = new Client({ apiUrl: url });
const checks = [];
const check = (name, fn) => checks.push([name, fn]);
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/** The call fails with this HTTP status and a `{"detail"}` body (the
 * SDK's HTTPError), whose detail is returned. */
async function refused(status, promise) {
  try {
    await promise;
  } catch (e) {
    assert.equal(e.status, status, `${e.status}: ${e.text ?? e}`);
    const body = JSON.parse(e.text);
    assert.equal(typeof body.detail, "string", e.text);
    return body.detail;
  }
  assert.fail(`expected a ${status}`);
}

/** Every part of a stream. */
async function collect(stream) {
  const parts = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

/** A background countdown on the thread, a step every 200 ms. */
function countdown(tid, n, extra = {}) {
  return client.runs.create(tid, "countdown", { input: { n }, ...extra });
}

check("assistants: search, get, graph, schemas, count", async () => {
  const found = await client.assistants.search({ graphId: "approval" });
  assert.deepEqual(found.map((a) => a.assistant_id), [APPROVAL]);
  const byName = await client.assistants.search({ name: "CHA" });
  assert.deepEqual(byName.map((a) => a.graph_id), ["chat"]);
  const sorted = await client.assistants.search({ sortBy: "graph_id", sortOrder: "asc" });
  assert.deepEqual(sorted.map((a) => a.graph_id), ["approval", "assistant", "chat", "countdown", "nest", "twin"]);
  const one = await client.assistants.get(APPROVAL);
  assert.equal(one.graph_id, "approval");
  const graph = await client.assistants.getGraph(APPROVAL);
  assert.ok(graph.edges.some((e) => e.source === "draft" && e.target === "review"));
  const schemas = await client.assistants.getSchemas(APPROVAL);
  assert.ok("topic" in schemas.input_schema.properties);
  assert.equal(await client.assistants.count({ graphId: "chat" }), 1);
});

check("threads: create, get, update, search, count, delete", async () => {
  const threadId = crypto.randomUUID();
  const t = await client.threads.create({ threadId, metadata: { user: "js" } });
  assert.equal(t.status, "idle");
  assert.equal((await client.threads.get(threadId)).metadata.user, "js");
  const same = await client.threads.create({ threadId, ifExists: "do_nothing" });
  assert.deepEqual(same.metadata, { user: "js" });
  const patched = await client.threads.update(threadId, { metadata: { k: "v" } });
  assert.deepEqual(patched.metadata, { user: "js", k: "v" });
  const found = await client.threads.search({ metadata: { k: "v" }, status: "idle" });
  assert.deepEqual(found.map((x) => x.thread_id), [threadId]);
  assert.equal(await client.threads.count({ metadata: { k: "v" } }), 1);
  await client.threads.delete(threadId);
  await refused(404, client.threads.get(threadId));
});

check("threads: state, update_state, history, copy", async () => {
  const { thread_id: tid } = await client.threads.create();
  await client.runs.wait(tid, "approval", { input: { topic: "x" } });
  const state = await client.threads.getState(tid);
  assert.deepEqual(state.next, ["review"]);
  assert.deepEqual(state.tasks[0].interrupts[0].value, { question: "approve?" });
  const history = await client.threads.getHistory(tid, { limit: 100 });
  assert.equal(history[0].checkpoint_id, state.checkpoint_id);
  const config = { configurable: { checkpoint_id: history[0].checkpoint_id } };
  const before = await client.threads.getHistory(tid, { before: config });
  assert.equal(before.length, history.length - 1);
  const loops = await client.threads.getHistory(tid, { metadata: { source: "loop" } });
  assert.ok(loops.length > 0 && loops.every((s) => s.metadata.source === "loop"));
  const copy = await client.threads.copy(tid);
  assert.notEqual(copy.thread_id, tid);
  const copied = await client.threads.getHistory(copy.thread_id, { limit: 100 });
  assert.deepEqual(copied.map((s) => s.values), history.map((s) => s.values));
  await client.threads.updateState(copy.thread_id, { values: { topic: "edited" }, asNode: "draft" });
  assert.equal((await client.threads.getState(copy.thread_id)).values.topic, "edited");
  assert.equal((await client.threads.getState(tid)).values.topic, "x", "the original is untouched");
});

/** useStream's submit, as the React hook issues it: a thread created
 * without an id, `runs.stream` with the hook's modes, `streamResumable`
 * and `onDisconnect: "continue"`, the run check the client makes when the
 * stream closes, then the thread's history. */
check("useStream's request sequence", async () => {
  const seen = [];
  const recording = new Client({
    apiUrl: url,
    onRequest: (u, init) => {
      seen.push(`${init.method ?? "GET"} ${new URL(u).pathname}`);
      return init;
    },
  });
  const thread = await recording.threads.create({ threadId: undefined, metadata: undefined });
  const tid = thread.thread_id;
  let created;
  const parts = await collect(
    recording.runs.stream(tid, "chat", {
      input: { messages: [{ type: "human", content: "hi there" }] },
      streamMode: ["values", "updates", "messages-tuple"],
      streamResumable: true,
      onDisconnect: "continue",
      onRunCreated: (meta) => (created = meta),
    }),
  );
  assert.equal(created.thread_id, tid);
  assert.equal(parts[0].event, "metadata");
  assert.equal(parts[0].data.run_id, created.run_id);
  assert.ok(parts.every((p) => p.id !== undefined), "resumable events carry ids");
  const chunks = parts.filter((p) => p.event === "messages");
  assert.ok(chunks.length > 1, "the answer streams in chunks");
  const [chunk, meta] = chunks[0].data;
  assert.equal(meta.langgraph_node, "echo");
  assert.equal(meta.thread_id, tid);
  assert.equal(chunks.at(-1).data[0].chunk_position, "last");
  assert.ok(chunks.every((c) => c.data[0].id === chunk.id), "one message id");
  const last = parts.filter((p) => p.event === "values").at(-1).data;
  assert.equal(last.messages.at(-1).content, "You said: hi there");
  const history = await recording.threads.getHistory(tid, { limit: 10 });
  assert.equal(history[0].values.messages.length, 2);
  const runPath = `/threads/${tid}/runs/${created.run_id}`;
  assert.deepEqual(seen, [
    "POST /threads",
    `POST /threads/${tid}/runs/stream`,
    `GET ${runPath}`,
    `POST /threads/${tid}/history`,
  ]);
});

check("an interrupt answered with command.resume", async () => {
  const { thread_id: tid } = await client.threads.create();
  const parts = await collect(
    client.runs.stream(tid, "approval", { input: { topic: "x" }, streamMode: ["values", "updates"] }),
  );
  const paused = parts.filter((p) => p.event === "updates").at(-1).data;
  assert.deepEqual(paused.__interrupt__[0].value, { question: "approve?" });
  assert.equal((await client.threads.get(tid)).status, "interrupted");
  const done = await client.runs.wait(tid, "approval", { command: { resume: true } });
  assert.deepEqual(done, { topic: "x", log: ["draft:x", "review"], approved: true });
  assert.equal((await client.threads.get(tid)).status, "idle");
});

check("interruptBefore, then a run with no input goes on", async () => {
  const { thread_id: tid } = await client.threads.create();
  const early = await client.runs.wait(tid, "approval", {
    input: { topic: "x" },
    interruptBefore: ["review"],
  });
  assert.deepEqual(early.log, ["draft:x"]);
  assert.deepEqual((await client.threads.getState(tid)).next, ["review"]);
  assert.equal((await client.threads.get(tid)).status, "interrupted");
  const asked = await client.runs.wait(tid, "approval", { input: null });
  assert.deepEqual(asked.__interrupt__[0].value, { question: "approve?" });
});

check("command goto with update, and a run from a checkpoint", async () => {
  const { thread_id: tid } = await client.threads.create();
  await client.runs.wait(tid, "approval", { input: { topic: "x" } });
  await client.runs.wait(tid, "approval", { command: { resume: true } });
  const again = await client.runs.wait(tid, "approval", {
    command: { goto: "draft", update: { topic: "y" } },
  });
  assert.deepEqual(again.log, ["draft:x", "review", "draft:y"]);
  assert.deepEqual(again.__interrupt__[0].value, { question: "approve?" });
  const history = await client.threads.getHistory(tid, { limit: 100 });
  const first = history.at(-1);
  const forked = await client.runs.wait(tid, "approval", {
    input: { topic: "z" },
    checkpoint: { checkpoint_id: first.checkpoint_id },
  });
  assert.deepEqual(forked.log, ["draft:z"]);
});

check("a reconnect with Last-Event-ID", async () => {
  const { thread_id: tid } = await client.threads.create();
  const run = await countdown(tid, 6, { streamResumable: true, streamMode: ["values"] });
  const seen = [];
  for await (const part of client.runs.joinStream(tid, run.run_id, { lastEventId: "-1" })) {
    seen.push(part);
    if (seen.length === 3) break;
  }
  const lastId = seen.at(-1).id;
  const rest = await collect(client.runs.joinStream(tid, run.run_id, { lastEventId: lastId }));
  assert.ok(rest.length > 0, "events after the last one seen");
  const ids = new Set(seen.map((p) => p.id));
  assert.ok(rest.every((p) => p.id !== undefined && !ids.has(p.id)), "none seen twice");
  assert.deepEqual(rest.at(-1).data, { n: 0 });
});

check("multitask: reject", async () => {
  const { thread_id: tid } = await client.threads.create();
  const first = await countdown(tid, 5);
  await sleep(300);
  await refused(409, countdown(tid, 1, { multitaskStrategy: "reject" }));
  assert.deepEqual(await client.runs.join(tid, first.run_id), { n: 0 });
});

check("multitask: interrupt", async () => {
  const { thread_id: tid } = await client.threads.create();
  const first = await countdown(tid, 20);
  await sleep(500);
  const second = await client.runs.wait(tid, "countdown", {
    input: { n: 1 },
    multitaskStrategy: "interrupt",
  });
  assert.deepEqual(second, { n: 0 });
  assert.equal((await client.runs.get(tid, first.run_id)).status, "interrupted");
});

check("multitask: rollback", async () => {
  const { thread_id: tid } = await client.threads.create();
  const first = await countdown(tid, 20);
  await sleep(500);
  const second = await client.runs.wait(tid, "countdown", {
    input: { n: 1 },
    multitaskStrategy: "rollback",
  });
  assert.deepEqual(second, { n: 0 });
  await refused(404, client.runs.get(tid, first.run_id));
  const values = (await client.threads.getHistory(tid, { limit: 100 })).map((s) => s.values.n);
  assert.ok(values.every((n) => (n ?? 0) <= 1), `no step of the rolled-back run: ${values}`);
  const runs = await client.runs.list(tid);
  assert.equal(runs.length, 1, "the rolled-back run is deleted");
});

check("multitask: enqueue", async () => {
  const { thread_id: tid } = await client.threads.create();
  const first = await countdown(tid, 3);
  const second = await countdown(tid, 2, { multitaskStrategy: "enqueue" });
  assert.deepEqual(await client.runs.join(tid, second.run_id), { n: 0 });
  assert.equal((await client.runs.get(tid, first.run_id)).status, "success");
  assert.equal((await client.runs.get(tid, second.run_id)).status, "success");
});

check("runs: cancel with rollback, delete, list", async () => {
  const { thread_id: tid } = await client.threads.create();
  const run = await countdown(tid, 20);
  await sleep(400);
  await client.runs.cancel(tid, run.run_id, true, "rollback");
  await refused(404, client.runs.get(tid, run.run_id));
  const thread = await client.threads.get(tid);
  assert.equal(thread.status, "idle");
  assert.equal(thread.values, null);
  const done = await countdown(tid, 1);
  await client.runs.join(tid, done.run_id);
  assert.equal((await client.runs.list(tid)).length, 1);
  await client.runs.delete(tid, done.run_id);
  assert.equal((await client.runs.list(tid)).length, 0);
  await refused(404, client.runs.delete(tid, done.run_id));
});

check("store: put, get, search, list namespaces, delete", async () => {
  const user = `u${crypto.randomUUID().slice(0, 8)}`;
  await client.store.putItem(["users", user], "profile", { work: "geology", level: 3 });
  await client.store.putItem(["users", user, "notes"], "n1", { text: "tea", level: 1 });
  const item = await client.store.getItem(["users", user], "profile");
  assert.deepEqual(item.value, { work: "geology", level: 3 });
  assert.deepEqual(item.namespace, ["users", user]);
  assert.equal(typeof item.createdAt, "string");
  assert.equal(await client.store.getItem(["users", user], "missing"), null);
  const found = await client.store.searchItems(["users", user], {
    filter: { level: { $gte: 2 } },
  });
  assert.deepEqual(found.items.map((i) => i.key), ["profile"]);
  const listed = await client.store.listNamespaces({ prefix: ["users", user] });
  assert.deepEqual(listed.namespaces, [["users", user], ["users", user, "notes"]]);
  await client.store.deleteItem(["users", user], "profile");
  assert.equal(await client.store.getItem(["users", user], "profile"), null);
  const detail = await refused(400, client.store.putItem(["langgraph"], "k", { a: 1 }));
  assert.match(detail, /reserved/);
});

check("bad inputs: 404, 409, 422", async () => {
  const { thread_id: tid } = await client.threads.create();
  await refused(404, client.threads.get(UNKNOWN));
  await refused(404, client.threads.copy(UNKNOWN));
  await refused(404, client.runs.create(UNKNOWN, "approval", { input: { topic: "x" } }));
  await refused(409, client.threads.create({ threadId: tid }));
  await refused(422, client.threads.get("not-a-uuid"));
  const wrong = await refused(422, client.runs.wait(tid, "approval", { input: { topic: 5 } }));
  assert.match(wrong, /topic/);
  const goto = await refused(422, client.runs.wait(tid, "approval", { command: { goto: "nope" } }));
  assert.match(goto, /command\.goto.*nope/);
  const bp = await refused(
    422,
    client.runs.wait(tid, "approval", { input: { topic: "x" }, interruptBefore: ["nope"] }),
  );
  assert.match(bp, /interrupt_before/);
  await refused(404, client.runs.wait(tid, "approval", { checkpointId: "999" }));
  await refused(422, client.runs.wait(tid, "approval", { durability: "forever" }));
  await refused(422, client.runs.wait(tid, "nope", { input: {} }));
  await refused(404, client.runs.get(tid, UNKNOWN));
  assert.equal((await client.threads.get(tid)).values, null, "no refusal stored anything");
});

// The thread-centric protocol (`client.threads.stream`: POST
// /threads/{id}/commands and /threads/{id}/stream/events), as `useStream`
// drives it.
check("a thread stream's run streams its message and ends with its output", async () => {
  const { randomUUID } = await import("node:crypto");
  const thread = client.threads.stream(randomUUID(), { assistantId: "chat" });
  const texts = [];
  const reading = (async () => {
    for await (const message of thread.messages) {
      texts.push(await message.text);
      break;
    }
  })();
  await thread.run.start({ input: { messages: [{ type: "human", content: "hi there" }] } });
  await reading;
  const output = await thread.output;
  await thread.close();
  assert.deepEqual(texts, ["You said: hi there"]);
  // The SDK hands the state's messages back as LangChain message objects
  // (content a string here, text blocks on LangGraph's server).
  assert.equal(output.messages.at(-1).text, "You said: hi there");
});

check("a thread stream's interrupt is answered with input.respond", async () => {
  const { randomUUID } = await import("node:crypto");
  const tid = randomUUID();
  const thread = client.threads.stream(tid, { assistantId: "approval" });
  await thread.run.start({ input: { topic: "cats" } });
  await thread.output;
  assert.equal(thread.interrupted, true);
  const [ask] = thread.interrupts;
  assert.deepEqual(ask.payload, { question: "approve?" });
  await thread.input.respond({ interrupt_id: ask.interruptId, response: true, namespace: ask.namespace });
  let state = await client.threads.get(tid);
  for (let i = 0; i < 100 && state.status !== "idle"; i += 1) {
    await sleep(50);
    state = await client.threads.get(tid);
  }
  await thread.close();
  assert.equal(state.values.approved, true);
  assert.deepEqual(state.values.log, ["draft:cats", "review"]);
  const runs = await client.runs.list(tid);
  assert.deepEqual(runs.map((r) => r.status), ["success", "success"]);
});

let passed = 0;
let failed = 0;
for (const [name, fn] of checks) {
  try {
    await fn();
    passed += 1;
    console.log(`ok   ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${name}\n     ${String(e.stack ?? e).split("\n").slice(0, 6).join("\n     ")}`);
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
