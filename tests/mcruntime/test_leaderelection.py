from __future__ import annotations

from datetime import datetime
from typing import Any

import anyio
import pytest

from kubeplane import EmbeddedAPIServer
from mcruntime import LeaderElectionConfig, LeaderElectionLost, LeaderElector, Manager, Request, Result
from mcruntime.resources import LEASES
from tests.support import Plane, cluster_for, config_for, eventually

LEASE, RENEW, RETRY = 1.0, 0.6, 0.15


def lease_history(server: EmbeddedAPIServer) -> list[dict[str, Any]]:
    """Every recorded state of the election's Lease, oldest first (the server's own history)."""
    rt = server.plane.registry.get("coordination.k8s.io", "v1", "leases")
    assert rt is not None
    events = server.plane.api.store_for(rt).log.events
    return [ev.entry.obj.get("spec", {}) for ev in events if ev.entry.obj["metadata"]["name"] == "manager-lock"]


def stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def election(identity: str, *, release: bool = True) -> LeaderElectionConfig:
    return LeaderElectionConfig(
        namespace="default",
        name="manager-lock",
        identity=identity,
        lease_duration=LEASE,
        renew_deadline=RENEW,
        retry_period=RETRY,
        release_on_cancel=release,
    )


class Candidate:
    def __init__(self, server: EmbeddedAPIServer, identity: str, *, release: bool = True) -> None:
        self.identity = identity
        self.manager = Manager(config_for(server), leader_election=election(identity, release=release))
        self.reconciles = 0
        self.controller = self.manager.new_controller(f"ctrl-{identity}", self.reconcile)
        self.outcome: BaseException | None = None
        self.scope: anyio.CancelScope | None = None

    async def reconcile(self, req: Request) -> Result:
        self.reconciles += 1
        return Result()

    async def run(self) -> None:
        with anyio.CancelScope() as scope:
            self.scope = scope
            try:
                await self.manager.run()
            except LeaderElectionLost as exc:
                self.outcome = exc

    @property
    def leading(self) -> bool:
        return self.manager.elector is not None and self.manager.elector.is_leader


async def test_one_leads_and_a_killed_leader_is_replaced_within_lease_plus_retry(apiserver: EmbeddedAPIServer) -> None:
    a, b = Candidate(apiserver, "a", release=False), Candidate(apiserver, "b", release=False)
    async with anyio.create_task_group() as tg:
        tg.start_soon(a.run)
        tg.start_soon(b.run)
        await eventually(lambda: a.leading or b.leading, what="a leader")
        await anyio.sleep(LEASE * 1.5)  # several renewals: the other must stay a follower
        leader, follower = (a, b) if a.leading else (b, a)
        assert not follower.leading and not follower.manager.elected.is_set()
        assert leader.controller._tg is not None and follower.controller._tg is None, (
            "only the leader's controllers run"
        )
        assert leader.scope is not None
        leader.scope.cancel()  # killed: no graceful release
        await eventually(lambda: follower.leading, within=LEASE + RETRY + 2.0, what="hand-over")
        # safety, from the Lease's recorded times: the follower took over only once the
        # killed leader's last renewal had expired
        history = lease_history(apiserver)
        last_renewal = max(stamp(h["renewTime"]) for h in history if h.get("holderIdentity") == leader.identity)
        acquired = min(stamp(h["acquireTime"]) for h in history if h.get("holderIdentity") == follower.identity)
        assert acquired >= last_renewal + LEASE, (acquired, last_renewal)
        lease = Plane(apiserver).get("leases", "default", "manager-lock", group="coordination.k8s.io")
        assert lease["spec"]["holderIdentity"] == follower.identity
        assert lease["spec"]["leaseTransitions"] == 1
        follower.manager.stop()


async def test_a_leader_that_cannot_renew_stops_its_controllers(apiserver: EmbeddedAPIServer) -> None:
    a = Candidate(apiserver, "a")
    async with anyio.create_task_group() as tg:
        tg.start_soon(a.run)
        await eventually(lambda: a.leading and a.controller._tg is not None, what="a to lead")
        apiserver.plane.faults.configure(error_rate=1.0, error_code=500, path_contains="leases")
        await eventually(lambda: a.outcome is not None, within=RENEW + 3, what="a to give up")
    assert isinstance(a.outcome, LeaderElectionLost)
    assert a.controller._stopped.is_set(), "controllers stop when the lease cannot be renewed"
    assert not a.manager.running


async def test_graceful_shutdown_releases_the_lease_for_a_fast_hand_over(apiserver: EmbeddedAPIServer) -> None:
    a, b = Candidate(apiserver, "a"), Candidate(apiserver, "b")
    async with anyio.create_task_group() as tg:
        tg.start_soon(a.run)
        await eventually(lambda: a.leading, what="a to lead")
        tg.start_soon(b.run)
        await anyio.sleep(RETRY * 2)
        a.manager.stop()
        await eventually(lambda: b.leading, what="b to take over")
        history = lease_history(apiserver)
        assert any(h.get("holderIdentity") == "" for h in history), "a released the lease on shutdown"
        last_renewal = max(stamp(h["renewTime"]) for h in history if h.get("holderIdentity") == "a")
        acquired = min(stamp(h["acquireTime"]) for h in history if h.get("holderIdentity") == "b")
        assert acquired < last_renewal + LEASE, "a released lease is taken without waiting it out"
        b.manager.stop()


async def test_only_one_of_two_simultaneous_candidates_acquires(apiserver: EmbeddedAPIServer) -> None:
    results: dict[str, bool] = {}
    ca, cb = cluster_for(apiserver, "a"), cluster_for(apiserver, "b")
    async with ca.started(), cb.started():
        ea = LeaderElector(ca.client, election("a"))
        eb = LeaderElector(cb.client, election("b"))

        async def attempt(name: str, elector: LeaderElector) -> None:
            results[name] = await elector.try_acquire_or_renew()

        async with anyio.create_task_group() as tg:
            tg.start_soon(attempt, "a", ea)
            tg.start_soon(attempt, "b", eb)
        assert sorted(results.values()) == [False, True]
        lease = await ca.client.get_live(LEASES, "manager-lock", namespace="default")
        winner = "a" if results["a"] else "b"
        assert lease["spec"]["holderIdentity"] == winner


def test_inconsistent_timings_are_refused() -> None:
    with pytest.raises(ValueError, match="lease_duration > renew_deadline > retry_period"):
        LeaderElectionConfig(namespace="d", name="n", identity="i", lease_duration=5, renew_deadline=10)


async def test_the_holder_renews_with_one_update_and_reads_the_lease_only_after_a_conflict(
    apiserver: EmbeddedAPIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """client-go's fast path for the leader: a renewal is one update onto the Lease as the
    holder last saw it, no read first. When someone else wrote the Lease since (a conflict),
    the holder reads it and decides as a candidate: still its own, renewed; held by another
    and not expired, not renewed."""
    cluster = cluster_for(apiserver, "a")
    async with cluster.started():
        client, calls = cluster.client, []
        get_live, update = client.get_live, client.update

        async def counted_get(*args: Any, **kwargs: Any) -> Any:
            calls.append("get")
            return await get_live(*args, **kwargs)

        async def counted_update(*args: Any, **kwargs: Any) -> Any:
            calls.append("update")
            return await update(*args, **kwargs)

        monkeypatch.setattr(client, "get_live", counted_get)
        monkeypatch.setattr(client, "update", counted_update)
        elector = LeaderElector(client, election("a"))
        assert await elector.try_acquire_or_renew()  # acquired: read (not found), created
        calls.clear()
        for _ in range(3):
            assert await elector.try_acquire_or_renew()
        assert calls == ["update"] * 3, "each renewal is one write"
        plane = Plane(apiserver)
        lease = plane.get("leases", "default", "manager-lock", group="coordination.k8s.io")
        assert lease["spec"]["holderIdentity"] == "a" and lease["spec"]["leaseTransitions"] == 0

        # a label written by someone else: the renewal conflicts, reads, and renews
        lease["metadata"].setdefault("labels", {})["team"] = "platform"
        plane.update("leases", lease, group="coordination.k8s.io")
        calls.clear()
        assert await elector.try_acquire_or_renew()
        assert calls == ["update", "get", "update"]
        lease = plane.get("leases", "default", "manager-lock", group="coordination.k8s.io")
        assert lease["metadata"]["labels"]["team"] == "platform" and lease["spec"]["holderIdentity"] == "a"

        # another candidate holds it now (as after a's lease lapsed): not renewed over it
        lease["spec"].update(holderIdentity="b", leaseTransitions=1)
        plane.update("leases", lease, group="coordination.k8s.io")
        calls.clear()
        assert not await elector.try_acquire_or_renew()
        assert calls == ["update", "get"]
        lease = plane.get("leases", "default", "manager-lock", group="coordination.k8s.io")
        assert lease["spec"]["holderIdentity"] == "b"
        calls.clear()
        assert not await elector.try_acquire_or_renew()
        assert calls == ["get"], "no longer the holder: a candidate reads before it writes"
