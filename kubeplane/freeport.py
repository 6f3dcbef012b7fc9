"""A TCP port on 127.0.0.1 that nothing listens on, for a process the tests or benchmarks
start with an explicit port (a manager's probe and metrics endpoints, a server's --port).

Asking the kernel for port 0 and closing the socket finds a port free *now*, but it finds it
in the range the kernel hands out for outgoing connections (net.ipv4.ip_local_port_range,
32768-60999 by default): on a machine busy with tests every connection takes one of those,
and the port is often taken again before the process it was meant for binds it ("address
already in use"). So the port is drawn from below that range, where only listeners that
chose their port live, and checked by binding it. A port is handed out once per process:
the processes one benchmark or test starts get their ports before any of them binds, so a
port drawn twice was bindable both times and went to two of them (a benchmark's management
manager lost its metrics port to a cell manager's probe that way)."""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOCAL_PORT_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10_000  # below: well-known and registered services' ports
_handed_out: set[int] = set()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = (int(n) for n in LOCAL_PORT_RANGE.read_text().split())
    except (OSError, ValueError):
        return 32_768, 60_999  # Linux's default
    return low, high


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    low, high = _ephemeral_range()
    candidates = range(LOWEST, low) if low - LOWEST >= 1_000 else range(high + 1, 65_536)
    for _ in range(200 if candidates else 0):  # none: the kernel's range spans both ends
        port = random.choice(candidates)
        if port not in _handed_out and _bindable(port):
            _handed_out.add(port)
            return port
    with socket.socket() as s:  # every draw taken: the kernel's choice, as before
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    _handed_out.add(port)
    return port
