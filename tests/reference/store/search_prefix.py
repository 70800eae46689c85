"""Search by namespace prefix: a prefix finds its namespace and those below
it, never a sibling that merely starts with the same letters (`a.bc`
beside `a.b`); the empty prefix finds everything. Sorted here: the order
of results is paging_order.py's concern. Labels holding what SQL's LIKE
and GLOB read as patterns (`%`, `_`, `*`, `[`) are matched as text."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from store_common import emit, idents, run_both  # noqa: E402

NAMESPACES = [
    ("a", "b"), ("a", "b", "c"), ("a", "bc"), ("a",), ("ab",), ("A", "b"), ("b",),
    ("p%",), ("pxq",), ("p_q",), ("x*",), ("xy",), ("x[1]",), ("x1",),
]
PREFIXES = [
    ("a", "b"), ("a",), ("a", "b", "c"), ("a", "bc"), ("ab",), ("A",), ("a", "b", "c", "d"), (),
    ("p%",), ("p_q",), ("x*",), ("x[1]",),
]


def scenario(store):
    for ns in NAMESPACES:
        store.put(ns, "k", {"at": ".".join(ns)})
    return {
        "/".join(prefix) or "(empty)": sorted(idents(store.search(prefix, limit=100)))
        for prefix in PREFIXES
    }


emit(run_both(scenario))
