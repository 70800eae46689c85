"""One batch mixing reads and writes: its gets, searches and listings see
the store as it was before the batch; its puts are applied at the end,
the last put of one item winning (a delete, then a put; a put, then a
delete)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from langgraph.store.base import GetOp, ListNamespacesOp, PutOp, SearchOp  # noqa: E402
from store_common import emit, idents, namespaces, run_both  # noqa: E402

NS = ("b",)


def result(r):
    if r is None:
        return None
    if isinstance(r, list):
        if r and isinstance(r[0], tuple):
            return namespaces(r)
        return [[i, item.value] for i, item in zip(idents(r), r)]
    return r.value


def scenario(store):
    store.put(NS, "k1", {"v": 1})
    store.put(NS, "gone", {"v": 0})
    ops = [
        GetOp(NS, "k1"),
        PutOp(NS, "k1", {"v": 2}),
        GetOp(NS, "k1"),
        PutOp(NS, "k2", {"v": "first"}),
        PutOp(NS, "k2", {"v": "last"}),
        SearchOp(NS, limit=10),
        PutOp(("c",), "k3", {"v": 3}),
        PutOp(("c",), "k3", None),
        PutOp(NS, "gone", None),
        PutOp(NS, "gone", {"v": "back"}),
        ListNamespacesOp(match_conditions=(), max_depth=None, limit=100, offset=0),
        GetOp(NS, "k2"),
    ]
    results = [result(r) for r in store.batch(ops)]
    after = {
        key: (lambda item: item and item.value)(store.get(ns, key))
        for ns, key in [(NS, "k1"), (NS, "k2"), (("c",), "k3"), (NS, "gone")]
    }
    results[5] = sorted(results[5])
    return {"results": results, "after": after}


emit(run_both(scenario))
