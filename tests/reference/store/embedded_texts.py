"""The texts a store hands its embeddings model on a put: the whole value
(`$`, the index's default) as JSON with sorted keys, and the leaves a path
picks (`a[*]`, `a[-1]`, `c.y`, `c.*`, `{b,c}`, a missing field), each
written as Python's `str` writes it (True, 2.5, 1e+20, 1.5e-07, a nested list or
object as JSON). Recorded per put as the sorted set of texts embedded
(InMemoryStore embeds each distinct text once)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from store_common import emit, letter_counts, run_both  # noqa: E402

SEEN = []


def recording_embed(texts):
    """The fixed embedding, noting each text it is given."""
    SEEN.extend(texts)
    return letter_counts(texts)


VALUE = {
    "b": 1,
    "a": [1, 2.5, "é", True, None, [3, "x"]],
    "c": {"z": "line\nbreak \"quoted\"", "y": 1.0, "w": {"k": False}},
    "big": 1e20,
    "wide": 12345678901234567890,
    "small": 0.1 + 0.2,
    "tiny": 1.5e-7,
}

# (case, the put's index: None for the store's default, `$`)
CASES = [
    ("whole_value", None),
    ("every_item", ["a[*]"]),
    ("last_item", ["a[-1]"]),
    ("first_item", ["a[0]"]),
    ("nested_field", ["c.y"]),
    ("wildcard", ["c.*"]),
    ("two_fields", ["{b,c}"]),
    ("two_nested_fields", ["{c.z,c.w}"]),
    ("numbers", ["big", "wide", "small", "tiny"]),
    ("missing", ["nope", "c.nope"]),
    ("several_paths", ["b", "a[1]", "c.w.k"]),
]


def scenario(store):
    out = {}
    for case, index in CASES:
        SEEN.clear()
        store.put(("t",), case, VALUE, index=index)
        out[case] = sorted(set(SEEN))
    return out


emit(run_both(scenario, {"dims": 8, "embed": recording_embed}))
