"""API-server faults while users change things: every watch dropped every few seconds,
watch history expired (resumes answered 410), 429/500/503 on 20% of requests for 30 s,
200 ms added latency, and each kind of API server (management, project, cell) paused for
10 s. Each scenario: the faults run while the user applies, scales and rolls; then the
federation converges with zero invariant violations and the managers go quiet."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from .harness import CHAOS, Chaos, chaos_fleet, wd

pytestmark = CHAOS

WEB = [wd("api", "DFW", 3), wd("front", "LHR", 2)]
SHOP = [wd("store", "DFW", 2), wd("cart", "LHR", 1)]


async def user_changes(chaos: Chaos, spread: float) -> None:
    """What users do meanwhile, spread over `spread` seconds: apply, scale, roll, add."""
    step = spread / 3
    await chaos.apply("web", WEB)
    await chaos.apply("shop", SHOP)
    await anyio.sleep(step)
    await chaos.kubectl("web", "scale", "wd", "api", "--replicas=4")
    await anyio.sleep(step)
    await chaos.roll("web", "front", at="2026-11-25T00:00:00Z")
    await chaos.apply("shop", [wd("late", "DFW", 1)])
    await anyio.sleep(step)


async def under(chaos: Chaos, faults: Callable[[], Awaitable[None]], spread: float, scenario: str, what: str) -> None:
    """Run the faults and the user's changes together, then the common tail: converge
    (timed from the end of the faults), zero violations, an idle window, the report row."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(faults)
        await user_changes(chaos, spread)
    took, report = await chaos.converge()
    await chaos.finish(scenario, what, took, report)


async def test_every_watch_dropped_every_few_seconds(tmp_path: Path) -> None:
    async with chaos_fleet(tmp_path) as chaos:

        async def drops() -> None:
            for _ in range(10):
                await chaos.drop_watches()
                await anyio.sleep(2)

        await under(chaos, drops, 20, "watches dropped", "every watch on every server dropped every 2 s for 20 s")


async def test_watch_history_expired(tmp_path: Path) -> None:
    async with chaos_fleet(tmp_path) as chaos:

        async def expiries() -> None:
            for _ in range(5):
                await chaos.expire_history()
                await chaos.drop_watches()  # the resumes then find their version compacted: 410
                await anyio.sleep(4)

        await under(
            chaos, expiries, 20, "history expired (410)", "history compacted and watches dropped every 4 s for 20 s"
        )


async def test_errors_on_a_fifth_of_requests(tmp_path: Path) -> None:
    async with chaos_fleet(tmp_path) as chaos:

        async def errors() -> None:
            for code in (429, 500, 503):
                await chaos.faults(chaos.clusters, error_rate=0.2, error_code=code)
                await anyio.sleep(10)
            await chaos.clear_faults()

        await under(chaos, errors, 24, "429/500/503 on 20%",
                    "20% of requests on every server: 429, then 500, then 503, 10 s each")  # fmt: skip


async def test_added_latency(tmp_path: Path) -> None:
    async with chaos_fleet(tmp_path) as chaos:
        await chaos.faults(chaos.clusters, latency_seconds=0.2)
        await user_changes(chaos, 6)
        took, _ = await chaos.converge(within=180)  # converged with the latency still on
        await chaos.clear_faults()
        _, report = await chaos.converge(within=30)
        await chaos.finish("200 ms latency", "200 ms added to every request on every server", took, report)


async def test_each_kind_of_server_paused(tmp_path: Path) -> None:
    """Management, a project and a cell each refuse connections for 10 s, one after the
    other, while the user keeps changing things in the servers that are up."""
    async with chaos_fleet(tmp_path) as chaos:
        await chaos.apply("web", WEB)
        await chaos.apply("shop", SHOP)
        await chaos.converge()
        # management away: registrations unreadable; the user scales in a project meanwhile
        await chaos.pause("management", 10)
        await chaos.kubectl("web", "scale", "wd", "api", "--replicas=4")
        await anyio.sleep(10)
        # a project away: its WDs' cells keep working; a user deletes an Instance in a cell
        await chaos.pause("web", 10)
        insts = await chaos.get_json("dfw-1", "instances", "-A")
        victim = insts["items"][0]["metadata"]
        await chaos.kubectl("dfw-1", "delete", "instance", victim["name"], "-n", victim["namespace"], "--wait=false")
        await anyio.sleep(10)
        # a cell away: the user rolls a WD that lives there and adds one
        await chaos.pause("dfw-2", 10)
        await chaos.roll("web", "api", at="2026-11-25T01:00:00Z")
        await chaos.apply("shop", [wd("late", "DFW", 1)])
        await anyio.sleep(10)
        took, report = await chaos.converge()
        await chaos.finish("servers paused", "management, project web and cell dfw-2 paused 10 s each, in turn",
                           took, report)  # fmt: skip
