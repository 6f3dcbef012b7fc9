"""Predicates filter events before a handler sees them (controller-runtime's
`predicate` package). A predicate is any callable taking the event and returning bool;
for non-update events the change-detecting predicates let everything through."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .informer import EventType, ObjectEvent
from .objects import annotations_of, labels_of, meta, namespace_of, resource_version_of
from .selectors import LabelSelector

Predicate = Callable[[ObjectEvent], bool]


def _changed(get: Callable[[Mapping[str, Any]], Any]) -> Predicate:
    def predicate(event: ObjectEvent) -> bool:
        if event.type is not EventType.MODIFIED or event.old is None:
            return True
        return bool(get(event.old) != get(event.obj))

    return predicate


generation_changed: Predicate = _changed(lambda o: meta(o).get("generation"))
"""Updates only when metadata.generation moved (spec changes; status writes are ignored)."""

resource_version_changed: Predicate = _changed(resource_version_of)

not_status_only: Predicate = _changed(
    lambda o: (
        meta(o).get("generation"),
        dict(labels_of(o)),
        dict(annotations_of(o)),
        meta(o).get("deletionTimestamp"),
        tuple(meta(o).get("finalizers") or ()),
    )
)
"""Updates that touch more than the status (spec, labels, annotations, finalizers, deletion):
for watches of objects whose status another controller writes often."""
labels_changed: Predicate = _changed(lambda o: dict(labels_of(o)))
annotations_changed: Predicate = _changed(lambda o: dict(annotations_of(o)))


def label_selector(selector: str) -> Predicate:
    """Events for objects matching the selector (parsed now: a bad selector fails here).
    An update passes when the old OR the new object matches, so a controller hears about
    an object whose labels stopped matching (controller-runtime's LabelSelectorPredicate
    misses exactly that removal)."""
    parsed = LabelSelector.parse(selector)

    def predicate(event: ObjectEvent) -> bool:
        if parsed.matches(labels_of(event.obj)):
            return True
        old = event.old if event.type is EventType.MODIFIED else None
        return old is not None and parsed.matches(labels_of(old))

    return predicate


def in_namespace(*namespaces: str) -> Predicate:
    wanted = frozenset(namespaces)
    return lambda event: namespace_of(event.obj) in wanted


def event_types(*types: EventType) -> Predicate:
    wanted = frozenset(types)
    return lambda event: event.type in wanted


def all_of(*predicates: Predicate) -> Predicate:
    return lambda event: all(p(event) for p in predicates)


def any_of(*predicates: Predicate) -> Predicate:
    return lambda event: any(p(event) for p in predicates)


def negate(predicate: Predicate) -> Predicate:
    return lambda event: not predicate(event)
