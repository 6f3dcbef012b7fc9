"""Sharded management replicas (`run --enable-management-controllers --sharding`), three
shards in one process on embedded servers: assignment, balance, drain hand-over on join
and graceful leave, reassignment of a dead shard's WDs, exclusivity (every reconcile's
shard and time recorded: no WD reconciled by two shards at once), a shard whose Lease is
not fresh refusing to write, and zero sharder writes at steady state."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from federation.api.constants import Label
from federation.api.resources import INSTANCES, WORKLOAD_DEPLOYMENTS, WORKLOADS
from federation.fleet.fleetview import FLEET
from federation.fleet.references import SHARD_REFERENCED_BY_PREFIX, sharers
from federation.fleet.sharding import sharder_ring, wd_hash_key, workload_hash_key
from federation.settings import ManagerSettings
from mcruntime import Manager, Request, Result
from mcruntime.leaderelection import LeaderElectionLost
from mcruntime.reconciler import Reconciler
from mcruntime.resources import CONFIGMAPS, LEASES
from mcruntime.sharding import HashRing
from mcruntime.sharding.states import format_time
from tests.support import Fleet, Plane, eventually, fleet, management_settings, running
from tests.support.manager import controller

from ..projector.cellsim import GROUP, VERSION, settle
from .test_companions import REFERENCED_BY, cell_namespace, configmap, referencing
from .test_federator import WDs, workload_deployment
from .test_workload_controller import workload

pytestmark = pytest.mark.slow

LEASE_NAMESPACE = "default"
ACK = "drain-acknowledger"
RING = "federation-manager"
N_WDS = 24
# the product's default: the sharder's share of the ring (`--sharder-ring-weight`)
# (None: derived from the number of shards)
WEIGHT: float | None = ManagerSettings.model_fields["sharder_ring_weight"].default


@dataclass(frozen=True)
class Reconcile:
    shard: str
    controller: str
    request: Request
    started: float
    ended: float


class Recorder:
    """Wraps the sharded controllers' reconcilers on every shard; keeps every reconcile."""

    def __init__(self) -> None:
        self.reconciles: list[Reconcile] = []
        self.unrecorded: dict[tuple[str, str], Reconciler] = {}  # (shard, controller): its own reconciler

    def wrap(self, manager: Manager, shard: str, name: str) -> None:
        ctrl = controller(manager, name)
        inner, reconciles = ctrl.reconciler, self.reconciles
        self.unrecorded[(shard, name)] = inner

        class Recording:
            async def reconcile(self, request: Request) -> Result:
                started = time.monotonic()
                try:
                    result: Result = await inner.reconcile(request)
                finally:
                    reconciles.append(Reconcile(shard, name, request, started, time.monotonic()))
                return result

        ctrl.reconciler = Recording()  # type: ignore[assignment]

    def overlaps(self) -> list[tuple[Reconcile, Reconcile]]:
        """Pairs of reconciles of one WD by two shards whose times overlap."""
        by_wd: dict[Request, list[Reconcile]] = defaultdict(list)
        for r in self.reconciles:
            if r.controller != ACK:  # it hands the WD back (its patch is what lets the next shard in)
                by_wd[r.request].append(r)
        found = []
        for runs in by_wd.values():
            runs.sort(key=lambda r: r.started)
            for i, a in enumerate(runs):
                for b in runs[i + 1 :]:
                    if b.started >= a.ended:
                        break
                    if a.shard != b.shard:
                        found.append((a, b))
        return found

    def of(self, controller: str) -> list[Reconcile]:
        return [r for r in self.reconciles if r.controller == controller]

    def shards_of(self, request: Request) -> set[str]:
        return {r.shard for r in self.reconciles if r.request == request}


class Shards:
    """Shard replicas, each a manager as `run --sharding --shard-id NAME` builds it, each
    in a task of its own (so any one can stop, in any order)."""

    def __init__(self, tg: anyio.abc.TaskGroup, tmp: Path, recorder: Recorder) -> None:
        self.tg, self.tmp, self.recorder = tg, tmp, recorder
        self.stops: dict[str, anyio.Event] = {}
        self.stopped: dict[str, anyio.Event] = {}
        self.managers: dict[str, Manager] = {}
        self.lost: set[str] = set()

    async def start(self, shard: str) -> Manager:
        manager: Manager = await self.tg.start(self._run, shard)
        return manager

    async def _run(self, shard: str, *, task_status: anyio.abc.TaskStatus[Manager]) -> None:
        settings = management_settings(
            self.tmp / "management.kubeconfig",
            sharding=True,
            shard_id=shard,
            leader_election_namespace=LEASE_NAMESPACE,
            # the embedded servers answer renewals on this process's loaded event loop: a
            # renew deadline of 2 s was missed on a busy 2-core machine (both shards lost)
            leader_election_lease_duration=6.0,
            leader_election_renew_deadline=4.0,
            leader_election_retry_period=1.0,
        )
        self.stops[shard], self.stopped[shard] = anyio.Event(), anyio.Event()
        try:
            async with running(settings) as manager:
                for name in ("federator", "status-projector", "instance-projector", "workload-controller", ACK):
                    self.recorder.wrap(manager, shard, name)
                self.managers[shard] = manager
                task_status.started(manager)
                await self.stops[shard].wait()
        except* LeaderElectionLost:
            self.lost.add(shard)  # as `run` exits when its Lease is lost
        finally:
            self.managers.pop(shard, None)
            self.stopped[shard].set()

    def members_seen(self) -> set[str]:
        """The shard Leases the elected replica (the sharder) has cached."""
        for manager in self.managers.values():
            # elected, the sharder declares its views (the Leases') before it starts
            if manager.elector is not None and manager.elector.is_leader and manager.local.cache.view_of(LEASES):
                return {meta["metadata"]["name"] for meta in manager.local.cache.informer_of(LEASES).store.list()}
        return set()

    async def start_joined(self, *shards: str) -> None:
        """Start each shard, then wait until the sharder knows them all."""
        for shard in shards:
            await self.start(shard)
        await self.joined(*shards)

    async def joined(self, *shards: str) -> None:
        """Wait until the sharder knows every shard's Lease (so new WDs go straight to the ring's shard)."""
        await eventually(lambda: set(shards) <= self.members_seen(), f"{shards} in the sharder's view", within=20)

    async def idle(self) -> bool:
        """Every running controller idle: the sharded ones on each shard, all on the sharder."""
        for manager in self.managers.values():
            leading = manager.elector is not None and manager.elector.is_leader
            for ctrl in manager.controllers:
                if (ctrl.sharded or leading) and not await ctrl.wait_idle(within=30):
                    return False
        return True

    async def stop(self, shard: str) -> None:
        self.stops[shard].set()
        await self.stopped[shard].wait()

    async def stop_all(self) -> None:
        for shard in list(self.managers):
            await self.stop(shard)


def member_lease(mgmt: Plane, shard: str, *, duration: int) -> None:
    """A shard's membership Lease in the ring, as if it joined and renewed just now (the
    shard itself never runs: it stays alive for `duration` seconds, then turns dead)."""
    now = format_time(time.time())
    mgmt.create(
        "leases",
        {
            "metadata": {"name": shard, "namespace": LEASE_NAMESPACE, "labels": {str(Label.SHARD_RING): RING}},
            "spec": {"holderIdentity": shard, "leaseDurationSeconds": duration, "acquireTime": now, "renewTime": now},
        },
        group="coordination.k8s.io",
        version="v1",
    )


def labels(f: Fleet) -> dict[str, dict[str, str]]:
    return {wd["metadata"]["name"]: wd["metadata"].get("labels") or {} for wd in WDs(f, "web").list("default")}


def elected(f: Fleet) -> str:
    """The shard elected sharder now (the leader Lease's holder is `<shard>_<uuid>`)."""
    found = Plane(f.management).list("leases", LEASE_NAMESPACE, group="coordination.k8s.io", version="v1")
    holders = [(ls.get("spec") or {}).get("holderIdentity") or "" for ls in found if ls["metadata"]["name"] == RING]
    return holders[0].split("_")[0] if holders else ""


def ring(f: Fleet, shards: list[str]) -> HashRing:
    """The ring of the sharder elected now: its own share weighted (`sharder_ring`)."""
    return sharder_ring(shards, elected(f), WEIGHT)


def ring_owners(f: Fleet, shards: list[str]) -> dict[str, str]:
    ring_ = ring(f, shards)
    return {wd["metadata"]["name"]: ring_.owner(wd_hash_key("web", wd)) or "" for wd in WDs(f, "web").list("default")}


def assigned_as_the_ring_says(f: Fleet, shards: list[str]) -> bool:
    want = ring_owners(f, shards)
    got = {name: ls.get(Label.SHARD, "") for name, ls in labels(f).items()}
    drains = [name for name, ls in labels(f).items() if Label.DRAIN in ls]
    return len(got) == N_WDS and got == want and not drains


def assigned_as_the_ring_says_of(f: Fleet, shards: list[str], count: int) -> bool:
    want = ring_owners(f, shards)
    got = {name: ls.get(Label.SHARD, "") for name, ls in labels(f).items()}
    return len(got) == count and got == want and not [n for n, ls in labels(f).items() if Label.DRAIN in ls]


def copies_in_cell(f: Fleet) -> int:
    return len([wd for wd in WDs(f, "cell-dfw").list() if not wd["metadata"].get("deletionTimestamp")])


def copies(f: Fleet) -> dict[str, tuple[str, str]]:
    """Each cell copy's (uid, shard label), by name (one cell: names are the WDs')."""
    return {
        wd["metadata"]["name"]: (wd["metadata"]["uid"], (wd["metadata"].get("labels") or {}).get(Label.SHARD, ""))
        for wd in WDs(f, "cell-dfw").list()
    }


def copies_follow(f: Fleet, shards: list[str]) -> bool:
    """Every copy labelled for its WD's shard (the ring's owner)."""
    want = ring_owners(f, shards)
    return {name: shard for name, (_uid, shard) in copies(f).items()} == want


def share_problems(shards: Shards) -> list[str]:
    """What breaks "each shard caches only the project WDs and cell copies labelled for it,
    and only the elected replica (the sharder) has a FLEET view of the other project WDs
    (for the assignment, slim: a metadata-only watch); no replica has one of the cells' copies"."""
    problems = []
    for shard, manager in shards.managers.items():
        leading = manager.elector is not None and manager.elector.is_leader
        for cluster in ("web", "cell-dfw"):
            cache = manager.get_cluster(cluster).cache
            held = {(wd["metadata"].get("labels") or {}).get(Label.SHARD) for wd in cache.informer_of(
                WORKLOAD_DEPLOYMENTS).store.list()}  # fmt: skip
            if not held <= {shard}:
                problems.append(f"{shard} caches {cluster} WDs of {held}")
            if (cache.view_of(WORKLOAD_DEPLOYMENTS, FLEET) is not None) != (leading and cluster == "web"):
                problems.append(f"{shard} (leading: {leading}) has a FLEET view in {cluster} or lacks it")
            elif leading and cluster == "web":
                # the others' WDs past its narrowing, each held once (its own are in its shard's view)
                others = cache.informer_of(WORKLOAD_DEPLOYMENTS, FLEET).store.list()
                if {(wd["metadata"].get("labels") or {}).get(Label.SHARD) for wd in others} & {shard}:
                    problems.append(f"the sharder {shard} holds its own WDs twice")
                if len(others) + len(cache.informer_of(WORKLOAD_DEPLOYMENTS).store.list()) != N_WDS:
                    problems.append(f"the sharder {shard} does not cache every WD of {cluster}")
                if any("spec" in wd for wd in others):  # what the assignment reads, not the WDs in full
                    problems.append(f"the sharder {shard} caches the other shards' WDs in full")
                if not cache.informer_of(WORKLOAD_DEPLOYMENTS, FLEET).metadata_only:  # nor receives them
                    problems.append(f"the sharder {shard} lists and watches the other shards' WDs in full")
    return problems


def fleet_requests(f: Fleet, plural: str) -> tuple[str, ...]:
    """Which of LIST and WATCH of the project's resource the server answered as
    PartialObjectMetadata (the sharder's FLEET views ask for it; nothing else does)."""
    counters = f.server("web").plane.counters
    return tuple(verb for verb in ("list", "watch") if counters.get_as("metadata", verb, f"{plural}.{GROUP}"))


async def test_shards_share_the_wds_and_hand_them_over_without_double_work(tmp_path: Path) -> None:
    recorder = Recorder()
    async with fleet(tmp_path, projects=("acme/web",), cells=(("cell-dfw", "DFW"),)) as f, AsyncExitStack() as stack:
        tg = await stack.enter_async_context(anyio.create_task_group())
        shards = Shards(tg, tmp_path, recorder)
        try:
            await shards.start_joined("shard-a", "shard-b")
            for i in range(N_WDS):
                WDs(f, "web").create(workload_deployment(f"api-{i:02d}", "DFW", 1))

            # assignment: every WD labelled for the shard the ring names, and federated
            await eventually(lambda: assigned_as_the_ring_says(f, ["shard-a", "shard-b"]), "assigned", within=30)
            await eventually(lambda: copies_in_cell(f) == N_WDS, "every WD federated", within=30)
            owners = ring_owners(f, ["shard-a", "shard-b"])
            assert set(owners.values()) == {"shard-a", "shard-b"}  # balance: both shards own some
            # each WD was reconciled by its owner only; none drained yet, none acknowledged
            for name, owner in owners.items():
                assert recorder.shards_of(Request("web", "default", name)) <= {owner}, name
            assert recorder.of(ACK) == [], "the acknowledger reconciled WDs not drained"
            # the copies follow their WD's shard, and each shard caches its share only
            await eventually(lambda: copies_follow(f, ["shard-a", "shard-b"]), "copies labelled", within=30)
            await eventually(lambda: share_problems(shards) == [], "each shard caches its share", within=10)
            # the sharder's FLEET views reached the server as metadata-only LIST and WATCH
            assert fleet_requests(f, "workloaddeployments") == ("list", "watch")
            first = {name: uid for name, (uid, _shard) in copies(f).items()}

            # join: shard-c takes its share through drain and acknowledgement
            await shards.start("shard-c")
            await eventually(
                lambda: assigned_as_the_ring_says(f, ["shard-a", "shard-b", "shard-c"]), "rebalanced on join", within=30
            )
            moved = {n for n, s in ring_owners(f, ["shard-a", "shard-b", "shard-c"]).items() if s == "shard-c"}
            assert moved, "shard-c owns some WDs"
            assert {r.request.name for r in recorder.of(ACK)} == moved, "each drained WD acknowledged, no other"
            for name in moved:  # shard-c now reconciles what it took over (a status write, a requeue...)
                WDs(f, "web").edit("default", name, lambda wd: wd["metadata"].setdefault("annotations", {}).update(
                    {"example.com/touch": "1"}))  # fmt: skip
            await eventually(
                lambda: all("shard-c" in recorder.shards_of(Request("web", "default", n)) for n in moved),
                "shard-c reconciles its WDs",
                within=30,
            )
            # the hand-over relabels the copies in place: none was swept (deleted and made
            # again) though each moved WD left its old shard's cache as a DELETED event
            await eventually(lambda: copies_follow(f, ["shard-a", "shard-b", "shard-c"]), "copies relabelled", 30)
            assert {name: uid for name, (uid, _shard) in copies(f).items()} == first
            assert f.server("cell-dfw").plane.counters.get("delete", "workloaddeployments") == 0
            await eventually(lambda: share_problems(shards) == [], "each shard caches its share", within=10)
            # the old shard's orphan sweep for a WD gone from its cache (as a handed-over one
            # is): a live GET finds the WD, so its copy stays
            name = sorted(moved)[0]
            old = recorder.unrecorded[(owners[name], "federator")]
            await old.reconcile(Request("web", "default", name))
            assert copies(f)[name][0] == first[name]

            # graceful leave: shard-b releases its Lease (dead at once) and its WDs move directly
            await shards.stop("shard-b")
            await eventually(lambda: assigned_as_the_ring_says(f, ["shard-a", "shard-c"]), "rebalanced on leave", 30)
            await eventually(lambda: copies_follow(f, ["shard-a", "shard-c"]), "copies relabelled on leave", 30)
            assert {name: uid for name, (uid, _shard) in copies(f).items()} == first

            assert recorder.overlaps() == [], "a WD reconciled by two shards at once"
        finally:
            await shards.stop_all()


async def test_a_dead_shards_wds_are_reassigned(tmp_path: Path) -> None:
    """A shard that stops renewing (as after SIGKILL): expired, uncertain a quarter lease
    duration past expiry, then the sharder acquires its Lease (dead) and reassigns its WDs directly."""
    recorder = Recorder()
    async with fleet(tmp_path, projects=("acme/web",), cells=(("cell-dfw", "DFW"),)) as f, AsyncExitStack() as stack:
        tg = await stack.enter_async_context(anyio.create_task_group())
        shards = Shards(tg, tmp_path, recorder)
        mgmt = Plane(f.management)
        # a shard that joined and then stopped: its Lease was renewed once, just now
        member_lease(mgmt, "shard-gone", duration=2)
        try:
            await shards.start("shard-a")
            await shards.joined("shard-a", "shard-gone")
            for i in range(N_WDS):
                WDs(f, "web").create(workload_deployment(f"api-{i:02d}", "DFW", 1))
            # the silent shard is in the ring at first: some WDs are assigned to it
            await eventually(
                lambda: any(ls.get(Label.SHARD) == "shard-gone" for ls in labels(f).values()), "assigned", within=20
            )
            # then it turns dead and everything is shard-a's, without a drain
            await eventually(lambda: assigned_as_the_ring_says(f, ["shard-a"]), "reassigned from the dead", within=30)
            lease = mgmt.get("leases", LEASE_NAMESPACE, "shard-gone", group="coordination.k8s.io", version="v1")
            assert lease["spec"]["holderIdentity"] not in ("", "shard-gone")  # acquired by the sharder
            await eventually(lambda: copies_in_cell(f) == N_WDS, "every WD federated", within=30)
            assert recorder.overlaps() == []
        finally:
            await shards.stop_all()


async def test_zero_sharder_writes_at_steady_state_and_no_writes_without_a_fresh_lease(tmp_path: Path) -> None:
    recorder = Recorder()
    async with fleet(tmp_path, projects=("acme/web",), cells=(("cell-dfw", "DFW"),)) as f, AsyncExitStack() as stack:
        tg = await stack.enter_async_context(anyio.create_task_group())
        shards = Shards(tg, tmp_path, recorder)
        try:
            a = await shards.start("shard-a")
            await shards.start("shard-b")
            await shards.joined("shard-a", "shard-b")
            for i in range(N_WDS):
                WDs(f, "web").create(workload_deployment(f"api-{i:02d}", "DFW", 1))
            await eventually(lambda: assigned_as_the_ring_says(f, ["shard-a", "shard-b"]), "assigned", within=30)
            await eventually(lambda: copies_in_cell(f) == N_WDS, "every WD federated", within=30)
            # no cell operator runs here: each status is written once, AwaitingPropagation, after
            # --awaiting-propagation-after (a delayed requeue `idle` does not see)
            await eventually(
                lambda: all((wd.get("status") or {}).get("conditions") for wd in WDs(f, "web").list()), "statuses", 30
            )
            assert await shards.idle()
            servers = [f.server("web"), f.server("cell-dfw")]
            before = [s.plane.counters.writes() for s in servers]
            await anyio.sleep(5)
            after = [s.plane.counters.writes() for s in servers]
            assert after == before, {s.name: s.plane.counters.snapshot() for s in servers}

            # a shard whose Lease is not fresh (as after a pause past its renew deadline) starts
            # no reconcile and writes nothing; its renewal thread then gives up and it stops,
            # and the other shard takes its WDs once its Lease is dead
            assert a.shard_elector is not None
            stale_at = time.monotonic()
            a.shard_elector.last_renew -= 60.0  # as if the process had been stopped for a minute
            owned = sorted(n for n, s in ring_owners(f, ["shard-a", "shard-b"]).items() if s == "shard-a")
            for name in owned:
                WDs(f, "web").edit("default", name, lambda wd: wd["spec"].update(replicas=2))
            await eventually(lambda: "shard-a" in shards.lost, "shard-a stops", within=20)
            await eventually(lambda: assigned_as_the_ring_says(f, ["shard-b"]), "shard-b owns everything", within=40)
            await eventually(
                lambda: all(
                    wd["spec"]["replicas"] == 2 for wd in WDs(f, "cell-dfw").list() if wd["metadata"]["name"] in owned
                ),
                "shard-b federated the change",
                within=30,
            )
            late = [r for r in recorder.reconciles if r.shard == "shard-a" and r.started >= stale_at]
            assert late == [], "shard-a reconciled after its Lease went stale"
            assert recorder.overlaps() == []
        finally:
            await shards.stop_all()


async def test_the_sharders_own_label_write_costs_no_second_reconcile(tmp_path: Path) -> None:
    """Assigning a new WD costs the sharder one reconcile: its label patch's echo (the WD
    relabelled in the view of the other shards' WDs, or gone from it and arrived in its own
    shard's view) wakes nothing. Without it each assignment costs at least two (the echo
    always comes: during the reconcile it marks the request dirty, after it enqueues it). A
    second reconcile is left only when the echo outran the patch's answer. Each decision reads
    the ring's Leases from the sharder's view of them: no LIST of Leases per WD. A label
    change that leaves a WD as the ring says (as a cold start's WDs arrive) wakes nothing."""
    recorder = Recorder()
    async with fleet(tmp_path, projects=("acme/web",), cells=(("cell-dfw", "DFW"),)) as f, AsyncExitStack() as stack:
        tg = await stack.enter_async_context(anyio.create_task_group())
        shards = Shards(tg, tmp_path, recorder)
        try:
            await shards.start_joined("shard-a", "shard-b")
            assert await shards.idle()  # the joins' re-decisions done before the WDs come
            for shard, manager in shards.managers.items():
                recorder.wrap(manager, shard, "sharder")
            lease_lists = f.server("management").plane.counters.get("list", "leases.coordination.k8s.io")
            for i in range(N_WDS):
                WDs(f, "web").create(workload_deployment(f"api-{i:02d}", "DFW", 1))
            await eventually(lambda: assigned_as_the_ring_says(f, ["shard-a", "shard-b"]), "assigned", within=30)
            await eventually(lambda: copies_in_cell(f) == N_WDS, "every WD federated", within=30)
            assert await shards.idle()
            owners = ring_owners(f, ["shard-a", "shard-b"])
            assert set(owners.values()) == {"shard-a", "shard-b"}  # both echoes: moved to its own view, and not
            per_wd = defaultdict(int)
            for r in recorder.of("sharder"):
                per_wd[r.request.name] += 1
            assert set(per_wd) == set(owners), per_wd
            assert sum(per_wd.values()) <= N_WDS * 3 // 2, per_wd
            assert sum(1 for n in per_wd.values() if n == 1) >= N_WDS // 2, per_wd
            assert f.server("management").plane.counters.get("list", "leases.coordination.k8s.io") == lease_lists

            decided = len(recorder.of("sharder"))
            for name in owners:
                WDs(f, "web").edit("default", name, lambda wd: wd["metadata"].setdefault("labels", {}).update(team="x"))
            sharder = next(m for m in shards.managers.values() if m.elector is not None and m.elector.is_leader)
            own = sharder.get_cluster("web").cache.informer_of(WORKLOAD_DEPLOYMENTS).store
            await eventually(
                lambda: own.list() and all(wd["metadata"]["labels"].get("team") == "x" for wd in own.list()),
                "the sharder's own WDs relabelled in its cache",
            )
            assert await shards.idle()
            assert len(recorder.of("sharder")) == decided, recorder.of("sharder")[decided:]
        finally:
            await shards.stop_all()


def projections(f: Fleet) -> dict[str, str]:
    """The project's Instance projections (uid), by name."""
    found = Plane(f.server("web")).list("instances", "default", group=GROUP, version=VERSION)
    return {i["metadata"]["name"]: i["metadata"]["uid"] for i in found if not i["metadata"].get("deletionTimestamp")}


def instances_follow(f: Fleet, shards: list[str]) -> bool:
    """Every cell Instance labelled for its WD's shard (as the cell WD controller labels them)."""
    want = ring_owners(f, shards)
    found = Plane(f.server("cell-dfw")).list("instances", group=GROUP, version=VERSION)
    got = {i["metadata"]["name"]: (i["metadata"].get("labels") or {}).get(Label.SHARD) for i in found}
    return len(got) == N_PROJECTED and all(got[f"{wd}-0"] == shard for wd, shard in want.items())


def instance_share_problems(shards: Shards) -> list[str]:
    """What breaks "each shard caches only the cell Instances labelled for it"."""
    problems = []
    for shard, manager in shards.managers.items():
        held = {(i["metadata"].get("labels") or {}).get(Label.SHARD) for i in manager.get_cluster(
            "cell-dfw").cache.informer_of(INSTANCES).store.list()}  # fmt: skip
        if held != {shard}:
            problems.append(f"{shard} caches cell Instances of {held}")
    return problems


def projection_shards(f: Fleet) -> dict[str, str]:
    """The shard label of each projection, by name."""
    found = Plane(f.server("web")).list("instances", "default", group=GROUP, version=VERSION)
    return {i["metadata"]["name"]: (i["metadata"].get("labels") or {}).get(Label.SHARD, "") for i in found}


def projection_share_problems(shards: Shards, owners: dict[str, str]) -> list[str]:
    """What breaks "each shard caches the projections of its own WDs, no other"."""
    problems = []
    for shard, manager in shards.managers.items():
        held = {i["metadata"]["name"] for i in manager.get_cluster("web").cache.informer_of(INSTANCES).store.list()}
        want = {f"{wd}-0" for wd, owner in owners.items() if owner == shard}
        if held != want:
            problems.append(f"{shard} caches projections {sorted(held)}, its own are {sorted(want)}")
    return problems


def projected_by_the_owner_only(recorder: Recorder, owners: dict[str, str]) -> list[str]:
    return [
        f"{wd}-0 projected by {recorder.shards_of(Request('web', 'default', f'{wd}-0'))}, owner {owner}"
        for wd, owner in owners.items()
        if recorder.shards_of(Request("web", "default", f"{wd}-0")) - {owner}
    ]


N_PROJECTED = 12


async def test_instance_projections_are_made_by_the_owning_shard_and_follow_a_hand_over(tmp_path: Path) -> None:
    """The Instance projector runs on every shard over its own caches: each shard caches the
    cell Instances labelled for it (the cell labels them after their copy) and projects
    those of the WDs it owns, no other; after a hand-over the new owner projects them, the
    projections kept (not removed and made again), no Instance reconciled by two shards at once."""
    recorder = Recorder()
    async with fleet(tmp_path, projects=("acme/web",), cells=(("cell-dfw", "DFW"),)) as f, AsyncExitStack() as stack:
        tg = await stack.enter_async_context(anyio.create_task_group())
        shards = Shards(tg, tmp_path, recorder)
        web = f.server("web").plane.counters
        try:
            await shards.start_joined("shard-a", "shard-b")
            for i in range(N_PROJECTED):
                WDs(f, "web").create(workload_deployment(f"api-{i:02d}", "DFW", 1))
            two = ["shard-a", "shard-b"]
            await eventually(lambda: copies_in_cell(f) == N_PROJECTED and copies_follow(f, two), "copies", within=30)
            settle(f, "cell-dfw")  # the cell's Instances, labelled after their copies
            assert instances_follow(f, two)
            await eventually(lambda: len(projections(f)) == N_PROJECTED, "every Instance projected", within=30)
            owners = ring_owners(f, two)
            assert set(owners.values()) == set(two)
            assert projected_by_the_owner_only(recorder, owners) == []
            await eventually(lambda: instance_share_problems(shards) == [], "each shard caches its Instances", 10)
            # each projection is labelled for its WD's shard, and each shard caches its own only
            assert projection_shards(f) == {f"{wd}-0": shard for wd, shard in owners.items()}
            await eventually(lambda: projection_share_problems(shards, owners) == [], "each caches its share", 10)
            first = projections(f)

            # join: shard-c takes its share; the cell relabels the moved Instances after their copies
            await shards.start("shard-c")
            three = ["shard-a", "shard-b", "shard-c"]
            await eventually(lambda: assigned_as_the_ring_says_of(f, three, N_PROJECTED), "rebalanced", within=30)
            await eventually(lambda: copies_follow(f, three), "copies relabelled", within=30)
            settle(f, "cell-dfw")
            assert instances_follow(f, three)
            await eventually(lambda: instance_share_problems(shards) == [], "each shard caches its Instances", 10)
            moved = {wd for wd, shard in ring_owners(f, three).items() if shard == "shard-c"}
            assert moved, "shard-c owns some WDs"
            # a moved Instance's status changes: shard-c, its new owner, projects it
            settle(f, "cell-dfw", broken={0: ("CrashLoop", "the process exits")})
            await eventually(
                lambda: all("shard-c" in recorder.shards_of(Request("web", "default", f"{wd}-0")) for wd in moved),
                "shard-c projects its Instances",
                within=30,
            )

            def crash_projected() -> bool:
                found = Plane(f.server("web")).list("instances", "default", group=GROUP, version=VERSION)
                return all("CrashLoop" in str(i.get("status")) for i in found)

            await eventually(crash_projected, "the new status projected", within=30)
            assert projections(f) == first, "the projections were kept through the hand-over"
            after = ring_owners(f, three)
            await eventually(
                lambda: projection_shards(f) == {f"{wd}-0": s for wd, s in after.items()}, "relabelled", 30
            )
            await eventually(lambda: projection_share_problems(shards, after) == [], "each caches its share", 10)
            assert web.get("delete", "instances.compute.datumapis.com") == 0
            for wd in moved:  # before the hand-over, its old owner; after, shard-c only
                assert recorder.shards_of(Request("web", "default", f"{wd}-0")) == {owners[wd], "shard-c"}, wd
            assert recorder.overlaps() == [], "an Instance projected by two shards at once"
        finally:
            await shards.stop_all()


def copy_replicas(f: Fleet) -> dict[str, int]:
    return {wd["metadata"]["name"]: int(wd["spec"].get("replicas") or 0) for wd in WDs(f, "cell-dfw").list()}


async def test_a_projection_whose_instance_went_during_a_hand_over_is_removed_by_the_new_owner(tmp_path: Path) -> None:
    """A WD handed to a new shard is scaled down before the cell relabels its Instances:
    the surplus Instance goes while still labelled for the old shard (so the new one never
    caches it, and the old one no longer reconciles the WD). The new owner reads the WD's
    projections once when the WD arrives (`handed_over`): it relabels the one still backed
    and removes the other, none reconciled by two shards at once."""
    recorder = Recorder()
    async with fleet(tmp_path, projects=("acme/web",), cells=(("cell-dfw", "DFW"),)) as f, AsyncExitStack() as stack:
        tg = await stack.enter_async_context(anyio.create_task_group())
        shards = Shards(tg, tmp_path, recorder)
        try:
            await shards.start_joined("shard-a", "shard-b")
            for i in range(N_PROJECTED):
                WDs(f, "web").create(workload_deployment(f"api-{i:02d}", "DFW", 2))
            two = ["shard-a", "shard-b"]
            await eventually(lambda: copies_in_cell(f) == N_PROJECTED and copies_follow(f, two), "copies", within=30)
            settle(f, "cell-dfw")
            await eventually(lambda: len(projections(f)) == 2 * N_PROJECTED, "every Instance projected", within=30)
            await eventually(lambda: all(wd.get("status") for wd in WDs(f, "web").list()), "WD status", within=30)

            await shards.start("shard-c")
            three = ["shard-a", "shard-b", "shard-c"]
            await eventually(lambda: assigned_as_the_ring_says_of(f, three, N_PROJECTED), "rebalanced", within=30)
            moved = sorted(wd for wd, shard in ring_owners(f, three).items() if shard == "shard-c")
            assert moved, "shard-c owns some WDs"
            for wd in moved:  # scaled down before the cell relabels the moved Instances
                WDs(f, "web").edit("default", wd, lambda o: o["spec"].update(replicas=1))
            await eventually(lambda: copies_follow(f, three) and all(copy_replicas(f)[wd] == 1 for wd in moved),
                             "the new owner applied the moved copies", within=30)  # fmt: skip
            settle(f, "cell-dfw")  # the surplus Instances go, labelled for the old shard; the rest relabelled
            want = {f"{wd}-{i}" for wd in ring_owners(f, three) for i in ((0,) if wd in moved else (0, 1))}
            await eventually(lambda: set(projections(f)) == want, "the surplus projections removed", within=30)
            owners = ring_owners(f, three)
            await eventually(lambda: all(projection_shards(f)[name] == owners[name.rsplit("-", 1)[0]] for name in want),
                             "the kept projections relabelled", within=30)  # fmt: skip
            assert recorder.overlaps() == [], "an Instance projected by two shards at once"
        finally:
            await shards.stop_all()


N_WORKLOADS = 6
N_REFERENCING = 8
SHARED = "shared"  # the ConfigMap every referencing WD names
SOLO = "solo"  # the ConfigMap ref-0 alone names: one shard holds it, the others do not cache it


def workload_owners(f: Fleet, shards: list[str]) -> dict[str, str]:
    ring_ = ring(f, shards)
    found = Plane(f.server("web")).list("workloads", "default", group=GROUP, version=VERSION)
    return {w["metadata"]["name"]: ring_.owner(workload_hash_key("web", w)) or "" for w in found}


def workloads_follow(f: Fleet, shards: list[str]) -> bool:
    """Every Workload labelled as the ring says, and each of its WDs labelled for the same shard."""
    found = Plane(f.server("web")).list("workloads", "default", group=GROUP, version=VERSION)
    got = {w["metadata"]["name"]: (w["metadata"].get("labels") or {}).get(Label.SHARD, "") for w in found}
    if len(got) != N_WORKLOADS or got != workload_owners(f, shards):
        return False
    wds = {name: ls.get(Label.SHARD, "") for name, ls in labels(f).items() if name.endswith("-edge-dfw")}
    return len(wds) == N_WORKLOADS and all(wds[f"{w}-edge-dfw"] == shard for w, shard in got.items())


def companion(f: Fleet, name: str) -> dict[str, Any] | None:
    ns = cell_namespace(f, "web")
    found = [cm for cm in Plane(f.server("cell-dfw")).list("configmaps", ns) if cm["metadata"]["name"] == name]
    return found[0] if found else None


def shared_companion(f: Fleet) -> dict[str, Any] | None:
    return companion(f, SHARED)


def referenced_by_shard(f: Fleet) -> dict[str, list[str]]:
    """The companion's per-shard lists of the referencing WDs (empty lists left out)."""
    cm = shared_companion(f)
    annotations = (cm or {}).get("metadata", {}).get("annotations") or {}
    return {
        key.removeprefix(SHARD_REFERENCED_BY_PREFIX): json.loads(value)
        for key, value in annotations.items()
        if key.startswith(SHARD_REFERENCED_BY_PREFIX) and json.loads(value)
    }


def referencing_owners(f: Fleet, shards: list[str]) -> dict[str, list[str]]:
    """What the companion's per-shard lists should say: each shard's referencing WDs."""
    want: dict[str, list[str]] = defaultdict(list)
    for name, shard in sorted(ring_owners(f, shards).items()):
        if name.startswith("ref-"):
            want[shard].append(f"default/{name}")
    return dict(want)


def workload_share_problems(shards: Shards) -> list[str]:
    """What breaks "each shard caches the Workloads labelled for it, the sharder also the
    others' (its FLEET view, slim, for the assignment), and no shard holds a second view of
    the cells' copies"."""
    problems = []
    for shard, manager in shards.managers.items():
        leading = manager.elector is not None and manager.elector.is_leader
        web = manager.get_cluster("web").cache
        held = {(w["metadata"].get("labels") or {}).get(Label.SHARD) for w in web.informer_of(WORKLOADS).store.list()}
        if not held <= {shard}:
            problems.append(f"{shard} caches Workloads of {held}")
        if (web.view_of(WORKLOADS, FLEET) is not None) != leading:
            problems.append(f"{shard} (leading: {leading}) has a FLEET view of Workloads or lacks it")
        elif leading:  # the sharder: the others' Workloads, slim, besides its own in full
            others = web.informer_of(WORKLOADS, FLEET).store.list()
            if any("spec" in w or (w["metadata"].get("labels") or {}).get(Label.SHARD) == shard for w in others):
                problems.append(f"the sharder {shard} holds its own Workloads twice, or the others' in full")
            if len(others) + len(web.informer_of(WORKLOADS).store.list()) != N_WORKLOADS:
                problems.append(f"the sharder {shard} does not see every Workload")
            if not web.informer_of(WORKLOADS, FLEET).metadata_only:
                problems.append(f"the sharder {shard} lists and watches the other shards' Workloads in full")
        if manager.get_cluster("cell-dfw").cache.view_of(WORKLOAD_DEPLOYMENTS, FLEET) is not None:
            problems.append(f"{shard} holds a second (FLEET) view of the cell's copies")
    return problems


def companion_share_problems(shards: Shards) -> list[str]:
    """What breaks "each shard caches the companions it holds a share of, no other"."""
    problems = []
    for shard, manager in shards.managers.items():
        held = manager.get_cluster("cell-dfw").cache.informer_of(CONFIGMAPS).store.list()
        if any(shard not in sharers(cm) for cm in held):
            problems.append(f"{shard} caches companions held by {[sorted(sharers(cm)) for cm in held]}")
    return problems


async def test_workloads_and_companions_follow_the_shards(tmp_path: Path) -> None:
    """The workload controller and the companions run on every shard for its own share: a
    Workload and its WDs land on one shard (the WDs hash with their Workload), which alone
    reconciles the Workload and caches it; a ConfigMap referenced by WDs of two shards is
    copied once into the cell namespace, each shard listing its own WDs under its own
    annotation; after a hand-over the lists follow the WDs, the companion kept (never
    deleted and made again); once nothing references it, it is deleted."""
    recorder = Recorder()
    async with fleet(tmp_path, projects=("acme/web",), cells=(("cell-dfw", "DFW"),)) as f, AsyncExitStack() as stack:
        tg = await stack.enter_async_context(anyio.create_task_group())
        shards = Shards(tg, tmp_path, recorder)
        web, cell = Plane(f.server("web")), f.server("cell-dfw").plane.counters
        try:
            await shards.start_joined("shard-a", "shard-b")
            web.create("configmaps", configmap(SHARED, mode="fast"))
            web.create("configmaps", configmap(SOLO, mode="one"))
            for i in range(N_WORKLOADS):
                web.create("workloads", workload(f"app-{i}", ["DFW"]), group=GROUP, version=VERSION)
            for i in range(N_REFERENCING):
                env_from = [{"configMapRef": {"name": name}} for name in ((SHARED, SOLO) if i == 0 else (SHARED,))]
                WDs(f, "web").create(referencing(f"ref-{i}", env_from=env_from))
            two = ["shard-a", "shard-b"]
            total = N_WORKLOADS + N_REFERENCING

            # Workloads: labelled as the ring says, their WDs with them, reconciled by their shard only
            await eventually(lambda: workloads_follow(f, two), "Workloads and their WDs assigned", within=30)
            await eventually(lambda: assigned_as_the_ring_says_of(f, two, total), "every WD assigned", within=30)
            owners = workload_owners(f, two)
            assert set(owners.values()) == set(two), owners  # balance: both shards own some
            for name, owner in owners.items():
                assert recorder.shards_of(Request("web", "default", name)) == {owner}, name
            await eventually(lambda: workload_share_problems(shards) == [], "each shard caches its Workloads", 10)
            assert fleet_requests(f, "workloads") == ("list", "watch")

            # companions: one ConfigMap, each shard listing its own referencing WDs
            await eventually(lambda: copies_in_cell(f) == total, "every WD federated", within=30)
            refs = referencing_owners(f, two)
            assert set(refs) == set(two), refs  # both shards' WDs reference the ConfigMap
            await eventually(lambda: referenced_by_shard(f) == refs, "each shard lists its WDs", within=30)
            first = shared_companion(f)
            assert first is not None and first["data"] == {"mode": "fast"}
            managers = {m["manager"] for m in first["metadata"]["managedFields"]}
            assert {"companions-shard-a", "companions-shard-b"} <= managers, managers
            assert REFERENCED_BY not in first["metadata"]["annotations"]  # per shard when sharded
            # each holder labels its share, and each shard caches only the companions it holds a share of
            assert sharers(first) == set(two)
            await eventually(lambda: sharers(companion(f, SOLO) or {}) == {ring_owners(f, two)["ref-0"]}, "solo", 10)
            await eventually(lambda: companion_share_problems(shards) == [], "each caches its shares", 10)
            # never fought over: once converged, no shard writes it again
            assert await shards.idle()
            written = cell.writes("configmaps")
            await anyio.sleep(3)
            assert cell.writes("configmaps") == written, cell.snapshot()

            # a source edit reaches the one companion (both co-owners write the same data)
            source = web.get("configmaps", "default", SHARED)
            web.update("configmaps", {**source, "data": {"mode": "slow"}})
            await eventually(lambda: (shared_companion(f) or {}).get("data") == {"mode": "slow"}, "edited", 30)

            # join: shard-c takes its share; the lists follow the WDs, the companion is kept
            await shards.start("shard-c")
            three = ["shard-a", "shard-b", "shard-c"]
            await eventually(lambda: assigned_as_the_ring_says_of(f, three, total), "rebalanced", within=30)
            await eventually(lambda: workloads_follow(f, three), "Workloads rebalanced", within=30)
            await eventually(lambda: referenced_by_shard(f) == referencing_owners(f, three), "lists follow", 30)
            await eventually(lambda: workload_share_problems(shards) == [], "each shard caches its Workloads", 10)
            assert (shared_companion(f) or {})["metadata"]["uid"] == first["metadata"]["uid"]
            await eventually(lambda: sharers(shared_companion(f) or {}) == set(referencing_owners(f, three)),
                             "the shares follow", within=30)  # fmt: skip
            await eventually(lambda: companion_share_problems(shards) == [], "each caches its shares", 10)
            assert cell.get("delete", "configmaps") == 0
            for name, owner in workload_owners(f, three).items():  # before and after: the owners only
                assert recorder.shards_of(Request("web", "default", name)) <= {owners[name], owner}, name

            # nothing references it any more: deleted (once), and the Workloads' WDs go with them
            for i in range(N_REFERENCING):
                web.delete("workloaddeployments", "default", f"ref-{i}", group=GROUP, version=VERSION)
            await eventually(lambda: shared_companion(f) is None, "the companion reclaimed", within=30)
            for i in range(N_WORKLOADS):
                web.delete("workloads", "default", f"app-{i}", group=GROUP, version=VERSION)
            await eventually(lambda: labels(f) == {}, "every WD gone", within=30)
            assert recorder.overlaps() == [], "a Workload or WD reconciled by two shards at once"
        finally:
            await shards.stop_all()


def lease_released(mgmt: Plane, name: str) -> None:
    """A shard's graceful leave: its Lease released (holder cleared), so it is dead."""
    lease = mgmt.get("leases", LEASE_NAMESPACE, name, group="coordination.k8s.io", version="v1")
    mgmt.update("leases", {**lease, "spec": {**lease["spec"], "holderIdentity": ""}},
                group="coordination.k8s.io", version="v1")  # fmt: skip


async def test_a_dead_shards_companion_share_is_withdrawn_by_the_survivors(tmp_path: Path) -> None:
    """A companion co-owned with a shard that then dies keeps no share of the dead shard: a
    survivor holding it strips the dead shard's label and annotations (one patch, on the
    dead shard's Lease event), never a live shard's; once nothing references it, it is
    deleted."""
    recorder = Recorder()
    async with fleet(tmp_path, projects=("acme/web",), cells=(("cell-dfw", "DFW"),)) as f, AsyncExitStack() as stack:
        tg = await stack.enter_async_context(anyio.create_task_group())
        shards = Shards(tg, tmp_path, recorder)
        web, mgmt, cell = Plane(f.server("web")), Plane(f.management), Plane(f.server("cell-dfw"))
        # another shard, alive for now (renewed for an hour): it owns no WD here (names picked
        # so), but holds a share of the companion, as a shard whose WDs referenced it had
        member_lease(mgmt, "shard-x", duration=3600)
        try:
            await shards.start("shard-a")
            await shards.joined("shard-a", "shard-x")
            ring_ = ring(f, ["shard-a", "shard-x"])  # shard-a the sharder
            names = [n for n in (f"ref-{i}" for i in range(40)) if ring_.owner(wd_hash_key("web", {"metadata": {
                "namespace": "default", "name": n}})) == "shard-a"][:4]  # fmt: skip
            web.create("configmaps", configmap(SHARED, mode="fast"))
            for name in names:
                WDs(f, "web").create(referencing(name, env_from=[{"configMapRef": {"name": SHARED}}]))
            await eventually(lambda: sharers(shared_companion(f) or {}) == {"shard-a"}, "copied by shard-a", within=30)
            cm = shared_companion(f)
            assert cm is not None
            share = SHARD_REFERENCED_BY_PREFIX + "shard-x"
            cm["metadata"]["labels"][share] = "true"
            cm["metadata"]["annotations"][share] = '["default/gone"]'
            cell.update("configmaps", cm)
            # a live shard's share is left alone
            assert await shards.idle()
            assert sharers(shared_companion(f) or {}) == {"shard-a", "shard-x"}

            lease_released(mgmt, "shard-x")  # shard-x leaves: dead
            await eventually(lambda: sharers(shared_companion(f) or {}) == {"shard-a"}, "the dead share gone", 30)
            left = (shared_companion(f) or {})["metadata"]
            assert share not in left["annotations"] and share not in left["labels"], left
            assert json.loads(left["annotations"][SHARD_REFERENCED_BY_PREFIX + "shard-a"]) == [
                f"default/{n}" for n in sorted(names)
            ]

            for name in names:
                WDs(f, "web").delete("default", name)
            await eventually(lambda: shared_companion(f) is None, "the companion reclaimed", within=30)
        finally:
            await shards.stop_all()
