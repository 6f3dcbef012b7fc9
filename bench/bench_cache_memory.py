"""Benchmark: memory per cached object, at 10k and 100k objects of ~2 KB JSON each.

Each measurement runs in a fresh interpreter and reports the growth of its resident set
(RSS) divided by the number of objects:

- `dict`: the plain-dict baseline, every object parsed into Python dicts and kept;
- `store`: the runtime's Store (compact JSON bytes, decoded on read) with the namespace
  index and one label index, filled the way the informer fills it;
- `informer`: a real Informer listing the objects from an embedded API server running
  in another process (so only the client's memory is counted), pages, buffers and all.

Target: under 4 KiB of RSS per cached object at 100k objects.

Run: .venv/bin/python bench/bench_cache_memory.py [--sizes 10000,100000] [--smoke]"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

TARGET_BYTES = 4096


def rss() -> int:
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def wire_object(i: int) -> bytes:
    """One object as the server sends it: the benchmark's workload-shaped object plus
    server-set metadata and managedFields (which the cache strips)."""
    import orjson
    from bench_informer import make_object

    obj = make_object(i, 0)
    meta = obj["metadata"]
    meta.update(
        uid=f"{i:08x}-0000-4000-8000-{i:012x}",
        resourceVersion=str(1000 + i),
        generation=1,
        creationTimestamp="2025-01-01T00:00:00Z",
    )
    meta["managedFields"] = [
        {
            "manager": "bench",
            "operation": "Update",
            "apiVersion": "bench.example.com/v1",
            "time": "2025-01-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:containers": {}, "f:replicas": {}, "f:nodeName": {}}},
        }
    ]
    return orjson.dumps(obj)


def child(variant: str, count: int) -> dict[str, Any]:
    import orjson

    from mcruntime import Store, indexers
    from mcruntime.objects import key_of, strip_for_cache

    wire_object(0)
    keep: Any = None
    json_bytes = 0
    before = rss()
    started = time.perf_counter()
    if variant == "dict":
        cache: dict[str, Any] = {}
        for i in range(count):
            obj = strip_for_cache(orjson.loads(wire_object(i)))
            json_bytes += len(orjson.dumps(obj))
            cache[key_of(obj)] = obj
        keep = cache
    elif variant == "store":
        store = Store({"label:tier": indexers.label_value("tier")})
        for i in range(count):
            obj = strip_for_cache(orjson.loads(wire_object(i)))
            raw = orjson.dumps(obj)
            json_bytes += len(raw)
            store.put(key_of(obj), obj, raw)
        keep = store
        assert len(store.by_index("label:tier", "3")) > 0
    elif variant == "informer":
        keep, json_bytes, before = informer_fill(count)
    else:
        raise SystemExit(f"unknown variant {variant}")
    elapsed = time.perf_counter() - started
    after = rss()
    del keep
    return {
        "variant": variant,
        "count": count,
        "rss_per_object": (after - before) / count,
        "json_per_object": json_bytes / count,
        "seconds": elapsed,
    }


def informer_fill(count: int) -> tuple[Any, int, int]:
    import anyio
    from bench_informer import BENCH_OBJECTS, ServerProcess

    from mcruntime import ConnectionConfig, Informer, Transport

    server = ServerProcess(count, history=1000)
    result: dict[str, Any] = {}

    async def main() -> None:
        async with Transport(ConnectionConfig.insecure(server.url), cluster="bench") as transport:
            informer = Informer(transport, BENCH_OBJECTS, cluster="bench")
            informer.add_indexer("label:tier", __import__("mcruntime").indexers.label_value("tier"))
            result["before"] = rss()
            async with anyio.create_task_group() as tg:
                await tg.start(informer.run)
                await informer.wait_for_sync()
                assert len(informer.store) == count
                result["json"] = sum(len(informer.store.get_raw(k) or b"") for k in informer.store)
                result["after"] = rss()
                tg.cancel_scope.cancel()
            result["store"] = informer.store

    try:
        anyio.run(main)
    finally:
        server.close()
    return result["store"], result["json"], result["before"]


def run_child(variant: str, count: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", variant, str(count)],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(ROOT),
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--variants", default="dict,store,informer")
    parser.add_argument("--smoke", action="store_true", help="a quick run that only checks the benchmark works")
    parser.add_argument("--child", nargs=2, metavar=("VARIANT", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]))))
        return
    sizes = [500] if args.smoke else [int(s) for s in args.sizes.split(",")]
    variants = args.variants.split(",")
    print("cache memory benchmark: RSS growth per cached object (fresh interpreter per row)")
    print(
        f"  {'objects':>8}  {'variant':<9} {'JSON B/obj':>10} {'RSS B/obj':>10} {'x JSON':>7} {'vs dict':>8}  seconds"
    )
    for size in sizes:
        rows = {v: run_child(v, size) for v in variants}
        base = rows.get("dict", {}).get("rss_per_object")
        for v, row in rows.items():
            ratio = row["rss_per_object"] / row["json_per_object"]
            vs = f"{row['rss_per_object'] / base:7.2f}x" if base else "       -"
            print(
                f"  {size:>8}  {v:<9} {row['json_per_object']:>10.0f} {row['rss_per_object']:>10.0f} "
                f"{ratio:>6.2f}x {vs}  {row['seconds']:.1f}"
            )
        for v in ("store", "informer"):
            if v in rows and size >= 100_000:
                ok = rows[v]["rss_per_object"] < TARGET_BYTES
                print(f"  target < {TARGET_BYTES} B/object at {size} ({v}): {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
