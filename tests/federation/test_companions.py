"""The companion controller (federation/controllers/companions.py), driven as `run
--enable-management-controllers` drives it, on embedded servers: projects acme/web and
acme/shop, cells dfw-1, dfw-2 (DFW) and lhr-1 (LHR)."""

from __future__ import annotations

import base64
import copy
import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import anyio
import pytest

from federation.controllers.companions import CompanionRoutes
from mcruntime import Manager, Request
from mcruntime.resources import SECRETS as SECRETS_RESOURCE
from tests.support import Plane, all_idle, cell_settings, eventually, record, running

from .test_federator import WDs, federation, shares, workload_deployment

REFERENCED = "compute.datumapis.com/referenced-data"
REFERENCED_BY = "compute.datumapis.com/referenced-by"
PASSWORD = "hunter2-very-secret"
B64 = base64.b64encode(PASSWORD.encode()).decode()


def secret(name: str, value: str = B64, type_: str = "Opaque", namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": type_,
        "data": {"password": value},
    }


def configmap(name: str, namespace: str = "default", **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


def referencing(name: str, city: str = "DFW", *, env: list[Any] | None = None, env_from: list[Any] | None = None,
                volumes: list[Any] | None = None, pull: list[Any] | None = None) -> dict[str, Any]:  # fmt: skip
    wd = workload_deployment(name, city, 2)
    spec = wd["spec"]["template"]["spec"]
    container = spec["runtime"]["sandbox"]["containers"][0]
    if env:
        container["env"] = env
    if env_from:
        container["envFrom"] = env_from
    if volumes:
        spec["volumes"] = volumes
    if pull:
        spec["runtime"]["sandbox"]["imagePullSecrets"] = pull
    return wd


ALL_FORMS = {
    "env": [
        {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "mode"}}},
        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "password"}}},
    ],
    "env_from": [{"configMapRef": {"name": "from-cm"}}, {"secretRef": {"name": "from-secret"}}],
    "volumes": [
        {"name": "files", "configMap": {"name": "vol-cm"}},
        {"name": "tls", "secret": {"secretName": "vol-secret"}},
    ],
    "pull": [{"name": "regcred"}],
}
CONFIG_MAPS = ("env-cm", "from-cm", "vol-cm")
SECRETS = ("env-secret", "from-secret", "vol-secret", "regcred")


def cell_namespace(f: Any, project: str = "web", namespace: str = "default") -> str:
    return f"ns-{Plane(f.server(project)).get('namespaces', '', namespace)['metadata']['uid']}"


def companions(f: Any, cell: str, ns: str, plural: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in Plane(f.server(cell)).list(plural, ns)
            if (o["metadata"].get("labels") or {}).get(REFERENCED) == "true"}  # fmt: skip


async def test_each_reference_form_reaches_every_cell_of_the_copies(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, _mgr):
        web = Plane(f.server("web"))
        for name in CONFIG_MAPS:
            web.create("configmaps", configmap(name, mode="fast"))
        for name in SECRETS[:-1]:
            web.create("secrets", secret(name))
        pull_secret = {
            **secret("regcred", type_="kubernetes.io/dockerconfigjson"),
            "data": {".dockerconfigjson": "e30="},
        }
        web.create("secrets", pull_secret)
        WDs(f, "web").create(referencing("api", **ALL_FORMS))
        await eventually(lambda: set(shares(f, "api")) == {"dfw-1", "dfw-2"}, "copies")
        ns = cell_namespace(f)

        def all_there() -> bool:
            return all(
                set(companions(f, c, ns, "configmaps")) == set(CONFIG_MAPS)
                and set(companions(f, c, ns, "secrets")) == set(SECRETS)
                for c in ("dfw-1", "dfw-2")
            )

        await eventually(all_there, "every referenced ConfigMap and Secret in both DFW cells")
        assert companions(f, "lhr-1", ns, "secrets") == {}, "no copy in LHR, no companion there"
        cm = companions(f, "dfw-1", ns, "configmaps")["env-cm"]
        assert cm["data"] == {"mode": "fast"}
        assert cm["metadata"]["labels"][REFERENCED] == "true"
        assert cm["metadata"]["labels"]["meta.datumapis.com/upstream-namespace"] == "default"
        assert json.loads(cm["metadata"]["annotations"][REFERENCED_BY]) == ["default/api"]
        pull = companions(f, "dfw-2", ns, "secrets")["regcred"]
        assert pull["type"] == "kubernetes.io/dockerconfigjson" and pull["data"] == {".dockerconfigjson": "e30="}
        copy_ = WDs(f, "dfw-1").get(ns, "api")
        assert copy_ is not None
        expected = json.loads(copy_["metadata"]["annotations"]["compute.datumapis.com/expected-referenced-data"])
        assert expected == sorted([f"ConfigMap/{n}" for n in CONFIG_MAPS] + [f"Secret/{n}" for n in SECRETS])


async def test_source_changes_deletion_and_reclaim(tmp_path: Path) -> None:
    async with federation(tmp_path) as (f, _mgr):
        web = Plane(f.server("web"))
        web.create("configmaps", configmap("cfg", mode="fast"))
        web.create("secrets", secret("db"))
        WDs(f, "web").create(
            referencing("api", env_from=[{"configMapRef": {"name": "cfg"}}, {"secretRef": {"name": "db"}}])
        )
        WDs(f, "web").create(referencing("worker", env_from=[{"secretRef": {"name": "db"}}]))
        await eventually(lambda: set(shares(f, "worker")) == {"dfw-1", "dfw-2"}, "copies")
        ns = cell_namespace(f)

        def db_referenced_by(*wds: str) -> bool:
            found = companions(f, "dfw-1", ns, "secrets").get("db")
            return found is not None and json.loads(found["metadata"]["annotations"][REFERENCED_BY]) == list(wds)

        await eventually(lambda: db_referenced_by("default/api", "default/worker"), "db shared by both WDs")
        # a source change is copied
        cm = web.get("configmaps", "default", "cfg")
        cm["data"] = {"mode": "slow"}
        web.update("configmaps", cm)
        await eventually(
            lambda: all(companions(f, c, ns, "configmaps").get("cfg", {}).get("data") == {"mode": "slow"}
                        for c in ("dfw-1", "dfw-2")),
            "the change in both cells",
        )  # fmt: skip
        # a reference removed: the ConfigMap no WD references any more is reclaimed, the shared Secret stays
        WDs(f, "web").edit("default", "api", lambda o: o["spec"]["template"]["spec"]["runtime"]["sandbox"]
                           ["containers"][0].update(envFrom=[{"secretRef": {"name": "db"}}]))  # fmt: skip
        await eventually(lambda: "cfg" not in companions(f, "dfw-2", ns, "configmaps"), "cfg reclaimed")
        WDs(f, "web").delete("default", "api")
        await eventually(lambda: db_referenced_by("default/worker"), "db referenced by worker only")
        # the source deleted: its companion goes; the worker's WD gets a SourceNotFound Event
        web.delete("secrets", "default", "db")
        await eventually(lambda: "db" not in companions(f, "dfw-1", ns, "secrets"), "db companion gone")

        def not_found_event() -> list[dict[str, Any]]:
            return [e for e in web.list("events", "default") if e["reason"] == "SourceNotFound"]

        events = await eventually(not_found_event, "a SourceNotFound Event on the WD")
        assert [e["involvedObject"]["name"] for e in events] == ["worker"], events
        (event,) = events
        assert event["message"] == 'Secret "db" not found in namespace "default"'
        # the source back: the companion is back
        web.create("secrets", secret("db"))
        await eventually(lambda: db_referenced_by("default/worker"), "db back")


async def test_a_missing_source_is_an_event_and_secret_data_never_leaks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with federation(tmp_path) as (f, mgr):
        web = Plane(f.server("web"))
        web.create("secrets", secret("db"))
        web.create("configmaps", configmap("big", blob="x" * (300 * 1024)))
        refs = [{"secretRef": {"name": "db"}}, {"secretRef": {"name": "nope"}},
                {"configMapRef": {"name": "maybe", "optional": True}}, {"configMapRef": {"name": "big"}}]  # fmt: skip
        WDs(f, "web").create(referencing("api", env_from=refs))
        ns = await eventually(lambda: set(shares(f, "api")) == {"dfw-1", "dfw-2"} and cell_namespace(f), "copies")
        await eventually(lambda: "db" in companions(f, "dfw-2", ns, "secrets"), "db copied")
        events = await eventually(
            lambda: [e for e in web.list("events", "default") if e["reason"] == "SourceNotFound"], "the Event"
        )
        assert [e["message"] for e in events] == ['Secret "nope" not found in namespace "default"']
        too_large = await eventually(
            lambda: [e for e in web.list("events", "default") if e["reason"] == "SourceTooLarge"], "SourceTooLarge"
        )
        assert [e["message"] for e in too_large] == ['ConfigMap "big" holds more than 262144 bytes of data']
        assert "big" not in companions(f, "dfw-1", ns, "configmaps")
        # an optional source that is missing is no problem at all
        assert not any("maybe" in e["message"] for e in web.list("events", "default"))
        # no cell mode here: each WD's status is written once, after --awaiting-propagation-after
        await eventually(lambda: all((wd.get("status") or {}).get("conditions") for wd in WDs(f, "web").list()),
                         "the WD's first status", within=30)  # fmt: skip
        assert await all_idle(mgr)
        servers = [f.management, *f.projects.values(), *f.cells.values()]
        before = [s.plane.counters.writes() for s in servers]
        await anyio.sleep(3.0)
        detail = {s.name: s.plane.counters.snapshot() for s in servers}
        assert [s.plane.counters.writes() for s in servers] == before, f"writes at steady state: {detail}"
        # a Secret no WD references is no work at all (a project's tokens, releases...)
        recording = record(mgr, "companions")
        web.create("secrets", secret("unrelated"))
        web.create("configmaps", configmap("unrelated-too"))
        await anyio.sleep(1.0)
        assert recording.requests == []
        # ... while one a WD references is (the missing one, created now, is copied)
        web.create("secrets", secret("nope"))
        await eventually(lambda: "nope" in companions(f, "dfw-1", ns, "secrets"), "nope copied once it exists")
        assert {r.name for r in recording.requests} == {"default"}, "the recording sees the controller's requests"
        # the project's Secrets are known by name and resourceVersion only: no data held in memory
        cached = mgr.clusters["web"].cache.informer_of(SECRETS_RESOURCE).list(namespace="default")
        assert {o["metadata"]["name"] for o in cached} >= {"db"}
        assert all(set(o) == {"metadata"} for o in cached), cached
        everything = [*web.list("events", "default"), *(e for c in f.cells for e in Plane(f.server(c)).list("events"))]
        for leak in (PASSWORD, B64):
            assert leak not in caplog.text
            assert all(leak not in json.dumps(e) for e in everything)


async def test_companions_never_cross_projects(tmp_path: Path) -> None:
    """Two projects with the same namespace, WD and Secret names: each cell namespace holds
    its own project's companion, a reference to another namespace's Secret copies nothing."""
    async with federation(tmp_path) as (f, _mgr):
        Plane(f.server("web")).create("secrets", secret("db", base64.b64encode(b"web").decode()))
        Plane(f.server("shop")).create("secrets", secret("db", base64.b64encode(b"shop").decode()))
        Plane(f.server("web")).create(
            "namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}
        )
        Plane(f.server("web")).create("secrets", secret("elsewhere", namespace="other"))
        env_from = [{"secretRef": {"name": "db"}}, {"secretRef": {"name": "elsewhere"}}]
        WDs(f, "web").create(referencing("api", env_from=env_from))
        WDs(f, "shop").create(copy.deepcopy(referencing("api", env_from=env_from)))
        web_ns, shop_ns = cell_namespace(f, "web"), cell_namespace(f, "shop")

        def both() -> bool:
            return all("db" in companions(f, "dfw-1", n, "secrets") for n in (web_ns, shop_ns))

        await eventually(both, "each project's db in its own cell namespace")
        assert companions(f, "dfw-1", web_ns, "secrets")["db"]["data"]["password"] == base64.b64encode(b"web").decode()
        assert (
            companions(f, "dfw-1", shop_ns, "secrets")["db"]["data"]["password"] == base64.b64encode(b"shop").decode()
        )
        for n in (web_ns, shop_ns):
            assert "elsewhere" not in companions(f, "dfw-1", n, "secrets")


async def test_a_cell_joining_later_gets_its_companions_before_its_instances_start(tmp_path: Path) -> None:
    """A DFW cell registered while the WD runs: the federator gives it a copy, this
    controller the companion, and the cell (its own cell-mode manager here) creates the
    Instance behind the ReferencedData gate, removed only once the companion is there."""
    async with federation(tmp_path) as (f, _mgr):
        Plane(f.server("web")).create("secrets", secret("db"))
        wd = referencing("api", env=[{"name": "P", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}])
        wd["spec"]["replicas"] = 3
        WDs(f, "web").create(wd)
        await eventually(lambda: set(shares(f, "api")) == {"dfw-1", "dfw-2"}, "copies in the first two cells")
        await f.add_cell("dfw-3", "DFW")
        kubeconfig = f.server("dfw-3").write_kubeconfig(tmp_path / "dfw-3-cell.kubeconfig")
        settings = cell_settings(kubeconfig, city_code="DFW", site_name="dfw-3", local_cluster_name="dfw-3")
        async with running(settings):
            cell = Plane(f.server("dfw-3"))
            ns = cell_namespace(f)

            def instance() -> dict[str, Any] | None:
                found = cell.list("instances", ns, group="compute.datumapis.com", version="v1alpha")
                return found[0] if found else None

            def released() -> bool:
                obj = instance()
                conds = {c["type"]: c for c in (obj or {}).get("status", {}).get("conditions", [])}
                return (
                    bool(obj)
                    and obj["spec"]["controller"]["schedulingGates"] == []
                    and (conds.get("ReferencedDataReady", {}).get("status") == "True")
                )

            await eventually(released, "the gate gone, ReferencedDataReady True", within=20)
            # ReferencedDataReady exists only on an Instance that started behind the gate, and
            # turned True no earlier than its companion arrived (RFC 3339 seconds compare as text)
            obj = instance()
            assert obj is not None
            ready = next(c for c in obj["status"]["conditions"] if c["type"] == "ReferencedDataReady")
            companion = companions(f, "dfw-3", ns, "secrets")["db"]
            assert companion["metadata"]["creationTimestamp"] <= ready["lastTransitionTime"]


async def test_a_missing_source_is_named_on_the_project_wd(tmp_path: Path) -> None:
    """The project WD itself says which source is missing (ReferencedDataReady=False,
    SourceNotFound, naming it), not only an Event; creating the source moves it on."""

    def referenced_data() -> dict[str, Any]:
        wd = WDs(f, "web").get("default", "api") or {}
        conditions = (wd.get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "ReferencedDataReady"), {})

    async with federation(tmp_path) as (f, _mgr):
        web = Plane(f.server("web"))
        WDs(f, "web").create(referencing("api", env_from=[{"secretRef": {"name": "db"}}]))
        missing = await eventually(lambda: referenced_data().get("reason") == "SourceNotFound" and referenced_data(),
                                   "SourceNotFound on the project WD", within=30)  # fmt: skip
        assert missing["status"] == "False"
        assert missing["message"] == "Secret/db not found in project namespace default"
        web.create("secrets", secret("db"))
        moved = await eventually(lambda: referenced_data().get("reason") not in (None, "SourceNotFound")
                                 and referenced_data(), "the source found", within=30)  # fmt: skip
        assert moved["reason"] == "AwaitingPropagation", "no cell mode here: the copies never report it"


async def test_wds_and_copies_that_reference_nothing_wake_no_reconcile() -> None:
    """A WD (or its copy) that references no ConfigMap or Secret needs no companion: its
    events map to nothing, so a namespace of such WDs costs the companion controller no
    reconcile (before, each of their events re-read every WD of the namespace: most of the
    manager's CPU while a burst of WDs fanned out). One that references a source maps
    to its namespace; so does its old object on an update (the reference removed)."""
    routes = CompanionRoutes(cast(Manager, SimpleNamespace(clusters={})))
    plain = workload_deployment("api", "DFW", 2)
    assert await routes.of_project_object("web", plain) == []
    assert await routes.of_copy("dfw-1", plain) == []
    wd = referencing("api", env_from=[{"configMapRef": {"name": "cfg"}}])
    assert await routes.of_project_object("web", wd) == [Request("web", "", "default")]
