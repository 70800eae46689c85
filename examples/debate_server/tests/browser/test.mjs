// The debate page in Debian's chromium: `node test.mjs SERVER_BINARY DIR`
// starts the debate_server binary on a free port with a database in DIR
// (run.sh builds it), and kills and restarts it in one test; `node
// test.mjs --url URL DIR` drives a server already running at URL (the
// official one: official/run.sh), leaving out the tests that need ours.
// Each test prints "ok" or "FAILED" with why; the last line is
// "N passed, N failed".
import { chromium } from "playwright-core";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";

const [binary, dir] = process.argv.slice(2).filter((a) => a !== "--url");
const given = process.argv[2] === "--url" ? binary : null;
if (!binary || !dir) {
  console.error("usage: node test.mjs SERVER_BINARY DIR | node test.mjs --url URL DIR");
  process.exit(2);
}

/** Starts the server on `addr`, resolving once it says where it listens. */
async function startServer(addr) {
  const child = spawn(binary, [
    "--addr", addr, "--db", `${dir}/debates.db`, "--token-delay-ms", "20", "--log", "warn",
  ], { stdio: ["ignore", "pipe", "inherit"] });
  const [line] = await once(createInterface({ input: child.stdout }), "line");
  const url = line.replace(/^listening on /, "");
  assert.notEqual(url, line, `the server said: ${line}`);
  return { child, url };
}

let server = given ? null : await startServer("127.0.0.1:0");
const url = given || server.url;

// The scripted debaters' first arguments and the moderator's last words
// on a two-round debate (examples/debate_server/src/debate.rs).
const OPTIMIST_1 = "Clear rules let good products ship faster: builders know where the lines are.";
const SKEPTIC_1 = "Rules written today will freeze yesterday's models into law.";
const CLOSING = "Round 2 of 2 closed. The debate is over.";

// The tests that need our server: it is killed, or it bounds the input.
const OURS = new Set([
  "a debate whose server is killed mid-turn resumes on the page",
  "input out of bounds is refused with the server's reason",
]);

const browser = await chromium.launchPersistentContext(`${dir}/profile`, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
const page = browser.pages()[0] || (await browser.newPage());
page.setDefaultTimeout(60_000);

/** The transcript as [speaker, text] pairs, the text without the label. */
async function transcript() {
  return page.$$eval("#transcript .msg", (divs) =>
    divs.map((d) => [d.dataset.speaker, d.childNodes[1].textContent]));
}

/** Waits for the page's run to end, then returns its status line. */
async function settled() {
  await page.waitForSelector("body:not([data-state=running]):not([data-state=idle])");
  return page.textContent("#status");
}

let thread;

const tests = {
  async "the page loads with its form"() {
    const response = await page.goto(url);
    assert.equal(response.status(), 200);
    assert.equal(await page.title(), "Debate");
    assert.equal(await page.inputValue("#rounds"), "3");
  },

  async "a debate started from the page shows each turn as it arrives"() {
    await page.fill("#topic", "Cats or dogs?");
    await page.fill("#rounds", "2");
    await page.click("button");
    // A debater's turn drawn while its tokens still arrive ...
    const live = await page.waitForSelector(".msg.live");
    const [speaker, partial] = await live.evaluate((d) => [d.dataset.speaker, d.childNodes[1].textContent]);
    // ... and the whole debate once the run ends.
    assert.match(await settled(), /Done\.$/);
    assert.equal(speaker, "optimist");
    assert.ok(partial.length > 0 && OPTIMIST_1.startsWith(partial), partial);
    const turns = await transcript();
    assert.deepEqual(turns.map((t) => t[0]),
      ["optimist", "skeptic", "moderator", "optimist", "skeptic", "moderator"]);
    assert.equal(turns[0][1], `${OPTIMIST_1} (optimist on "Cats or dogs?")`);
    assert.equal(turns[1][1], `${SKEPTIC_1} (skeptic on "Cats or dogs?")`);
    assert.equal(turns[5][1], CLOSING);
    assert.equal(await page.$$eval(".msg.live", (l) => l.length), 0);
    thread = await page.inputValue("#thread");
    assert.match(thread, /^[0-9a-f-]{36}$/);
  },

  async "a finished thread is drawn again from the server after a reload"() {
    await page.goto(`${url}/#thread=${thread}`);
    await page.reload();
    assert.equal(await page.inputValue("#thread"), thread);
    await page.click("button");
    assert.match(await settled(), /completed/);
    const turns = await transcript();
    assert.equal(turns.length, 6);
    assert.equal(turns[5][1], CLOSING);
  },

  async "a second page on a thread being run joins its stream"() {
    await page.goto(url);
    await page.fill("#rounds", "3");
    await page.click("button");
    await page.waitForSelector(".msg:not(.live)");
    const thread = await page.inputValue("#thread");
    const second = await browser.newPage();
    const joins = [];
    second.on("request", (r) => {
      if (r.method() === "GET" && /\/runs\/[^/]+\/stream$/.test(r.url())) joins.push(r.url());
    });
    try {
      await second.goto(`${url}/#thread=${thread}`);
      await second.click("button");
      await second.waitForSelector("body[data-state=done]");
      const speakers = await second.$$eval(".msg", (l) => l.map((d) => d.dataset.speaker));
      assert.equal(speakers.length, 9, speakers.join());
      assert.equal(joins.length, 1, "the run's stream joined (its new run refused 409)");
    } finally {
      await second.close();
    }
    assert.match(await settled(), /Done\.$/);
  },

  async "a debate whose server is killed mid-turn resumes on the page"() {
    await page.goto(url);
    await page.fill("#rounds", "3");
    await page.click("button");
    // Two turns stored, the third being written: SIGKILL, as a crash.
    await page.waitForFunction(() =>
      document.querySelectorAll(".msg:not(.live)").length >= 2 && document.querySelector(".msg.live"));
    server.child.kill("SIGKILL");
    await once(server.child, "exit");
    server = await startServer(new URL(url).host);
    // The page notices, and carries the thread on from its last step.
    await page.waitForSelector("#status:has-text('Connection lost')");
    assert.match(await settled(), /completed\. .*Done\.$/);
    const turns = await transcript();
    const round = ["optimist", "skeptic", "moderator"];
    assert.deepEqual(turns.map((t) => t[0]), [...round, ...round, ...round]);
    assert.equal(turns[8][1], "Round 3 of 3 closed. The debate is over.");
  },

  async "input out of bounds is refused with the server's reason"() {
    await page.goto(url);
    // Past the form's own checks, as a script would send it.
    await page.$eval("#start", (form) => { form.noValidate = true; });
    await page.fill("#rounds", "11");
    await page.click("button");
    const status = await settled();
    assert.match(status, /^Refused: 422: input: at key `maxRounds`/);
    assert.equal((await transcript()).length, 0);
  },
};

let passed = 0, failed = 0;
for (const [name, test] of Object.entries(tests)) {
  if (given && OURS.has(name)) continue;
  try {
    await test();
    passed += 1;
    console.log(`ok       ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAILED   ${name}: ${e.message}`);
  }
}
await browser.close();
server?.child.kill();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
