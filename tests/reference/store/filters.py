"""Search filters: equality of strings, numbers (1 against 1.0), booleans,
null; nested objects (exact and a subset) and lists; every operator
($eq $ne $gt $gte $lt $lte, and two on one field); a field some items
lack; a dotted field name; an unknown operator and an order operator
against a string. Each case prints the keys found (sorted) or the class
of the error raised."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from store_common import emit, error_of, idents, run_both  # noqa: E402

ITEMS = {
    ("docs", "num"): {
        "n1": {"kind": "note", "n": 1, "tags": ["x", "y"], "meta": {"lang": "en", "len": 3}, "flag": True},
        "n2": {"kind": "note", "n": 2.5, "tags": ["y"], "meta": {"lang": "fr"}, "flag": False},
        "n3": {"kind": "todo", "n": 3, "tags": ["x", "y"], "meta": {"lang": "en", "len": 3, "extra": 1}},
    },
    ("docs", "other"): {"n4": {"kind": "todo", "name": "has no n"}},
}

# (case, namespace prefix, filter)
CASES = [
    ("eq_string", ("docs",), {"kind": "note"}),
    ("eq_int", ("docs", "num"), {"n": 1}),
    ("eq_int_as_float", ("docs", "num"), {"n": 1.0}),
    ("eq_float", ("docs", "num"), {"n": 2.5}),
    ("eq_true", ("docs",), {"flag": True}),
    ("eq_false", ("docs",), {"flag": False}),
    ("eq_null_missing", ("docs",), {"n": None}),
    ("nested_exact", ("docs",), {"meta": {"lang": "en", "len": 3}}),
    ("nested_subset", ("docs",), {"meta": {"lang": "en"}}),
    ("list_exact", ("docs",), {"tags": ["x", "y"]}),
    ("list_other_order", ("docs",), {"tags": ["y", "x"]}),
    ("list_shorter", ("docs",), {"tags": ["x"]}),
    ("two_fields", ("docs",), {"kind": "todo", "n": 3}),
    ("op_eq", ("docs", "num"), {"n": {"$eq": 3}}),
    ("op_ne", ("docs", "num"), {"n": {"$ne": 3}}),
    ("op_gt", ("docs", "num"), {"n": {"$gt": 1}}),
    ("op_gte", ("docs", "num"), {"n": {"$gte": 2.5}}),
    ("op_lt", ("docs", "num"), {"n": {"$lt": 3}}),
    ("op_lte", ("docs", "num"), {"n": {"$lte": 2.5}}),
    ("op_range", ("docs", "num"), {"n": {"$gt": 1, "$lt": 3}}),
    ("op_eq_string", ("docs",), {"kind": {"$eq": "todo"}}),
    ("op_ne_string", ("docs",), {"kind": {"$ne": "todo"}}),
    ("op_ne_missing_field", ("docs",), {"n": {"$ne": 3}}),
    ("op_gt_missing_field", ("docs",), {"n": {"$gt": 1}}),
    ("dotted_field", ("docs",), {"meta.lang": "en"}),
    ("unknown_operator", ("docs",), {"n": {"$in": [1, 3]}}),
    ("order_against_string", ("docs",), {"kind": {"$gt": "m"}}),
]


def scenario(store):
    for ns, items in ITEMS.items():
        for key, value in items.items():
            store.put(ns, key, value)
    out = {}
    for case, prefix, flt in CASES:
        found = []
        error = error_of(lambda: found.extend(store.search(prefix, filter=flt, limit=100)))
        out[case] = {"error": error} if error else sorted(i.split("/")[-1] for i in idents(found))
    return out


emit(run_both(scenario))
