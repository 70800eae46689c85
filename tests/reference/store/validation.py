"""What LangGraph's stores refuse, as the class of the error and whether
anything was written: an empty namespace, a label with a period, an empty
label, the reserved root `langgraph`, a value that is not an object, an
unknown filter operator and an order operator against a string (on a
store holding an item, so the filter is evaluated), and a batch whose put
has a dotted label given straight to `batch`."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from langgraph.store.base import PutOp  # noqa: E402
from store_common import emit, error_of, idents, namespaces, run_both  # noqa: E402


def written(store):
    """Every item and namespace the store holds."""
    return {
        "items": sorted(idents(store.search((), limit=100))),
        "namespaces": namespaces(store.list_namespaces()),
    }


CASES = {
    "empty_namespace": lambda s: s.put((), "k", {"v": 1}),
    "dotted_label": lambda s: s.put(("a.b",), "k", {"v": 1}),
    "empty_label": lambda s: s.put(("a", ""), "k", {"v": 1}),
    "langgraph_root": lambda s: s.put(("langgraph", "x"), "k", {"v": 1}),
    "search_dotted_prefix": lambda s: s.search(("a.b",)),
    "unknown_operator": lambda s: s.search(("held",), filter={"n": {"$in": [1]}}),
    "order_against_string": lambda s: s.search(("held",), filter={"n": {"$gt": "x"}}),
    "batch_dotted_label_with_valid_put": lambda s: s.batch(
        [PutOp(("ok",), "k", {"v": 1}), PutOp(("x.y",), "k", {"v": 1})]
    ),
}


def scenario(store):
    store.put(("held",), "k", {"n": 1})
    out = {}
    for case, call in CASES.items():
        error = error_of(lambda: call(store))
        out[case] = {"error": error, "after": written(store)}
    return out


emit(run_both(scenario))
