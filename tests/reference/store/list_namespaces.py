"""list_namespaces: everything; prefix and suffix conditions with and
without `*`; both at once; max_depth (cut, deduplicated); limit and
offset; the sort (`("a-b",)` beside `("a", "b", ...)`: tuples or joined
text); and what is listed after a namespace's last item was deleted or a
get read a namespace that never held anything."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from store_common import emit, namespaces, run_both  # noqa: E402

HELD = [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("a-b",), ("b", "b", "c"), ("c",)]

CASES = {
    "all": {},
    "prefix_a": {"prefix": ("a",)},
    "prefix_a_star_c": {"prefix": ("a", "*", "c")},
    "prefix_star": {"prefix": ("*",)},
    "suffix_c": {"suffix": ("c",)},
    "suffix_b_star": {"suffix": ("b", "*")},
    "prefix_and_suffix": {"prefix": ("a",), "suffix": ("d",)},
    "max_depth_1": {"max_depth": 1},
    "max_depth_2": {"max_depth": 2},
    "prefix_a_max_depth_2": {"prefix": ("a",), "max_depth": 2},
    "limit2_offset1": {"limit": 2, "offset": 1},
    "max_depth_1_limit2_offset1": {"max_depth": 1, "limit": 2, "offset": 1},
}


def scenario(store):
    for ns in HELD:
        store.put(ns, "k", {})
    out = {case: namespaces(store.list_namespaces(**args)) for case, args in CASES.items()}
    store.put(("gone", "x"), "k", {})
    store.delete(("gone", "x"), "k")
    store.get(("ghost",), "k")
    out["after_delete_and_get"] = namespaces(store.list_namespaces(prefix=("g",)))
    out["after_delete_and_get"] += namespaces(store.list_namespaces(prefix=("gone",)))
    out["after_delete_and_get"] += namespaces(store.list_namespaces(prefix=("ghost",)))
    return out


emit(run_both(scenario))
