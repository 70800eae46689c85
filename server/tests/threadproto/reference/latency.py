"""Time from a `run.start` command to the stream's first `values` event
and to the run's end (root lifecycle `completed`), median of 30 runs of
the `nest` graph, each on a new thread with its stream opened first:

    python3 latency.py http://127.0.0.1:PORT

against `langgraph dev` or our `serve` example (see record.py).
"""

import statistics
import sys
import time
import uuid

import record

RUNS = 30


def one():
    thread = str(uuid.uuid4())
    stream = record.Stream(f"/threads/{thread}/stream/events", {"channels": ["values", "lifecycle"]})
    start = {"id": 1, "method": "run.start", "params": {"assistant_id": "nest", "input": {"n": 1}}}
    t0 = time.perf_counter()
    record.request("POST", f"/threads/{thread}/commands", start)
    first = None
    while not any(record.is_root_terminal(f) for f in stream.frames):
        if first is None and any(f["event"] == "values" for f in stream.frames):
            first = time.perf_counter() - t0
        time.sleep(0.001)
    end = time.perf_counter() - t0
    stream.close(0)
    return first if first is not None else end, end


if __name__ == "__main__":
    times = [one() for _ in range(RUNS)]
    first = statistics.median(t[0] for t in times) * 1000
    end = statistics.median(t[1] for t in times) * 1000
    print(f"{record.BASE}: first values {first:.1f} ms, run end {end:.1f} ms (median of {RUNS})")
