"""Built-in kinds the manager's own deployment manifests use: apps/v1 Deployments,
core Services and RBAC. They are stored and validated like kube-apiserver does; no
controller acts on them (the embedded plane runs no deployment controller; RBAC objects
are enforced only when the server runs with --authorization-mode=RBAC, see rbac.py)."""

from __future__ import annotations

import ipaddress
from typing import Any

from .builtin_schemas import POD_SPEC, any_, arr, b, conditions, i, int_or_string, keyed, obj, s, smap, top
from .builtins import age_col, default_pod_spec, name_col
from .errors import FieldError, invalid, required, unsupported
from .registry import Column, Obj, Registry, ResourceType, ScalePaths
from .selectors import label_selector_to_string, parse_label_selector

LABEL_SELECTOR = obj({"matchLabels": smap(), "matchExpressions": arr(any_())})
POD_TEMPLATE = obj({"metadata": obj({"labels": smap(), "annotations": smap()}), "spec": POD_SPEC})

DEPLOYMENT = top(
    {
        "spec": obj(
            {
                "replicas": i(),
                "selector": LABEL_SELECTOR,
                "template": POD_TEMPLATE,
                "strategy": any_(),
                "minReadySeconds": i(),
                "revisionHistoryLimit": i(),
                "paused": b(),
                "progressDeadlineSeconds": i(),
            }
        ),
        "status": obj(
            {
                "observedGeneration": i(),
                "replicas": i(),
                "updatedReplicas": i(),
                "readyReplicas": i(),
                "availableReplicas": i(),
                "unavailableReplicas": i(),
                "conditions": conditions(),
                "selector": s(),
            }
        ),
    }
)

SERVICE = top(
    {
        "spec": obj(
            {
                "ports": keyed(
                    obj({"name": s(), "port": i(), "targetPort": int_or_string(), "protocol": s(), "nodePort": i()}),
                    "port",
                    "protocol",
                ),
                "selector": {**smap(), "x-kubernetes-map-type": "atomic"},
                "type": s(),
                "clusterIP": s(),
                "clusterIPs": arr(s()),
            }
        ),
        "status": any_(),
    }
)

RULE = obj(
    {
        "apiGroups": arr(s()),
        "resources": arr(s()),
        "verbs": arr(s()),
        "resourceNames": arr(s()),
        "nonResourceURLs": arr(s()),
    }
)
ROLE = top({"rules": arr(RULE), "aggregationRule": any_()})
BINDING = top({"subjects": arr(any_()), "roleRef": obj({"apiGroup": s(), "kind": s(), "name": s()})})


# ------------------------------------------------------------------ deployments


def _deployment_prepare(obj_: Obj, _old: Obj | None) -> None:
    spec = obj_.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    spec.setdefault(
        "strategy", {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    )
    template_spec = (spec.get("template") or {}).get("spec")
    if isinstance(template_spec, dict):
        default_pod_spec(template_spec)  # the pod template gets a pod's defaults


def _deployment_validate(obj_: Obj, old: Obj | None) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = obj_.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    replicas = spec.get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        errs.append(invalid("spec.replicas", replicas, "must be greater than or equal to 0"))
    selector = spec.get("selector")
    if not isinstance(selector, dict) or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        errs.append(required("spec.selector"))
        return errs
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if not parse_label_selector(label_selector_to_string(selector)).matches(labels):
        errs.append(invalid("spec.template.metadata.labels", labels, "`selector` does not match template `labels`"))
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers")
    if not containers:
        errs.append(required("spec.template.spec.containers"))
    for idx, container in enumerate(containers or []):
        if not isinstance(container, dict) or not container.get("name"):
            errs.append(required(f"spec.template.spec.containers[{idx}].name"))
        elif not container.get("image"):
            errs.append(required(f"spec.template.spec.containers[{idx}].image"))
    if old is not None and (old.get("spec") or {}).get("selector") != selector:
        errs.append(invalid("spec.selector", selector, "field is immutable"))
    return errs


def _ready(o: Obj) -> str:
    status = o.get("status") or {}
    return f"{status.get('readyReplicas', 0)}/{(o.get('spec') or {}).get('replicas', 0)}"


# ------------------------------------------------------------------ services


class _ClusterIPs:
    def __init__(self) -> None:
        self.network = ipaddress.ip_network("10.96.0.0/12")
        self.next = 1

    def allocate(self) -> str:
        addr = self.network.network_address + self.next
        self.next += 1
        return str(addr)


def _service_prepare(allocator: _ClusterIPs) -> Any:
    def prepare(obj_: Obj, old: Obj | None) -> None:
        spec = obj_.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
                if "port" in port:
                    port.setdefault("targetPort", port["port"])
        if old is not None:
            old_spec = old.get("spec") or {}
            if old_spec.get("clusterIP"):
                spec["clusterIP"] = old_spec["clusterIP"]
                spec["clusterIPs"] = old_spec.get("clusterIPs", [old_spec["clusterIP"]])
        elif spec.get("type") == "ExternalName":
            spec.pop("clusterIP", None)  # a DNS alias: no virtual IP is allocated
            spec.pop("clusterIPs", None)
        elif spec.get("clusterIP") != "None" and not spec.get("clusterIP"):
            ip = allocator.allocate()
            spec["clusterIP"] = ip
            spec["clusterIPs"] = [ip]
        obj_.setdefault("status", {"loadBalancer": {}})

    return prepare


def _service_validate(obj_: Obj, _old: Obj | None) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = obj_.get("spec") or {}
    types = ["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"]
    if spec.get("type") not in types:
        errs.append(unsupported("spec.type", spec.get("type"), types))
    ports = spec.get("ports") or []
    if not ports and spec.get("type") != "ExternalName" and spec.get("clusterIP") != "None":
        errs.append(required("spec.ports"))
    for idx, port in enumerate(ports):
        value = port.get("port") if isinstance(port, dict) else None
        if not isinstance(value, int) or not 1 <= value <= 65535:
            errs.append(invalid(f"spec.ports[{idx}].port", value, "must be between 1 and 65535, inclusive"))
        if len(ports) > 1 and isinstance(port, dict) and not port.get("name"):
            errs.append(required(f"spec.ports[{idx}].name"))
    return errs


def _binding_validate(obj_: Obj, old: Obj | None) -> list[FieldError]:
    ref = obj_.get("roleRef")
    if not isinstance(ref, dict) or not ref.get("name") or not ref.get("kind"):
        return [required("roleRef")]
    if old is not None and old.get("roleRef") != ref:
        return [invalid("roleRef", ref, "cannot change roleRef")]
    return []


def register_apps(registry: Registry) -> None:
    allocator = _ClusterIPs()
    registry.add(
        ResourceType(
            "apps",
            "v1",
            "deployments",
            "deployment",
            "Deployment",
            namespaced=True,
            short_names=("deploy",),
            categories=("all",),
            subresources=("status", "scale"),
            has_generation=True,
            generation_counts_annotations=True,
            schema=DEPLOYMENT,
            scale=ScalePaths(".spec.replicas", ".status.replicas", ".spec.selector"),
            prepare_create=_deployment_prepare,
            prepare_update=_deployment_prepare,
            validate=_deployment_validate,
            columns=(
                name_col(),
                Column("Ready", "string", "Ready/desired", _ready),
                Column(
                    "Up-to-date",
                    "integer",
                    "Updated replicas",
                    lambda o: (o.get("status") or {}).get("updatedReplicas", 0),
                ),
                Column(
                    "Available",
                    "integer",
                    "Available replicas",
                    lambda o: (o.get("status") or {}).get("availableReplicas", 0),
                ),
                age_col(),
            ),
        )
    )
    registry.add(
        ResourceType(
            "",
            "v1",
            "services",
            "service",
            "Service",
            namespaced=True,
            short_names=("svc",),
            categories=("all",),
            subresources=("status",),
            schema=SERVICE,
            prepare_create=_service_prepare(allocator),
            prepare_update=_service_prepare(allocator),
            validate=_service_validate,
            name_rule="label",
            columns=(
                name_col(),
                Column("Type", "string", "Service type", lambda o: o["spec"].get("type", "")),
                Column("Cluster-IP", "string", "Cluster IP", lambda o: o["spec"].get("clusterIP", "")),
                Column(
                    "Port(s)",
                    "string",
                    "Ports",
                    lambda o: ",".join(
                        f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in o["spec"].get("ports") or []
                    ),
                ),
                age_col(),
            ),
        )
    )
    rbac = "rbac.authorization.k8s.io"
    for plural, kind, namespaced, schema in (
        ("roles", "Role", True, ROLE),
        ("clusterroles", "ClusterRole", False, ROLE),
        ("rolebindings", "RoleBinding", True, BINDING),
        ("clusterrolebindings", "ClusterRoleBinding", False, BINDING),
    ):
        registry.add(
            ResourceType(
                rbac,
                "v1",
                plural,
                kind.lower(),
                kind,
                namespaced=namespaced,
                schema=schema,
                name_rule="path",  # ValidateRBACName: any path segment ("system:discovery")
                validate=_binding_validate if "bindings" in plural else None,
                columns=(
                    name_col(),
                    Column(
                        "Created At", "string", "Creation time", lambda o: o["metadata"].get("creationTimestamp", "")
                    ),
                ),
            )
        )
