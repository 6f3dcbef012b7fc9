"""Deployment manifests: every overlay renders with `kubectl kustomize` and is accepted by
the API server (CRDs first); site overlays differ only in site identity; RBAC is least
privilege; the Deployment runs the image the Dockerfile builds."""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeplane import EmbeddedAPIServer
from kubeplane.testing import Kubectl

from .conftest import OVERLAYS, REPO, dump_docs, establish_crds, load_docs

pytestmark = pytest.mark.kubectl

MANAGER_FLAGS = {
    "run",
    "--config=/etc/federation/config.yaml",
    "--metrics-bind-address=:8080",
    "--health-probe-bind-address=:8081",
    "--leader-elect",
    "--leader-election-namespace=$(POD_NAMESPACE)",
}
MODE_FLAGS = {
    "management": {"--enable-management-controllers"},
    "cell-dfw": {"--enable-cell-controllers", "--feature-gates=PodRuntime=true"},
    "cell-lhr": {"--enable-cell-controllers", "--feature-gates=PodRuntime=true"},
    "all-in-one": {"--enable-management-controllers", "--enable-cell-controllers", "--feature-gates=PodRuntime=true"},
}
CRDS = {
    "management": {"clusterprofiles.multicluster.x-k8s.io", "locations.networking.datumapis.com"},
    "cell-dfw": {
        "instances.compute.datumapis.com",
        "workloaddeployments.compute.datumapis.com",
        "workloads.compute.datumapis.com",
        "resourceclaims.quota.compute.datumapis.com",
        "resourcebudgets.quota.compute.datumapis.com",
    },
    "all-in-one": {
        "clusterprofiles.multicluster.x-k8s.io",
        "locations.networking.datumapis.com",
        "instances.compute.datumapis.com",
        "workloaddeployments.compute.datumapis.com",
        "workloads.compute.datumapis.com",
        "resourceclaims.quota.compute.datumapis.com",
        "resourcebudgets.quota.compute.datumapis.com",
    },
}
CRDS["cell-lhr"] = CRDS["cell-dfw"]


async def render(kubectl: Kubectl, path: str) -> list[dict[str, Any]]:
    return load_docs(await kubectl("kustomize", str(REPO / path)))


def _deployment(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    return deployment


async def apply_crds_first(kubectl: Kubectl, docs: list[dict[str, Any]]) -> str:
    crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
    rest = [d for d in docs if d["kind"] != "CustomResourceDefinition"]
    await establish_crds(kubectl, crds)
    return await kubectl("apply", "--server-side", "-f", "-", stdin=dump_docs(rest))


@pytest.mark.parametrize("overlay", OVERLAYS)
async def test_overlay_renders_and_is_accepted(apiserver: EmbeddedAPIServer, kubectl: Kubectl, overlay: str) -> None:
    docs = await render(kubectl, f"overlays/{overlay}")
    assert {d["metadata"]["name"] for d in docs if d["kind"] == "CustomResourceDefinition"} == CRDS[overlay]
    namespaced = [
        d
        for d in docs
        if d["kind"] not in {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}
    ]
    assert {d["metadata"].get("namespace") for d in namespaced} == {"federation-system"}

    out = await apply_crds_first(kubectl, docs)
    applied = [line for line in out.splitlines() if line.endswith("serverside-applied")]
    assert len(applied) == len(docs) - len(CRDS[overlay]), out

    # What the server stored is what we rendered (nothing pruned or rejected on the way).
    stored = yaml.safe_load(
        await kubectl("get", "deployment/federation-manager", "-n", "federation-system", "-o", "yaml")
    )
    container = stored["spec"]["template"]["spec"]["containers"][0]
    rendered = _deployment(docs)["spec"]["template"]["spec"]["containers"][0]
    for key, value in rendered.items():  # a real server adds defaults; nothing of ours may change
        assert container[key] == value, key
    args = container["args"]
    assert set(args) == MANAGER_FLAGS | MODE_FLAGS[overlay]
    assert len(args) == len(set(args)), "a flag is given twice"
    assert args[0] == "run"
    probes = {container["livenessProbe"]["httpGet"]["path"], container["readinessProbe"]["httpGet"]["path"]}
    assert probes == {"/healthz", "/readyz"}
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"metrics": 8080, "health": 8081}
    for kind, name in (("serviceaccount", "federation-manager"), ("service", "federation-manager-metrics")):
        await kubectl("get", f"{kind}/{name}", "-n", "federation-system")
    if "--enable-cell-controllers" in args:
        site = yaml.safe_load(
            await kubectl("get", "configmap/federation-site", "-n", "federation-system", "-o", "yaml")
        )
        assert set(site["data"]) == {"site-name", "city-code"}


async def test_cell_overlays_differ_only_in_site_name_and_city_code(kubectl: Kubectl) -> None:
    dfw = await kubectl("kustomize", str(REPO / "overlays/cell-dfw"))
    lhr = await kubectl("kustomize", str(REPO / "overlays/cell-lhr"))
    assert dfw != lhr

    def normalise(text: str, site: str, city: str) -> str:
        return text.replace(site, "<SITE>").replace(city, "<CITY>")

    assert normalise(dfw, "cell-dfw", "DFW") == normalise(lhr, "cell-lhr", "LHR")
    site_maps = [
        next(d for d in load_docs(text) if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "federation-site")
        for text in (dfw, lhr)
    ]
    assert [m["data"] for m in site_maps] == [
        {"site-name": "cell-dfw", "city-code": "DFW"},
        {"site-name": "cell-lhr", "city-code": "LHR"},
    ]
    # The sources say the same: one overlay per site, the same file but for two values.
    sources = [(REPO / f"overlays/cell-{s}/kustomization.yaml").read_text() for s in ("dfw", "lhr")]
    assert normalise(sources[0], "cell-dfw", "DFW").replace("dfw", "<site>") == normalise(
        sources[1], "cell-lhr", "LHR"
    ).replace("lhr", "<site>")


async def test_samples_are_accepted_next_to_the_all_in_one_install(
    apiserver: EmbeddedAPIServer, kubectl: Kubectl
) -> None:
    await apply_crds_first(kubectl, await render(kubectl, "overlays/all-in-one"))
    samples = await render(kubectl, "config/samples")
    assert {d["kind"] for d in samples} == {
        "Workload",
        "WorkloadDeployment",
        "ClusterProfile",
        "Secret",
        "ResourceBudget",
        "Location",
    }
    out = await kubectl("apply", "--server-side", "-f", "-", stdin=dump_docs(samples))
    assert out.count("serverside-applied") == len(samples)
    profile = yaml.safe_load(await kubectl("get", "clusterprofile/cell-nrt", "-n", "federation-system", "-o", "yaml"))
    assert profile["metadata"]["labels"]["compute.datumapis.com/cluster-role"] == "cell"
    assert profile["metadata"]["labels"]["topology.datum.net/city-code"] == "NRT"
    secret_name = profile["metadata"]["annotations"]["compute.datumapis.com/kubeconfig-secret"]
    secret = yaml.safe_load(await kubectl("get", f"secret/{secret_name}", "-n", "federation-system", "-o", "yaml"))
    assert set(secret["data"]) == {"kubeconfig"}
    assert "api-edge-dfw" in await kubectl("get", "workloaddeployments", "-n", "default")


# ------------------------------------------------------------------------ RBAC


def _rules(docs: list[dict[str, Any]], kind: str, name: str) -> list[dict[str, Any]]:
    (role,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    rules: list[dict[str, Any]] = role["rules"]
    return rules


def allows(rules: list[dict[str, Any]], group: str, resource: str, verb: str) -> bool:
    return any(
        group in r.get("apiGroups", []) and resource in r.get("resources", []) and verb in r.get("verbs", [])
        for r in rules
    )


async def test_rbac_has_no_wildcards_and_names_subresources(kubectl: Kubectl) -> None:
    roles = []
    for overlay in OVERLAYS:
        roles += [d for d in await render(kubectl, f"overlays/{overlay}") if d["kind"] in {"Role", "ClusterRole"}]
    assert roles
    for role in roles:
        for rule in role["rules"]:
            for key in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"):
                assert not any("*" in value for value in rule.get(key, [])), (role["metadata"]["name"], rule)
            assert (
                "escalate" not in rule["verbs"] and "bind" not in rule["verbs"] and "impersonate" not in rule["verbs"]
            )
            # Subresources are granted by name, never implied by the parent resource.
            for resource in rule["resources"]:
                if "/" in resource:
                    assert resource.split("/")[1] in {"status", "finalizers", "scale"}, resource


async def test_management_role_reads_registrations_and_nothing_it_does_not_need(kubectl: Kubectl) -> None:
    docs = await render(kubectl, "overlays/management")
    rules = _rules(docs, "ClusterRole", "federation-manager-management")
    for verb in ("get", "list", "watch"):
        assert allows(rules, "multicluster.x-k8s.io", "clusterprofiles", verb)
    assert not allows(rules, "multicluster.x-k8s.io", "clusterprofiles", "delete")
    assert allows(rules, "", "events", "create") and allows(rules, "", "events", "patch")
    # Credentials are readable only in the manager's namespace.
    assert not any("secrets" in r["resources"] for r in rules)
    secrets = _rules(docs, "Role", "federation-manager-kubeconfig-reader")
    assert allows(secrets, "", "secrets", "get") and not allows(secrets, "", "secrets", "create")
    assert not any(
        allows(rules, "", "pods", v) or allows(rules, "compute.datumapis.com", "instances", v)
        for v in ("get", "create")
    )
    lease = _rules(docs, "Role", "federation-manager-leader-election")
    for verb in ("get", "create", "update"):
        assert allows(lease, "coordination.k8s.io", "leases", verb)
    assert not allows(lease, "coordination.k8s.io", "leases", "delete")
    bindings = {d["metadata"]["name"]: d for d in docs if d["kind"] in {"RoleBinding", "ClusterRoleBinding"}}
    for binding in bindings.values():
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "federation-manager", "namespace": "federation-system"}
        ]


async def test_cell_role_covers_the_cell_controllers(kubectl: Kubectl) -> None:
    docs = await render(kubectl, "overlays/cell-dfw")
    rules = _rules(docs, "ClusterRole", "federation-manager-cell")
    compute = "compute.datumapis.com"
    for verb in ("get", "list", "watch", "update", "patch"):
        assert allows(rules, compute, "workloaddeployments", verb)
    assert not allows(rules, compute, "workloaddeployments", "create")  # the federator creates them
    for verb in ("get", "list", "watch", "create", "update", "patch", "delete"):
        assert allows(rules, compute, "instances", verb)
        assert allows(rules, "autoscaling", "horizontalpodautoscalers", verb)
    for sub in ("workloaddeployments/status", "instances/status"):
        assert allows(rules, compute, sub, "update") and allows(rules, compute, sub, "patch")
    for sub in ("workloaddeployments/finalizers", "instances/finalizers"):
        assert allows(rules, compute, sub, "update")
    for verb in ("get", "list", "watch", "create", "delete"):
        assert allows(rules, "", "pods", verb)
    assert allows(rules, "", "namespaces", "watch") and not allows(rules, "", "namespaces", "create")
    assert allows(rules, "", "events", "create")
    quota = "quota.compute.datumapis.com"  # QuotaGate: claims created, budgets only read, verdicts and usage written
    for verb in ("get", "list", "watch", "create"):
        assert allows(rules, quota, "resourceclaims", verb)
    assert not allows(rules, quota, "resourceclaims", "delete")  # they go with their Instance
    assert allows(rules, quota, "resourcebudgets", "watch") and not allows(rules, quota, "resourcebudgets", "update")
    for sub in ("resourceclaims/status", "resourcebudgets/status"):
        assert allows(rules, quota, sub, "patch")
    # referenced data: cell mode only lists and watches companions (names cached), never gets or writes them
    for kind in ("secrets", "configmaps"):
        assert allows(rules, "", kind, "list") and allows(rules, "", kind, "watch")
        for verb in ("get", "create", "update", "patch", "delete"):
            assert not allows(rules, "", kind, verb), (kind, verb)
    # The roles a cell grants to the management identity ship too, unbound.
    access = _rules(docs, "ClusterRole", "federation-manager-cell-access")
    assert allows(access, compute, "workloaddeployments", "create") and allows(access, "", "namespaces", "create")
    for verb in ("create", "update", "patch", "delete"):  # companions, written and reclaimed in the cells
        assert allows(access, "", "secrets", verb) and allows(access, "", "configmaps", verb)
    assert not allows(access, compute, "instances", "update")
    assert not [d for d in docs if d["kind"] == "ClusterRoleBinding" and "access" in d["metadata"]["name"]]


async def test_project_access_role_is_what_the_projector_and_federator_need(kubectl: Kubectl) -> None:
    docs = await render(kubectl, "overlays/all-in-one")
    project = _rules(docs, "ClusterRole", "federation-manager-project-access")
    compute = "compute.datumapis.com"
    assert allows(project, compute, "instances", "create")
    assert allows(project, compute, "instances/status", "update")
    # The projector removes a projection whose cell Instance is gone (DESIGN §3 Projector).
    assert allows(project, compute, "instances", "delete")
    # Namespaces are only read (for their UID); nothing cluster-scoped is written in a project.
    assert allows(project, "", "namespaces", "get")
    for verb in ("create", "update", "patch", "delete"):
        assert not allows(project, "", "namespaces", verb)
    # referenced data: ConfigMaps and Secrets are read in the project, never written
    for kind in ("secrets", "configmaps"):
        assert allows(project, "", kind, "get") and allows(project, "", kind, "watch")
        for verb in ("create", "update", "patch", "delete"):
            assert not allows(project, "", kind, verb), (kind, verb)
    assert not any(r["apiGroups"] == ["rbac.authorization.k8s.io"] for r in project)
    bound = {d["roleRef"]["name"] for d in docs if d["kind"] == "ClusterRoleBinding"}
    assert bound == {
        "federation-manager-management",
        "federation-manager-cell",
        "federation-manager-cell-access",
        "federation-manager-project-access",
    }


# ------------------------------------------------------------- kustomize shape


def test_optional_pieces_are_kustomize_components() -> None:
    components = sorted(p.name for p in (REPO / "config/components").iterdir() if p.is_dir())
    assert components == ["cell-controllers", "leader-election", "management-controllers", "metrics"]
    for name in components:
        doc = yaml.safe_load((REPO / "config/components" / name / "kustomization.yaml").read_text())
        assert (doc["apiVersion"], doc["kind"]) == ("kustomize.config.k8s.io/v1alpha1", "Component"), name


def test_deployment_runs_the_image_the_dockerfile_builds() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    deployment = yaml.safe_load((REPO / "config/manager/deployment.yaml").read_text())
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    entrypoint = re.search(r'^ENTRYPOINT \["([^"]+)"\]', dockerfile, re.M)
    assert entrypoint is not None
    assert container["command"] == [entrypoint.group(1)]
    assert entrypoint.group(1) in pyproject["project"]["scripts"]
    name, tag = container["image"].split(":")
    assert name == "federation-manager" and tag == pyproject["project"]["version"]
    assert f"{name}:{tag}" in dockerfile  # the build instructions name the tag the Deployment pulls
    # Every package the project ships is copied into the image.
    packages = {p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]}
    copied = set(re.findall(r"^COPY (\w+) \./\1$", dockerfile, re.M))
    assert copied == packages
    user = re.search(r"^USER (\d+)", dockerfile, re.M)
    assert user is not None and int(user.group(1)) != 0  # numeric, so runAsNonRoot can check it
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True


@pytest.mark.parametrize("overlay", OVERLAYS)
async def test_manager_command_line_of_each_overlay_is_accepted_by_the_manager(
    kubectl: Kubectl, overlay: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rendered args, environment and config file, as the kubelet would hand them to
    `federation-manager run`, load into the manager's settings without error."""
    from federation import settings as manager_settings

    docs = await render(kubectl, f"overlays/{overlay}")
    container = _deployment(docs)["spec"]["template"]["spec"]["containers"][0]
    config_maps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    (config_name,) = [n for n in config_maps if n.startswith("federation-manager-config-")]  # hashed: rolls on change
    config_file = tmp_path / "config.yaml"
    config_file.write_text(config_maps[config_name]["data"]["config.yaml"])
    (volume,) = [v for v in _deployment(docs)["spec"]["template"]["spec"]["volumes"] if v["name"] == "config"]
    assert volume["configMap"]["name"] == config_name

    env = {"POD_NAMESPACE": "federation-system", "POD_NAME": "federation-manager-0"}
    for var in container["env"]:
        ref = var.get("valueFrom", {}).get("configMapKeyRef")
        if ref is not None:
            env[var["name"]] = config_maps[ref["name"]]["data"][ref["key"]]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in container["args"]]
    assert args[0] == "run"
    args = [f"--config={config_file}" if a.startswith("--config=") else a for a in args[1:]]

    parser = argparse.ArgumentParser()
    manager_settings.add_arguments(parser)
    loaded = manager_settings.load_settings(parser.parse_args(args))
    assert loaded.enable_management_controllers == ("--enable-management-controllers" in args)
    assert loaded.enable_cell_controllers == ("--enable-cell-controllers" in args)
    assert loaded.leader_elect and loaded.leader_election_namespace == "federation-system"
    assert (loaded.metrics_bind_address, loaded.health_probe_bind_address) == (":8080", ":8081")
    if loaded.enable_cell_controllers:
        assert loaded.feature_gates.enabled("PodRuntime")
        site = config_maps["federation-site"]["data"]
        assert (loaded.site_name, loaded.city_code) == (site["site-name"], site["city-code"])
