"""Semantic search with a fixed embedding (store_common.letter_counts:
counts of eight letters, the same function as tests/store_parity.rs):
the index's `fields`, a put's own paths (`sections[*].body` embeds each
body as its own vector, `{title,summary}` both fields), `index=False`,
an overwrite with `index=False` of an item embedded before, a query with
a filter, with paging, and a search without a query. Scores are rounded
to four places."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from store_common import emit, idents, index, run_both, scored  # noqa: E402

NS = ("docs",)


def scenario(store):
    store.put(NS, "tea", {"text": "green tea at seven", "kind": "drink"})
    store.put(NS, "rust", {"text": "rust is a systems language", "kind": "code"})
    store.put(NS, "trees", {"text": "oaks and ash trees", "kind": "plant"})
    store.put(NS, "quiet", {"text": "tea tea tea", "kind": "drink"}, index=False)
    store.put(
        NS,
        "sections",
        {"sections": [{"body": "iris"}, {"body": "tulips"}], "kind": "plant"},
        index=["sections[*].body"],
    )
    store.put(NS, "pair", {"title": "sea", "summary": "stars", "kind": "sky"}, index=["{title,summary}"])
    out = {
        "query_tea": scored(store.search(NS, query="tea", limit=10)),
        "query_tulips": scored(store.search(NS, query="tulips", limit=3)),
        "query_stars": scored(store.search(NS, query="stars", limit=2)),
        "query_with_filter": scored(store.search(NS, query="tea", filter={"kind": "plant"}, limit=10)),
        "query_limit2_offset1": scored(store.search(NS, query="rust", limit=2, offset=1)),
        "no_query": sorted(idents(store.search(NS, limit=10))),
    }
    store.put(NS, "tea", {"text": "changed to coffee", "kind": "drink"}, index=False)
    out["after_unindexed_overwrite"] = scored(store.search(NS, query="green tea", limit=2))
    return out


emit(run_both(scenario, index(["text"])))
