"""A controller's own last write to an object, until its cache shows it.

A write's answer comes back before the write's own watch event reaches the cache, so a
reconcile that runs in between (another event, another worker) still sees the state the
write was made over and would make the same write again. `OwnWrites` keeps the server's
answer per key while the cache still shows that earlier state (uid and resourceVersion);
the moment the cache holds any other state (the write's own event, or a newer one, or the
object gone), the cache is the truth and the answer is dropped. No I/O, no timers: bounded
by the writes whose events have not arrived yet.

A state the cache shows that is older than the answer (an event of another writer's change
made before the write landed: a status written over the version before a finalizer's, whose
event arrives after the write's answer) does not drop it either: the answer already holds
that change. Older is told by the resourceVersion, which kube-apiserver makes comparable as
an increasing integer per resource (KEP-5504, part of conformance since 1.35); versions that
are not decimal integers are compared for equality only, as before.

The write's own watch event changes nothing the controller computed from (the answer *is*
that state): `EnqueueUnlessOwnWrite` hands every other event of the object to the
controller, so a status write does not cost a second reconcile that finds nothing to do
(and that a change arriving meanwhile would wait behind)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from mcruntime.fields import get_str
from mcruntime.handlers import EnqueueRequestForObject, EventHandler, RequestSink
from mcruntime.informer import EventType, ObjectEvent
from mcruntime.objects import Obj, split_key
from mcruntime.request import Request

K = TypeVar("K", bound=Hashable)
Version = tuple[str, str]


def version_of(obj: Obj | None) -> Version | None:
    """What tells one state of an object from another: its uid and resourceVersion."""
    if obj is None:
        return None
    return get_str(obj, "metadata.uid", required=False), get_str(obj, "metadata.resourceVersion", required=False)


def precedes(version: Version | None, later: Version | None) -> bool:
    """Whether `version` is an earlier state of the same object (same uid) than `later`:
    both resourceVersions decimal integers (KEP-5504's comparison), the first the smaller."""
    if version is None or later is None or version[0] != later[0]:
        return False
    (_, rv), (_, later_rv) = version, later
    comparable = all(v.isdigit() and v.isascii() and not v.startswith("0") for v in (rv, later_rv))
    return comparable and int(rv) < int(later_rv)


MAX_CHAIN = 8  # own writes in a row whose events have not arrived yet, per key


@dataclass(frozen=True, slots=True)
class _Answer:
    before: Version | None  # the state the cache showed when the first write of the chain was made
    answer: Obj  # the server's answer to the last write
    earlier: tuple[Version | None, ...] = ()  # the answers to the chain's earlier writes


class OwnWrites(Generic[K]):
    """Per key, the answer to the controller's last write while the cache shows the state it
    was made over, or an earlier own write of the same chain: a write made over the answer
    to the previous one (two writes before either event arrived) extends that chain, so the
    first write's event (already outdated by the second) neither drops the second answer
    nor wakes the controller."""

    def __init__(self) -> None:
        self._answers: dict[K, _Answer] = {}

    def remember(self, key: K, before: Obj | None, answer: Obj) -> None:
        """The server's `answer` to a write made while the cache showed `before` (or made
        over the answer to this key's previous write, `latest`)."""
        prior, version = self._answers.get(key), version_of(before)
        if prior is not None and version == version_of(prior.answer):
            self._answers[key] = _Answer(prior.before, answer, (*prior.earlier, version)[-MAX_CHAIN:])
        else:
            self._answers[key] = _Answer(version, answer)

    def latest(self, key: K, cached: Obj | None) -> Obj | None:
        """The object as last known: the remembered answer while the cache still shows the
        state the writes were made over, an earlier one of them, or any state older than
        the answer, else the cache (and the answer is dropped)."""
        remembered = self._answers.get(key)
        if remembered is None:
            return cached
        version = version_of(cached)
        if version == remembered.before or version in remembered.earlier:
            return remembered.answer
        if precedes(version, version_of(remembered.answer)):
            return remembered.answer
        del self._answers[key]
        return cached

    def observed(self, key: K, cached: Obj) -> bool:
        """The cache now shows `cached`: whether it is one of this controller's own answers
        (a write's own watch event). The last answer's event drops it; so does any state
        but the one the writes were made over, as in `latest`. A state older than the
        answer is not this controller's (it is handed on: it may change what the write was
        computed from) and keeps the answer, which already holds it."""
        remembered = self._answers.get(key)
        if remembered is None:
            return False
        version = version_of(cached)
        if version == remembered.before:
            return False
        if version in remembered.earlier:
            return True  # an earlier write of the chain: the last answer still stands
        if precedes(version, version_of(remembered.answer)):
            return False
        del self._answers[key]
        return version == version_of(remembered.answer)

    def forget(self, key: K) -> None:
        self._answers.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._answers

    def __len__(self) -> int:
        return len(self._answers)


def request_key(source_cluster: str, event: ObjectEvent) -> Request:
    """An event's object as a request: the cluster it came from, its namespace and name."""
    namespace, name = split_key(event.key)
    return Request(source_cluster, namespace, name)


class UnlessOwnWrite(EventHandler, Generic[K]):
    """`inner` for every event of an object but its controller's own write coming back: an
    add or update that shows exactly the answer `writes` remembers under `key(cluster,
    event)` (a copy the controller created in another cluster, an object it changed) is
    dropped. Any other state (another writer's, a newer one) goes to `inner` as usual; a
    deletion forgets the answer and goes too. An object with no answer remembered is not
    decoded here (a cold start's adds)."""

    def __init__(
        self,
        writes: OwnWrites[K],
        inner: EventHandler,
        key: Callable[[str, ObjectEvent], K],
    ) -> None:
        self.writes = writes
        self.inner = inner
        self.key = key

    async def handle(self, source_cluster: str, event: ObjectEvent, sink: RequestSink) -> None:
        key = self.key(source_cluster, event)
        if event.type is EventType.DELETED:
            self.writes.forget(key)  # no event of that write will come
        elif key in self.writes and self.writes.observed(key, event.obj):
            return
        await self.inner.handle(source_cluster, event, sink)


class EnqueueUnlessOwnWrite(UnlessOwnWrite[Request]):
    """The object itself, in the cluster it came from (`EnqueueRequestForObject`), except
    its controller's own write coming back (`UnlessOwnWrite`, keyed by the request)."""

    def __init__(self, writes: OwnWrites[Request]) -> None:
        super().__init__(writes, EnqueueRequestForObject(), request_key)
