"""The order of search results without a query, and paging through them.

InMemoryStore lists items in the order its dicts hold them (namespaces in
the order first written, keys in the order first put; an overwrite keeps
the place, a delete and put again moves to the end). SqliteStore orders by
`updated_at` DESC, which it stamps in whole seconds: puts a second apart
come newest first; puts within one second tie, and the recording shows
what SQLite's sort leaves them in."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from store_common import emit, idents, next_second, run_both, start_of_second  # noqa: E402


def same_second(store):
    start_of_second()
    for i, key in enumerate(["c", "a", "e", "b", "d"]):
        store.put(("p",), key, {"i": i})
    store.put(("p",), "a", {"i": 9})
    store.delete(("p",), "e")
    store.put(("p",), "e", {"i": 10})
    pages = {
        f"offset{offset}_limit2": idents(store.search(("p",), limit=2, offset=offset))
        for offset in (0, 2, 4, 6)
    }
    return {"all": idents(store.search(("p",), limit=10)), **pages}


def spaced(store):
    for key in ["c", "a", "b"]:
        store.put(("q",), key, {"k": key})
        next_second()
    store.put(("q",), "c", {"k": "c again"})
    next_second()
    store.put(("q", "deeper"), "z", {"k": "z"})
    return {
        "all": idents(store.search(("q",), limit=10)),
        "limit2_offset1": idents(store.search(("q",), limit=2, offset=1)),
    }


emit({"same_second": run_both(same_second), "second_apart": run_both(spaced)})
