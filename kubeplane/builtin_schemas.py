"""OpenAPI sketches of the built-in kinds the embedded server stores.

They carry what the server needs to behave like kube-apiserver: which lists are
associative and by which keys (strategic merge and server-side apply), which maps are
free-form, and the top-level fields strict field validation knows. Subtrees we do not
model keep unknown fields (`x-kubernetes-preserve-unknown-fields`)."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def s(**kw: Any) -> Obj:
    return {"type": "string", **kw}


def i(**kw: Any) -> Obj:
    return {"type": "integer", **kw}


def b() -> Obj:
    return {"type": "boolean"}


def any_() -> Obj:
    return {"x-kubernetes-preserve-unknown-fields": True}


def int_or_string() -> Obj:
    return {"x-kubernetes-int-or-string": True}


def obj(props: Obj | None = None, *, closed: bool = False, required: list[str] | None = None) -> Obj:
    out: Obj = {"type": "object", "properties": props or {}}
    if not closed:
        out["x-kubernetes-preserve-unknown-fields"] = True
    if required:
        out["required"] = required
    return out


def smap(values: Obj | None = None) -> Obj:
    return {"type": "object", "additionalProperties": values or s()}


def arr(items: Obj, **kw: Any) -> Obj:
    return {"type": "array", "items": items, **kw}


def keyed(items: Obj, *keys: str, strategy: str = "merge", patch_key: str | None = None) -> Obj:
    return {
        "type": "array",
        "items": items,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": list(keys),
        "x-kubernetes-patch-merge-key": patch_key or keys[0],
        "x-kubernetes-patch-strategy": strategy,
    }


def string_set(strategy: str | None = "merge") -> Obj:
    out: Obj = {"type": "array", "items": s(), "x-kubernetes-list-type": "set"}
    if strategy:
        out["x-kubernetes-patch-strategy"] = strategy
    return out


OWNER_REFERENCE = obj(
    {
        "apiVersion": s(),
        "kind": s(),
        "name": s(),
        "uid": s(),
        "controller": b(),
        "blockOwnerDeletion": b(),
    },
    closed=True,
)

OBJECT_META = obj(
    {
        "name": s(),
        "generateName": s(),
        "namespace": s(),
        "uid": s(),
        "resourceVersion": s(),
        "generation": i(),
        "creationTimestamp": s(),
        "deletionTimestamp": s(),
        "deletionGracePeriodSeconds": i(),
        "labels": smap(),
        "annotations": smap(),
        "ownerReferences": keyed(OWNER_REFERENCE, "uid"),
        "finalizers": string_set(),
        "managedFields": arr(any_()),
        "selfLink": s(),
    },
    closed=True,
)


def top(props: Obj) -> Obj:
    """A kind's root: apiVersion, kind, metadata plus its own fields (closed at the top)."""
    return obj({"apiVersion": s(), "kind": s(), "metadata": OBJECT_META, **props}, closed=True)


CONDITION = obj(
    {
        "type": s(),
        "status": s(),
        "reason": s(),
        "message": s(),
        "lastTransitionTime": s(),
        "lastProbeTime": s(),
        "lastHeartbeatTime": s(),
        "observedGeneration": i(),
    }
)


def conditions() -> Obj:
    return keyed(CONDITION, "type")


RESOURCES = obj({"limits": smap(int_or_string()), "requests": smap(int_or_string()), "claims": arr(any_())})

CONTAINER = obj(
    {
        "name": s(),
        "image": s(),
        "command": arr(s()),
        "args": arr(s()),
        "workingDir": s(),
        "env": keyed(obj({"name": s(), "value": s(), "valueFrom": any_()}), "name"),
        "envFrom": arr(any_()),
        "ports": keyed(
            obj({"containerPort": i(), "protocol": s(default="TCP"), "name": s(), "hostPort": i(), "hostIP": s()}),
            "containerPort",
            "protocol",
        ),
        "resources": RESOURCES,
        "volumeMounts": keyed(obj({"name": s(), "mountPath": s(), "readOnly": b(), "subPath": s()}), "mountPath"),
        "imagePullPolicy": s(),
        "terminationMessagePath": s(),
        "terminationMessagePolicy": s(),
        "livenessProbe": any_(),
        "readinessProbe": any_(),
        "startupProbe": any_(),
        "securityContext": any_(),
    }
)

POD_SPEC = obj(
    {
        "containers": keyed(CONTAINER, "name"),
        "initContainers": keyed(CONTAINER, "name"),
        "volumes": keyed(obj({"name": s()}), "name", strategy="merge,retainKeys"),
        "imagePullSecrets": keyed(obj({"name": s()}), "name"),
        "nodeSelector": {**smap(), "x-kubernetes-map-type": "atomic"},
        "nodeName": s(),
        "restartPolicy": s(),
        "terminationGracePeriodSeconds": i(),
        "activeDeadlineSeconds": i(),
        "dnsPolicy": s(),
        "serviceAccountName": s(),
        "schedulerName": s(),
        "priority": i(),
        "enableServiceLinks": b(),
        "tolerations": arr(any_()),
        "schedulingGates": keyed(obj({"name": s()}), "name"),
        "securityContext": any_(),
        "hostname": s(),
        "subdomain": s(),
    }
)

POD_STATUS = obj(
    {
        "phase": s(),
        "conditions": conditions(),
        "message": s(),
        "reason": s(),
        "hostIP": s(),
        "podIP": s(),
        "podIPs": keyed(obj({"ip": s()}), "ip"),
        "startTime": s(),
        "containerStatuses": arr(any_()),
        "initContainerStatuses": arr(any_()),
        "qosClass": s(),
    }
)

SCHEMAS: dict[str, Obj] = {
    "Namespace": top(
        {"spec": obj({"finalizers": arr(s())}), "status": obj({"phase": s(), "conditions": conditions()})}
    ),
    "ConfigMap": top({"data": smap(), "binaryData": smap(), "immutable": b()}),
    "Secret": top({"data": smap(), "stringData": smap(), "type": s(), "immutable": b()}),
    "ServiceAccount": top(
        {
            "secrets": keyed(obj({"name": s()}), "name"),
            "imagePullSecrets": arr(any_()),
            "automountServiceAccountToken": b(),
        }
    ),
    "ResourceQuota": top({"spec": any_(), "status": any_()}),
    "LimitRange": top({"spec": any_()}),
    "Pod": top({"spec": POD_SPEC, "status": POD_STATUS}),
    "Node": top(
        {
            "spec": obj({"podCIDR": s(), "unschedulable": b(), "taints": arr(any_()), "providerID": s()}),
            "status": obj(
                {
                    "conditions": conditions(),
                    "addresses": keyed(obj({"type": s(), "address": s()}), "type"),
                    "capacity": smap(int_or_string()),
                    "allocatable": smap(int_or_string()),
                    "nodeInfo": any_(),
                }
            ),
        }
    ),
    "Event": top(
        {
            "involvedObject": any_(),
            "reason": s(),
            "message": s(),
            "source": any_(),
            "firstTimestamp": s(),
            "lastTimestamp": s(),
            "count": i(),
            "type": s(),
            "eventTime": s(),
            "series": any_(),
            "action": s(),
            "related": any_(),
            "reportingComponent": s(),
            "reportingInstance": s(),
        }
    ),
    "Event.events.k8s.io": top(
        {
            "regarding": any_(),
            "related": any_(),
            "note": s(),
            "reason": s(),
            "type": s(),
            "action": s(),
            "eventTime": s(),
            "series": any_(),
            "reportingController": s(),
            "reportingInstance": s(),
            "deprecatedSource": any_(),
            "deprecatedFirstTimestamp": s(),
            "deprecatedLastTimestamp": s(),
            "deprecatedCount": i(),
        }
    ),
    "Lease": top(
        {
            "spec": obj(
                {
                    "holderIdentity": s(),
                    "leaseDurationSeconds": i(),
                    "acquireTime": s(),
                    "renewTime": s(),
                    "leaseTransitions": i(),
                    "strategy": s(),
                    "preferredHolder": s(),
                }
            )
        }
    ),
    "HorizontalPodAutoscaler": top(
        {
            "spec": obj(
                {
                    "scaleTargetRef": obj({"apiVersion": s(), "kind": s(), "name": s()}),
                    "minReplicas": i(),
                    "maxReplicas": i(),
                    "metrics": arr(any_()),
                    "behavior": any_(),
                }
            ),
            "status": obj(
                {
                    "observedGeneration": i(),
                    "lastScaleTime": s(),
                    "currentReplicas": i(),
                    "desiredReplicas": i(),
                    "currentMetrics": arr(any_()),
                    "conditions": conditions(),
                }
            ),
        }
    ),
    "CustomResourceDefinition": top(
        {
            "spec": obj(
                {
                    "group": s(),
                    "names": any_(),
                    "scope": s(),
                    "versions": arr(any_()),
                    "conversion": any_(),
                    "preserveUnknownFields": b(),
                }
            ),
            "status": obj({"conditions": conditions(), "acceptedNames": any_(), "storedVersions": arr(s())}),
        }
    ),
}
