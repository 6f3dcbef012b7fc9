"""A consistent-hash ring over shard names: each shard puts virtual tokens on a 64-bit
circle (xxhash64 of `<shard>/<i>`, i = 0, 1, ...: `tokens` each, or its own count from
`tokens_of`); a key belongs to the first token at or after its own hash, wrapping around.
Adding or removing a shard moves only the keys between its tokens and their predecessors
(about 1/N of them); changing one shard's count adds or removes only its last tokens, so
only keys to or from that shard move. Every replica computes the same ring from the same
names and counts."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping

import xxhash

TOKENS_PER_SHARD = 100


def hash_key(key: str) -> int:
    return xxhash.xxh64_intdigest(key.encode())


class HashRing:
    def __init__(
        self, shards: Iterable[str], tokens: int = TOKENS_PER_SHARD, *, tokens_of: Mapping[str, int] | None = None
    ) -> None:
        """`tokens` per shard, or `tokens_of[shard]` where it names the shard (0: the shard
        owns nothing and is not on the ring)."""
        if tokens < 1:
            raise ValueError(f"a hash ring needs at least one token per shard, got {tokens}")
        counts = {s: (tokens_of or {}).get(s, tokens) for s in shards if s}
        if any(n < 0 for n in counts.values()):
            raise ValueError(f"a shard's token count cannot be negative: {counts}")
        self.shards = frozenset(s for s, n in counts.items() if n > 0)
        # sorted by (hash, shard) so a hash collision between two shards' tokens resolves
        # the same way on every replica
        points = sorted((hash_key(f"{shard}/{i}"), shard) for shard in self.shards for i in range(counts[shard]))
        self._hashes = [h for h, _ in points]
        self._owners = [s for _, s in points]

    def __len__(self) -> int:
        return len(self.shards)

    def owner(self, key: str) -> str | None:
        """The shard `key` belongs to; None on an empty ring."""
        if not self._hashes:
            return None
        i = bisect.bisect_left(self._hashes, hash_key(key))
        return self._owners[i % len(self._owners)]
