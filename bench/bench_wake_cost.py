"""Benchmark: what one wake-up of an idle event loop costs on this machine, beside the work it
does. It explains why a replica that handles its events one at a time (a shard at a third of
the load, a paced workload) spends more CPU per event than one that handles them in batches
(bench_sharding's wake-ups against CPU-seconds; DESIGN.md §5).

An event loop (uvloop, as `run`) is woken by a socket, as a manager by a watch line or an
answer. Per message it does a unit of a manager's work: decode a WorkloadDeployment's watch
event, read a few fields, encode a small patch (`--units` of those per message). A sender
thread sends the messages back to back (the loop reads several per wake, as a busy replica
does) or one after each gap of 0.1, 1 and 10 ms (the loop sleeps between them, as a lightly
loaded one does). The figure is the loop thread's own CPU time per message: the same work in
every case, so what grows with the gap is what a wake-up costs here (the kernel's and, in a
virtual machine, the hypervisor's share of waking an idle CPU, and caches gone cold).

Run: python bench/bench_wake_cost.py [--messages N] [--units K ...] [--smoke]"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import threading
import time
from typing import Any

import orjson
import uvloop
from harness import median, report, workload_deployment

GAPS_MS = (0.0, 0.1, 1.0, 10.0)
QUIT = b"q"


def watch_line() -> bytes:
    wd = workload_deployment("api", "DFW", 2)
    managed = {"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1",
               "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {}}}}  # fmt: skip
    wd["metadata"].update({"uid": "6f1c2a9e-0000-4000-8000-000000000001", "resourceVersion": "12345",
                           "generation": 3, "labels": {"app": "api", "tier": "web"},
                           "managedFields": [managed]})  # fmt: skip
    return orjson.dumps({"type": "MODIFIED", "object": wd})


def unit_of_work(line: bytes) -> bytes:
    """What a manager does with one watch event, roughly: decode it, read fields, write a patch."""
    event: dict[str, Any] = orjson.loads(line)
    obj = event["object"]
    meta = obj["metadata"]
    patch = {"metadata": {"labels": {**meta.get("labels", {}), "seen": meta["resourceVersion"]}},
             "spec": {"replicas": obj["spec"].get("replicas", 1)}}  # fmt: skip
    return orjson.dumps(patch)


class Receiver(asyncio.Protocol):
    def __init__(self, units: int, line: bytes, done: asyncio.Future[None]) -> None:
        self.units, self.line, self.done = units, line, done
        self.messages = 0
        self.wakes = 0

    def data_received(self, data: bytes) -> None:
        self.wakes += 1
        for byte in data:
            if byte == QUIT[0]:
                self.done.set_result(None)
                return
            for _ in range(self.units):
                unit_of_work(self.line)
            self.messages += 1


def send(sock: socket.socket, messages: int, gap_s: float) -> None:
    for _ in range(messages):
        sock.send(b"m")
        if gap_s:
            time.sleep(gap_s)
    sock.send(QUIT)


async def one_run(units: int, gap_ms: float, messages: int, line: bytes) -> tuple[float, float]:
    """(CPU microseconds of the loop's thread per message, messages per wake-up)."""
    ours, theirs = socket.socketpair()
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    receiver = Receiver(units, line, done)
    transport, _ = await loop.connect_accepted_socket(lambda: receiver, ours)
    sender = threading.Thread(target=send, args=(theirs, messages, gap_ms / 1000))
    started = time.thread_time()
    sender.start()
    try:
        await asyncio.wait_for(done, timeout=60 + messages * gap_ms / 1000 * 3)
    finally:
        spent = time.thread_time() - started
        sender.join(timeout=10)
        transport.close()
        theirs.close()
    return spent / receiver.messages * 1e6, receiver.messages / max(receiver.wakes, 1)


async def main(args: argparse.Namespace) -> None:
    rep = report("bench_wake_cost", {"messages": args.messages, "units": args.units, "rounds": args.rounds,
                                     "gaps_ms": list(GAPS_MS)})  # fmt: skip
    line = watch_line()
    for units in args.units:
        per_gap: dict[float, list[float]] = {gap: [] for gap in GAPS_MS}
        batch: dict[float, list[float]] = {gap: [] for gap in GAPS_MS}
        for _ in range(args.rounds):  # gaps interleaved, so drift hits each alike
            for gap in GAPS_MS:
                cpu_us, per_wake = await one_run(units, gap, args.messages, line)
                per_gap[gap].append(cpu_us)
                batch[gap].append(per_wake)
        base = median(per_gap[0.0])
        for gap in GAPS_MS:
            cpu_us = median(per_gap[gap])
            label = "back to back" if gap == 0 else f"{gap:g} ms apart"
            ratio = f"; {cpu_us / base:.2f}x of back to back" if gap else ""
            rep.add(f"{units} unit(s) a message, {label}: CPU per message", cpu_us, "us",
                    note=f"{median(batch[gap]):.1f} messages per wake-up{ratio}")  # fmt: skip
        rep.add(f"{units} unit(s) a message: a wake-up's own CPU", median(per_gap[10.0]) - base, "us",
                note="10 ms apart less back to back: what a wake-up costs beyond its work")  # fmt: skip
    rep.write()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=300, help="messages per run")
    parser.add_argument("--units", type=int, nargs="+", default=[1, 10], help="units of work per message")
    parser.add_argument("--rounds", type=int, default=3, help="runs per (units, gap), medians reported")
    parser.add_argument("--smoke", action="store_true", help="30 messages, one round")
    args = parser.parse_args(argv)
    if args.smoke:
        args.messages, args.rounds = 30, 1
    if args.messages < 1 or args.rounds < 1 or any(u < 1 for u in args.units):
        parser.error("--messages, --rounds and --units must be at least 1")
    return args


if __name__ == "__main__":
    uvloop.run(main(parse(sys.argv[1:])))
