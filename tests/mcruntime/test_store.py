from __future__ import annotations

from typing import Any

import orjson
import pytest

from mcruntime import Store, indexers


def obj(name: str, ns: str = "default", *, labels: dict[str, str] | None = None, owners: list[str] | None = None,
        node: str | None = None) -> dict[str, object]:  # fmt: skip
    meta: dict[str, object] = {"name": name, "namespace": ns, "labels": labels or {}}
    if owners:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Owner", "name": f"o-{u}", "uid": u, "controller": i == 0}
            for i, u in enumerate(owners)
        ]
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}}


def key(o: dict[str, object]) -> str:
    meta = o["metadata"]
    assert isinstance(meta, dict)
    return f"{meta['namespace']}/{meta['name']}"


def names(items: list[dict[str, object]]) -> list[str]:
    return sorted(str(i["metadata"]["name"]) for i in items)  # type: ignore[index]


def test_indexes_by_namespace_owner_label_and_custom_function() -> None:
    store = Store(
        {
            indexers.OWNER_UID: indexers.owner_uid,
            indexers.CONTROLLER_UID: indexers.controller_uid,
            "label:app": indexers.label_value("app"),
            "node": indexers.field_value("spec.nodeName"),
        }
    )
    for o in (
        obj("a", labels={"app": "web"}, owners=["u1", "u2"], node="n1"),
        obj("b", labels={"app": "db"}, owners=["u2"], node="n1"),
        obj("c", "other", labels={"app": "web"}),
    ):
        store.put(key(o), o)
    assert names(store.by_index(indexers.NAMESPACE, "default")) == ["a", "b"]
    assert names(store.by_index(indexers.OWNER_UID, "u2")) == ["a", "b"]
    assert names(store.by_index(indexers.CONTROLLER_UID, "u2")) == ["b"]
    assert names(store.by_index("label:app", "web")) == ["a", "c"]
    assert names(store.by_index("node", "n1")) == ["a", "b"]


def test_updates_move_index_entries_and_deletes_remove_them() -> None:
    store = Store({"label:app": indexers.label_value("app")})
    store.put("default/a", obj("a", labels={"app": "web"}))
    store.put("default/a", obj("a", labels={"app": "db"}))
    assert store.index_keys("label:app", "web") == []
    assert store.index_keys("label:app", "db") == ["default/a"]
    store.delete("default/a")
    assert store.index_keys("label:app", "db") == []
    assert store.index_keys(indexers.NAMESPACE, "default") == []
    assert len(store) == 0


def test_membership_in_an_index_is_answered_as_the_index_says() -> None:
    store = Store({"label:app": indexers.label_value("app")})
    store.put("default/a", obj("a", labels={"app": "web"}))
    assert store.indexed("label:app", "web", "default/a")
    assert not store.indexed("label:app", "db", "default/a") and not store.indexed("label:app", "web", "default/b")
    assert store.indexed(indexers.NAMESPACE, "default", "default/a")
    store.put("default/a", obj("a", labels={"app": "db"}))
    assert not store.indexed("label:app", "web", "default/a") and store.indexed("label:app", "db", "default/a")
    store.delete("default/a")
    assert not store.indexed("label:app", "db", "default/a")
    with pytest.raises(KeyError, match="no index named 'nope'"):
        store.indexed("nope", "x", "default/a")


def test_the_values_an_object_is_indexed_under_are_read_without_decoding_it() -> None:
    store = Store({"label:app": indexers.label_value("app")})
    store.put("default/a", obj("a", labels={"app": "web"}))
    store.put("default/b", obj("b"))
    store._items = {k: b"not json" for k in store._items}  # a decode would fail
    assert store.values_of("label:app", "default/a") == ("web",)
    assert store.values_of("label:app", "default/b") == (), "not indexed there"
    assert store.values_of("label:app", "default/nope") == (), "not stored"
    assert store.values_of(indexers.NAMESPACE, "default/a") == ("default",)
    assert store.values_of(indexers.NAMESPACE, "default/nope") == ()
    with pytest.raises(KeyError, match="no index named 'nope'"):
        store.values_of("nope", "default/a")


def test_an_indexer_added_later_indexes_existing_objects() -> None:
    store = Store()
    store.put("default/a", obj("a", labels={"tier": "1"}))
    store.add_indexer("tier", indexers.label_value("tier"))
    store.add_indexer("tier", indexers.label_value("tier"))  # the same index again is fine
    assert store.index_keys("tier", "1") == ["default/a"]
    with pytest.raises(ValueError, match="already exists"):
        store.add_indexer("tier", indexers.label_value("other"))
    with pytest.raises(KeyError, match="no index named 'missing'"):
        store.by_index("missing", "x")


def test_reads_are_independent_copies() -> None:
    store = Store()
    store.put("default/a", obj("a", labels={"app": "web"}))
    first = store.get("default/a")
    assert first is not None
    first["metadata"]["labels"]["app"] = "changed"  # type: ignore[index]
    again = store.get("default/a")
    assert again is not None and again["metadata"]["labels"]["app"] == "web"  # type: ignore[index]


def test_a_failing_custom_index_does_not_lose_the_object() -> None:
    def broken(_o: dict[str, object]) -> list[str]:
        raise RuntimeError("bug in an index function")

    store = Store({"broken": broken})
    store.put("default/a", obj("a"))
    assert store.get("default/a") is not None
    assert store.index_keys("broken", "x") == []


def test_index_values_taken_from_the_dict_in_hand_spare_decoding_the_json() -> None:
    """An informer's LIST indexes each object while it holds the dict and stores the JSON
    later: `put(..., index_values=...)` indexes without calling the index functions (nor
    decoding) again; an indexer added in between is computed from the JSON as before."""
    calls: list[str] = []

    def by_app(obj: dict[str, Any]) -> list[str]:
        calls.append("app")
        return [obj["metadata"]["labels"]["app"]]

    store = Store({"app": by_app})
    obj: dict[str, Any] = {"metadata": {"name": "a", "namespace": "ns", "labels": {"app": "web", "tier": "front"}}}
    values = store.index_values("ns/a", obj)
    assert values == {"app": ("web",)} and calls == ["app"]
    store.add_indexer("tier", lambda o: [o["metadata"]["labels"]["tier"]])
    store.put("ns/a", None, orjson.dumps(obj), index_values=values)
    assert calls == ["app"], "the given values were used"
    assert store.index_keys("app", "web") == ["ns/a"]
    assert store.index_keys("tier", "front") == ["ns/a"], "an indexer the values lack is computed"
    assert Store().index_values("ns/a", obj) is None


@pytest.mark.parametrize(
    ("func", "values"),
    [
        (lambda _o: [], ()),
        (lambda _o: ["a"], ("a",)),
        (lambda _o: ["a", "b", "a"], ("a", "b")),
        (lambda _o: ("b", "b"), ("b",)),
        (lambda _o: (v for v in ["c", "c", "d"]), ("c", "d")),
    ],
)
def test_index_values_are_the_functions_values_once_each_in_order(func: Any, values: tuple[str, ...]) -> None:
    store = Store({"f": func})
    assert store.index_values("ns/a", obj("a", "ns")) == {"f": values}
    store.put("ns/a", obj("a", "ns"))
    assert [v for v in ("a", "b", "c", "d") if store.index_keys("f", v)] == list(values)
