"""put / get / overwrite / delete on LangGraph's InMemoryStore and
SqliteStore: what a get returns, whether an overwrite replaces the value
whole and keeps `created_at`, what a delete leaves (namespaces listed
after their last item went)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from store_common import emit, error_of, namespaces, next_second, run_both  # noqa: E402

NS = ("users", "u1")


def scenario(store):
    store.put(NS, "profile", {"work": "geology", "level": 3, "langs": ["en", "fr"]})
    first = store.get(NS, "profile")
    # SqliteStore stamps whole seconds: cross one so its times can differ.
    next_second()
    store.put(NS, "profile", {"work": "botany"})
    second = store.get(NS, "profile")
    store.put(("users", "u2"), "profile", {"work": "tea"})
    store.delete(("users", "u2"), "profile")
    return {
        "first": {"namespace": list(first.namespace), "key": first.key, "value": first.value},
        "overwritten_value": second.value,
        "created_at_kept": second.created_at == first.created_at,
        "updated_at_later": second.updated_at > first.updated_at,
        "after_delete": store.get(("users", "u2"), "profile"),
        "delete_missing_error": error_of(lambda: store.delete(NS, "never-there")),
        "get_missing": store.get(("nobody",), "x"),
        "namespaces_after": namespaces(store.list_namespaces(prefix=())),
        "item_dict_keys": sorted(second.dict().keys()),
    }


emit(run_both(scenario))
