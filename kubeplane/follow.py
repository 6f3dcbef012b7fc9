"""How the embedded control plane's own controllers observe changes: a cursor over one
resource's event history that yields the keys that changed, level-triggered (the
controller re-reads the current object; a burst of changes to one key is one wake-up).
If the history it needs was compacted it re-lists, like an informer after 410."""

from __future__ import annotations

from collections.abc import AsyncIterator

from .store import Database, ResourceStore, Waker

Key = tuple[str, str]


class Follower:
    def __init__(self, db: Database, key: tuple[str, str], namespaced: bool) -> None:
        self.db = db
        self.store: ResourceStore = db.store(key, namespaced)
        self.waker = Waker()
        self.cursor = 0

    async def changes(self) -> AsyncIterator[list[Key]]:
        """Batches of changed keys; the first batch is every existing object."""
        self.store.subscribe(self.waker)
        try:
            self.cursor = self.db.rev
            existing = self.store.sorted_keys()
            if existing:
                yield list(existing)
            while not self.waker.closed:
                self.waker.wake.clear()
                events = self.store.log.since(self.cursor)
                if events is None:
                    self.cursor = self.db.rev
                    yield list(self.store.sorted_keys())
                    continue
                if events:
                    self.cursor = events[-1].rev
                    keys: dict[Key, None] = {}
                    for ev in events:
                        meta = ev.entry.obj["metadata"]
                        keys[(meta.get("namespace") or "", meta["name"])] = None
                    yield list(keys)
                    continue
                await self.waker.wake.wait()
        finally:
            self.store.unsubscribe(self.waker)

    def close(self) -> None:
        self.waker.close()
