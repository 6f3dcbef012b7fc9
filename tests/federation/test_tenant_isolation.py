"""Tenant isolation (issue 15 item 4): a tenant with full write access to its own project
control plane cannot cause any write outside its own downstream namespaces, whatever it
writes — forged upstream labels or annotations, names chosen to collide with another
project's, a namespace named `ns-<another project's namespace uid>`, huge or malformed
label values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from federation.api.constants import Annotation, Label
from federation.fleet.downstream import upstream_identity
from tests.support import Fleet, Plane, all_idle, eventually, fleet, management_settings, running

from .test_federator import WDs, shares, workload_deployment

CELLS = (("dfw-1", "DFW"), ("lhr-1", "LHR"))


def downstream_of(f: Fleet, project: str, namespace: str) -> str:
    return f"ns-{Plane(f.server(project)).get('namespaces', '', namespace)['metadata']['uid']}"


def every_copy(f: Fleet) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(cell, copy, its namespace) for every WD in every cell."""
    out = []
    for cell in f.cells:
        plane = Plane(f.server(cell))
        for copy in WDs(f, cell).list():
            out.append((cell, copy, plane.get("namespaces", "", copy["metadata"]["namespace"])))
    return out


async def test_a_hostile_tenant_writes_only_into_its_own_downstream_namespaces(tmp_path: Path) -> None:
    async with (
        fleet(tmp_path, projects=("acme/web", "acme/shop"), cells=CELLS) as f,
        running(management_settings(tmp_path / "management.kubeconfig")) as mgr,
    ):
        web, shop = Plane(f.server("web")), Plane(f.server("shop"))
        WDs(f, "shop").create(workload_deployment("api", "DFW", 2))
        await eventually(lambda: shares(f, "api") == {"dfw-1": (2, 0)}, "shop's copy")
        shop_down = downstream_of(f, "shop", "default")

        # 1. forged identity: shop's cluster name, namespace and uid on web's WD
        forged = workload_deployment("api", "DFW", 5)
        forged["metadata"]["labels"] = {
            str(Label.UPSTREAM_CLUSTER_NAME): "cluster-acme_shop",
            str(Label.UPSTREAM_NAMESPACE): "default",
            str(Label.TOPOLOGY_CITY_CODE): "LHR",
        }
        forged["metadata"]["annotations"] = {
            str(Annotation.UPSTREAM_UID): WDs(f, "shop").get("default", "api")["metadata"]["uid"],  # type: ignore[index]
            str(Annotation.ORDINAL_START): "0",
        }
        WDs(f, "web").create(forged)
        # 2. a namespace named after shop's downstream namespace, with a WD in it
        web.create("namespaces", {"metadata": {"name": shop_down}})
        squatter = workload_deployment("api", "DFW", 1)
        squatter["metadata"]["namespace"] = shop_down
        WDs(f, "web").create(squatter)
        # 3. hundreds of labels and maximum-length values, a lower-case city code (DFW's: it
        # places, issue 20) and a Location that does not exist
        noisy = workload_deployment("noisy", "DFW", 1)
        noisy["metadata"]["labels"] = {f"tenant.example.com/k{i}": "v" * 63 for i in range(300)}
        WDs(f, "web").create(noisy)
        WDs(f, "web").create(workload_deployment("lowercase", "dfw", 1))
        nowhere = workload_deployment("nowhere", "unused", 1)
        del nowhere["spec"]["cityCode"]
        nowhere["spec"]["locationRef"] = {"name": "mars"}
        WDs(f, "web").create(nowhere)

        web_default, web_squat = downstream_of(f, "web", "default"), downstream_of(f, "web", shop_down)

        def settled() -> bool:
            names = {(c["metadata"]["namespace"], c["metadata"]["name"]) for _cell, c, _ns in every_copy(f)}
            wanted = {(web_default, "api"), (web_squat, "api"), (web_default, "noisy"), (web_default, "lowercase")}
            return wanted <= names

        await eventually(settled, "web's copies, each in web's own downstream namespace")
        assert await all_idle(mgr)

        # shop's namespace holds shop's copy only, untouched
        shop_copy = WDs(f, "dfw-1").get(shop_down, "api")
        assert shop_copy is not None and shop_copy["spec"]["replicas"] == 2
        assert (
            shop_copy["metadata"]["annotations"][Annotation.UPSTREAM_UID]
            == (
                WDs(f, "shop").get("default", "api")["metadata"]["uid"]  # type: ignore[index]
            )
        )
        # every copy's namespace names exactly the project whose WD it mirrors
        for cell, copy, ns in every_copy(f):
            ref = upstream_identity(copy, ns)
            assert ref is not None, f"{cell}: {copy['metadata']['namespace']}/{copy['metadata']['name']} unmapped"
            upstream = WDs(f, ref.project).get(ref.namespace, ref.name)
            assert upstream is not None and upstream["metadata"]["uid"] == ref.uid, (cell, ref)
        # no tenant label reached a cell; the unknown Location placed nothing and is said with an Event
        noisy_copy = WDs(f, "dfw-1").get(web_default, "noisy")
        assert noisy_copy is not None and not any(
            k.startswith("tenant.example.com/") for k in noisy_copy["metadata"]["labels"]
        )
        assert all(c["metadata"]["name"] != "nowhere" for _cell, c, _ns in every_copy(f))

        def said() -> bool:
            events = web.list("events", "default")
            return any(e["reason"] == "NoMatchingLocation" and "'mars'" in e["message"] for e in events)

        await eventually(said, "a NoMatchingLocation Event naming mars")
        assert shop.list("events", "default") == [] or all(
            "web" not in e["message"] for e in shop.list("events", "default")
        )
