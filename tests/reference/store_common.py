"""Shared by tests/reference/store/*.py: LangGraph's two stores of
langgraph-checkpoint 4.3.2 / langgraph-checkpoint-sqlite 3.1.2 run through
one scenario each, and the facts a scenario prints, made deterministic
(times become order and equality facts, scores are rounded).

Every scenario prints `{"memory": ..., "sqlite": ...}`: what InMemoryStore
and what SqliteStore (a fresh file in a temporary directory) answered.
tests/store_parity.rs runs the same scenarios on our stores and compares.
"""

import json
import logging
import os
import tempfile
import time

# SqliteStore loads the sqlite-vec extension for semantic search, which
# needs a SQLite that allows extensions; CPython builds (pyenv's among
# them) often do not. pysqlite3-binary brings its own SQLite, pinned, so
# every machine records the same.
import pysqlite3.dbapi2 as sqlite3
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

# InMemoryStore scores in pure Python without NumPy (not pinned here, so
# the scores do not hang on its version) and warns so once; quiet that.
logging.getLogger("langgraph.store.memory").setLevel(logging.ERROR)

# The fixed embedding both halves use: how often each of these letters
# occurs in the text (lower-cased). tests/store_parity.rs has the same.
ALPHABET = "aeioustr"


def letter_counts(texts):
    """One vector per text: the counts of ALPHABET's letters."""
    return [[float(t.lower().count(c)) for c in ALPHABET] for t in texts]


def index(fields=None):
    """An index of the letter counts; `fields` under both the key
    InMemoryStore reads (`fields`) and the one SqliteStore reads
    (`text_fields`), so both embed the same paths."""
    config = {"dims": len(ALPHABET), "embed": letter_counts}
    if fields is not None:
        config["fields"] = fields
        config["text_fields"] = fields
    return config


def run_both(scenario, index_config=None):
    """`scenario(store)` on a fresh InMemoryStore and a fresh SqliteStore."""
    out = {"memory": scenario(InMemoryStore(index=index_config))}
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(
            os.path.join(tmp, "store.db"), check_same_thread=False, isolation_level=None
        )
        try:
            store = SqliteStore(conn, index=index_config)
            store.setup()
            out["sqlite"] = scenario(store)
        finally:
            conn.close()
    return out


def ident(item):
    """An item as `namespace.../key`."""
    return "/".join([*item.namespace, item.key])


def idents(items):
    """What a search found, in its order."""
    return [ident(i) for i in items]


def scored(items):
    """What a semantic search found, with its scores rounded."""
    return [
        [ident(i), None if i.score is None else round(i.score, 4)] for i in items
    ]


def namespaces(listed):
    """Listed namespaces as lists."""
    return [list(ns) for ns in listed]


def error_of(call):
    """The class of what `call()` raised, or None."""
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the class is the fact recorded
        return type(e).__name__
    return None


def start_of_second():
    """Waits for a fresh wall-clock second, so the next few puts share
    SqliteStore's one-second CURRENT_TIMESTAMP."""
    time.sleep(1.0 - (time.time() % 1.0) + 0.01)


def next_second():
    """Waits until the wall clock has passed into the next second, so
    SqliteStore stamps the next put later than the previous one."""
    start_of_second()


def emit(value):
    """Prints the facts as sorted, indented JSON."""
    print(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False))
