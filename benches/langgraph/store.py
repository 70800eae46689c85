"""LangGraph half of the store benchmark: LangGraph's own stores
(InMemoryStore of langgraph-checkpoint 4.3.2, SqliteStore of
langgraph-checkpoint-sqlite 3.1.2, PostgresStore of
langgraph-checkpoint-postgres 3.2.0; pins in store-requirements.txt)
timed on the workload the Rust half times on ours.

Workload (the Rust half mirrors it; change both or neither):

* N items (--n, default 100,000) spread over 100 namespaces
  ("bench", "ns<j>"), item i in namespace i % 100 under key "k<i>", value
  {"i": i, "group": (i // 100) % 10, "text": "item <i> of group <g>"}, no
  index (the index is the semantic part's). All but the last 1,000 are
  loaded by `store.batch` of 1,000 puts each (timed as put_batch, µs per
  item); the last 1,000 by one `store.put` each (timed as put). One put
  per commit costs SqliteStore an fsync (about 10 ms on the development
  VM), which is why only 1,000 go one by one.
* get: 10,000 `store.get` of keys drawn by random.Random(7) among the N.
* search_filter: 1,000 searches of one namespace (N / 100 items; ns drawn
  by random.Random(11)) with filter {"group": 3} (matching a tenth), limit
  10.
* semantic_put / semantic_search: a store with an index of 100
  dimensions over "text", embedding a text as the counts of its
  characters by code point modulo 100 (`embed` below; the Rust half has
  the same), 1,000 items in ("sem",) with text "note <i> about topic
  <i % 37> and colour <i % 11>"; then 200 searches with query "topic <t>
  colour <c>" (t = q % 37, c = q % 11), limit 10. PostgresStore needs the
  pgvector extension for this part; without it, a `skipped` line says
  so. The run deletes the bench's own namespaces ("bench", ...) and
  ("sem",) first, and leaves its items behind.

Each operation is timed with time.perf_counter around the whole loop;
every answer is checked (the item found, 10 results of group 3, ...).
Output: one JSON object per line on stdout:
{"impl": "langgraph", "backend": ..., "op": ..., "n": ..., "ops": ...,
"us_per_op": ...}.

Usage: python store.py [--backend memory|sqlite|postgres] [--pg-url URL]
       [--n 100000]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from importlib.metadata import version

NAMESPACES = 100
PUTS = 1_000
GETS = 10_000
FILTER_SEARCHES = 1_000
SEMANTIC_ITEMS = 1_000
SEMANTIC_SEARCHES = 200
DIMS = 100

# InMemoryStore scores in pure Python without NumPy (not pinned) and warns
# so once; the figure is LangGraph's as installed by the pins.
logging.getLogger("langgraph.store.memory").setLevel(logging.ERROR)


def embed(texts: list[str]) -> list[list[float]]:
    """The fixed embedding: counts of the characters by code point mod 100."""
    out = []
    for text in texts:
        vector = [0.0] * DIMS
        for ch in text:
            vector[ord(ch) % DIMS] += 1.0
        out.append(vector)
    return out


def index_config() -> dict:
    # InMemoryStore and PostgresStore read `fields`, SqliteStore
    # `text_fields`; both are given so every store embeds "text".
    return {"dims": DIMS, "embed": embed, "fields": ["text"], "text_fields": ["text"]}


@contextmanager
def open_store(backend: str, pg_url: str | None, indexed: bool):
    """A fresh, empty store of `backend`, closed (and its data removed)
    after."""
    index = index_config() if indexed else None
    if backend == "memory":
        from langgraph.store.memory import InMemoryStore

        yield InMemoryStore(index=index)
    elif backend == "sqlite":
        yield from sqlite_store(index)
    else:
        yield from postgres_store(pg_url, index)


# What the SQLite file's journal is: "wal" (the default here) is WAL with
# synchronous=NORMAL, the durability agent-state's SqliteStore keeps (a
# put survives the process crashing, not the machine losing power), so the
# two are compared like for like; "langgraph" leaves the connection as
# SqliteStore gets it (a rollback journal, synchronous=FULL: an fsync per
# commit).
SQLITE_JOURNAL = "wal"


def sqlite_store(index):
    # SqliteStore loads sqlite-vec for an index, which needs a SQLite that
    # may load extensions: pysqlite3-binary's, as tests/reference/store.
    import pysqlite3.dbapi2 as sqlite3
    from langgraph.store.sqlite import SqliteStore

    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(
            os.path.join(tmp, "store.db"), check_same_thread=False, isolation_level=None
        )
        if SQLITE_JOURNAL == "wal":
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        try:
            store = SqliteStore(conn, index=index)
            store.setup()
            yield store
        finally:
            conn.close()


def postgres_store(pg_url, index):
    from langgraph.store.postgres import PostgresStore

    with PostgresStore.from_conn_string(pg_url, index=index) as store:
        store.setup()
        # A fresh start: remove what an earlier run left, and only that
        # (the bench's namespaces), so a shared database keeps the rest.
        with store._cursor() as cur:
            cur.execute("DELETE FROM store WHERE prefix LIKE 'bench.%' OR prefix = 'sem'")
        yield store


def line(backend: str, op: str, n: int, ops: int, seconds: float) -> None:
    record = {
        "impl": "langgraph",
        "backend": backend if backend != "sqlite" or SQLITE_JOURNAL == "wal" else "sqlite-fsync",
        "op": op,
        "n": n,
        "ops": ops,
        "us_per_op": round(seconds * 1e6 / ops, 3),
    }
    print(json.dumps(record), flush=True)


def item_place(i: int) -> tuple[tuple[str, str], str]:
    return ("bench", f"ns{i % NAMESPACES}"), f"k{i}"


def item_value(i: int) -> dict:
    group = (i // NAMESPACES) % 10
    return {"i": i, "group": group, "text": f"item {i} of group {group}"}


def bench_items(store, backend: str, n: int) -> None:
    from langgraph.store.base import PutOp

    loaded = max(0, n - PUTS)
    start = time.perf_counter()
    for first in range(0, loaded, PUTS):
        store.batch(
            [PutOp(*item_place(i), item_value(i)) for i in range(first, min(first + PUTS, loaded))]
        )
    if loaded:
        line(backend, "put_batch", n, loaded, time.perf_counter() - start)
    start = time.perf_counter()
    for i in range(loaded, n):
        store.put(*item_place(i), item_value(i))
    line(backend, "put", n, n - loaded, time.perf_counter() - start)

    draws = random.Random(7)
    wanted = [draws.randrange(n) for _ in range(GETS)]
    start = time.perf_counter()
    found = [store.get(*item_place(i)) for i in wanted]
    line(backend, "get", n, GETS, time.perf_counter() - start)
    assert all(item is not None and item.value["i"] == i for item, i in zip(found, wanted))

    draws = random.Random(11)
    spaces = [draws.randrange(NAMESPACES) for _ in range(FILTER_SEARCHES)]
    start = time.perf_counter()
    results = [
        store.search(("bench", f"ns{j}"), filter={"group": 3}, limit=10) for j in spaces
    ]
    line(backend, "search_filter", n, FILTER_SEARCHES, time.perf_counter() - start)
    want = min(10, n // NAMESPACES // 10)
    assert all(len(r) == want and all(i.value["group"] == 3 for i in r) for r in results)


def bench_semantic(store, backend: str) -> None:
    start = time.perf_counter()
    for i in range(SEMANTIC_ITEMS):
        text = f"note {i} about topic {i % 37} and colour {i % 11}"
        store.put(("sem",), f"n{i}", {"text": text})
    line(backend, "semantic_put", SEMANTIC_ITEMS, SEMANTIC_ITEMS, time.perf_counter() - start)

    queries = [f"topic {q % 37} colour {q % 11}" for q in range(SEMANTIC_SEARCHES)]
    start = time.perf_counter()
    results = [store.search(("sem",), query=q, limit=10) for q in queries]
    seconds = time.perf_counter() - start
    line(backend, "semantic_search", SEMANTIC_ITEMS, SEMANTIC_SEARCHES, seconds)
    assert all(len(r) == 10 and r[0].score is not None for r in results)


def has_pgvector(pg_url: str) -> bool:
    import psycopg

    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
    return row is not None


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=["memory", "sqlite", "postgres"], default="memory")
    p.add_argument("--pg-url", help="a PostgreSQL conninfo or URL (--backend postgres)")
    p.add_argument("--n", type=int, default=100_000, help="items of the put/get/filter part")
    p.add_argument("--sqlite-journal", choices=["wal", "langgraph"], default="wal",
                   help="wal: WAL + synchronous=NORMAL, as agent-state's; langgraph: as SqliteStore leaves it")
    args = p.parse_args(argv)
    if args.backend == "postgres" and not args.pg_url:
        p.error("--backend postgres needs --pg-url")
    if args.n < NAMESPACES:
        p.error(f"--n must be at least {NAMESPACES} (one item per namespace)")
    return args


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    global SQLITE_JOURNAL
    SQLITE_JOURNAL = args.sqlite_journal
    package = {
        "memory": "langgraph-checkpoint",
        "sqlite": "langgraph-checkpoint-sqlite",
        "postgres": "langgraph-checkpoint-postgres",
    }[args.backend]
    print(f"{package} {version(package)} (python {sys.version.split()[0]})", file=sys.stderr)
    with ExitStack() as stack:
        store = stack.enter_context(open_store(args.backend, args.pg_url, indexed=False))
        bench_items(store, args.backend, args.n)
    if args.backend == "postgres" and not has_pgvector(args.pg_url):
        skipped = {"impl": "langgraph", "backend": "postgres", "op": "semantic",
                   "skipped": "the server has no pgvector extension"}
        print(json.dumps(skipped), flush=True)
        return
    with open_store(args.backend, args.pg_url, indexed=True) as store:
        bench_semantic(store, args.backend)


if __name__ == "__main__":
    main(sys.argv[1:])
