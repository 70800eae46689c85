"""AG-UI conversations with the real server, each stream checked live by
ag-ui-validate (transport rules included): no error and no warning may be
found, and each stream must hold the events its case is about.

Usage: validate.py http://127.0.0.1:PORT (the `serve` example's address).
Prints one line per case and "N passed, N failed"; exits 1 on a failure.
"""

import asyncio
import json
import sys
import uuid

from ag_ui_validate.report.pretty import format_diagnostic_line
from ag_ui_validate.transport import TransportOptions, validate_endpoint
from ag_ui_validate.types import ValidatorOptions

BASE = sys.argv[1].rstrip("/")


def user(text):
    return {"id": str(uuid.uuid4()), "role": "user", "content": text}


def run_input(thread, messages, **extra):
    body = {
        "threadId": thread,
        "runId": str(uuid.uuid4()),
        "state": {},
        "messages": messages,
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    body.update(extra)
    return body


async def stream(graph, body, features):
    """Validates one run live; its events, or an exception naming the
    findings."""
    events = []
    opts = TransportOptions(
        input=body,
        validator=ValidatorOptions(features=features),
        timeout_ms=30_000,
        on_event=lambda raw, _diags: events.append(json.loads(raw)),
    )
    result = await validate_endpoint(f"{BASE}/ag-ui/{graph}", opts)
    report = result.report
    bad = [d for d in report.diagnostics if d.severity in ("error", "warning")]
    if bad or report.internal_errors:
        lines = [format_diagnostic_line(d, False) for d in bad]
        raise AssertionError("\n".join(lines + report.internal_errors))
    return events


def types(events):
    return [e["type"] for e in events]


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


async def conversation():
    thread = f"chat-{uuid.uuid4()}"
    events = await stream("assistant", run_input(thread, [user("hello there")]),
                          ["agentic-chat", "shared-state"])
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    expect(text == "You said: hello there", f"streamed text: {text!r}")
    expect(types(events)[-1] == "RUN_FINISHED", "ends with RUN_FINISHED")


async def browser_tool():
    thread = f"tool-{uuid.uuid4()}"
    tools = [{"name": "confirm_payment", "description": "Asks the user to confirm",
              "parameters": {"type": "object", "properties": {"request": {"type": "string"}}}}]
    first = [user("please confirm_payment of 5 EUR")]
    events = await stream("assistant", run_input(thread, first, tools=tools),
                          ["backend-tool-rendering"])
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    expect(start["toolCallName"] == "confirm_payment", "the browser's tool is called")
    finished = events[-1]
    call_id = start["toolCallId"]
    expect(finished["outcome"]["pendingToolCallIds"] == [call_id], "the call is left pending")
    snapshot = next(e for e in events if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
    answer = {"id": str(uuid.uuid4()), "role": "tool", "toolCallId": call_id, "content": "confirmed"}
    events = await stream("assistant", run_input(thread, snapshot + [answer], tools=tools),
                          ["agentic-chat"])
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    expect(text == "The tool said: confirmed", f"the run goes on from the answer: {text!r}")


async def agent_tool():
    thread = f"count-{uuid.uuid4()}"
    body = run_input(thread, [user("count words: one two three")])
    events = await stream("assistant", body, ["backend-tool-rendering", "agentic-chat"])
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    expect(result["content"] == "3", f"the agent's tool answered: {result}")
    expect("outcome" not in events[-1], "nothing is left pending")


async def interrupt_and_resume():
    thread = f"approval-{uuid.uuid4()}"
    body = run_input(thread, [], state={"topic": "launch"})
    events = await stream("approval", body, ["shared-state"])
    outcome = events[-1]["outcome"]
    expect(outcome["type"] == "interrupt", f"paused: {outcome}")
    interrupt = outcome["interrupts"][0]
    expect(interrupt["metadata"]["value"] == {"question": "approve?"}, "the interrupt's value")
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": True}]
    events = await stream("approval", run_input(thread, [], resume=resume), ["shared-state"])
    snapshots = [e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT"]
    expect(snapshots[-1]["approved"] is True, f"the answer reached the graph: {snapshots}")
    expect("outcome" not in events[-1], "the resumed run completes")


async def main():
    cases = [conversation, browser_tool, agent_tool, interrupt_and_resume]
    passed = failed = 0
    for case in cases:
        try:
            await case()
            passed += 1
            print(f"ok   {case.__name__}")
        except Exception as e:  # a case's failure is reported, the others still run
            failed += 1
            print(f"FAIL {case.__name__}: {e}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


sys.exit(asyncio.run(main()))
