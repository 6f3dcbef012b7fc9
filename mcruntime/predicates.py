"""Predicates filter events before a handler sees them (controller-runtime's
`predicate` package). A predicate is any callable taking the event and returning bool;
for non-update events the change-detecting predicates let everything through."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .fields import get_int, get_str, get_str_map, is_object
from .informer import EventType, ObjectEvent
from .selectors import LabelSelector

Predicate = Callable[[ObjectEvent], bool]


def _changed(get: Callable[[Mapping[str, Any]], Any]) -> Predicate:
    def predicate(event: ObjectEvent) -> bool:
        if event.type is not EventType.MODIFIED or event.old is None:
            return True
        return bool(get(event.old) != get(event.obj))

    return predicate


generation_changed: Predicate = _changed(lambda o: get_int(o, "metadata.generation"))
"""Updates only when metadata.generation moved (spec changes; status writes are ignored)."""

resource_version_changed: Predicate = _changed(lambda o: get_str(o, "metadata.resourceVersion", required=False))

_NOT_STATUS = ("generation", "labels", "annotations", "deletionTimestamp", "finalizers")


def _not_status(o: Mapping[str, Any]) -> tuple[Any, ...]:
    # every event of the most watched objects passes here: the fields as the cache decoded
    # them (equal JSON, equal values; absent and empty alike), read once, not validated
    # field by field (a reconcile reads them through `fields` and names a bad one)
    meta = o.get("metadata")
    if not is_object(meta):
        return ()
    return tuple(meta.get(k) or None for k in _NOT_STATUS)


not_status_only: Predicate = _changed(_not_status)
"""Updates that touch more than the status (spec, labels, annotations, finalizers, deletion):
for watches of objects whose status another controller writes often."""
not_status_or_finalizers_only: Predicate = _changed(lambda o: _not_status(o)[:-1])
"""As `not_status_only`, and a change of finalizers alone is ignored too: for watches of
objects another controller (the one that finalizes them) adds its finalizer to, when
what the watcher writes does not follow from the finalizers."""
# what the server changes on every write, whoever made it: no change of the object's own
_SERVER_KEPT = frozenset({"resourceVersion", "managedFields"})


def changed_beyond(*, finalizers: bool = False, annotations: Iterable[str] = ()) -> Predicate:
    """Updates that change more than the finalizers (with `finalizers=True`) and the named
    annotations: for a watcher whose result follows from none of them, when another
    controller writes them (a finalizer and its bookkeeping annotation, added once per
    object). Everything else counts: spec, status, labels, other annotations, deletion,
    any other field; absent and empty are alike, as in `not_status_only`."""
    ignored = _SERVER_KEPT | ({"finalizers"} if finalizers else frozenset())
    ignored_annotations = frozenset(annotations)

    def other_annotations(value: Any) -> Any:
        if not ignored_annotations or not is_object(value):
            return value or None
        return {k: v for k, v in value.items() if k not in ignored_annotations} or None

    def beyond(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        if old.keys() != new.keys():
            return True
        old_meta, new_meta = old.get("metadata"), new.get("metadata")
        if not is_object(old_meta) or not is_object(new_meta):
            return True
        # the generation first: a spec change is told without comparing the spec
        if old_meta.get("generation") != new_meta.get("generation"):
            return True
        for key in old_meta.keys() | new_meta.keys():
            if key in ignored:
                continue
            before, after = old_meta.get(key), new_meta.get(key)
            if key == "annotations":
                before, after = other_annotations(before), other_annotations(after)
            if (before or None) != (after or None):
                return True
        return any(value != old[key] for key, value in new.items() if key != "metadata")

    def predicate(event: ObjectEvent) -> bool:
        if event.type is not EventType.MODIFIED or event.old is None:
            return True
        return beyond(event.old, event.obj)

    return predicate


labels_changed: Predicate = _changed(lambda o: get_str_map(o, "metadata.labels"))
annotations_changed: Predicate = _changed(lambda o: get_str_map(o, "metadata.annotations"))


def label_selector(selector: str) -> Predicate:
    """Events for objects matching the selector (parsed now: a bad selector fails here).
    An update passes when the old OR the new object matches, so a controller hears about
    an object whose labels stopped matching (controller-runtime's LabelSelectorPredicate
    misses exactly that removal)."""
    parsed = LabelSelector.parse(selector)

    def predicate(event: ObjectEvent) -> bool:
        if parsed.matches(get_str_map(event.obj, "metadata.labels")):
            return True
        old = event.old if event.type is EventType.MODIFIED else None
        return old is not None and parsed.matches(get_str_map(old, "metadata.labels"))

    return predicate


def in_namespace(*namespaces: str) -> Predicate:
    wanted = frozenset(namespaces)
    return lambda event: get_str(event.obj, "metadata.namespace", required=False) in wanted


def event_types(*types: EventType) -> Predicate:
    wanted = frozenset(types)
    return lambda event: event.type in wanted


def all_of(*predicates: Predicate) -> Predicate:
    return lambda event: all(p(event) for p in predicates)


def any_of(*predicates: Predicate) -> Predicate:
    return lambda event: any(p(event) for p in predicates)


def negate(predicate: Predicate) -> Predicate:
    return lambda event: not predicate(event)
