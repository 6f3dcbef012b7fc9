"""The built-in resource types and their strategies (defaulting, validation, status
handling, table columns), modelled on the kube-apiserver registry for each kind."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from .builtin_schemas import SCHEMAS
from .errors import FieldError, bad_request, forbidden, invalid, required, unsupported
from .meta import human_age
from .registry import Column, Obj, Registry, ResourceType
from .validation import dns1123_label_errors, qualified_name_errors

NAME = "Name"


def name_col() -> Column:
    return Column(
        NAME, "string", "Name must be unique within a namespace.", lambda o: o["metadata"]["name"], format="name"
    )


def age_col() -> Column:
    return Column(
        "Age",
        "string",
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
        lambda o: human_age(o["metadata"].get("creationTimestamp")),
    )


def _len(*fields: str) -> Any:
    return lambda o: sum(len(o.get(f) or {}) for f in fields)


# ------------------------------------------------------------------ namespaces

METADATA_NAME_LABEL = "kubernetes.io/metadata.name"


def _ns_prepare_create(obj: Obj, _old: Obj | None) -> None:
    obj["spec"] = {"finalizers": ["kubernetes"]}
    obj["status"] = {"phase": "Active"}
    obj["metadata"].setdefault("labels", {})[METADATA_NAME_LABEL] = obj["metadata"]["name"]


def _ns_prepare_update(obj: Obj, old: Obj | None) -> None:
    assert old is not None
    # spec.finalizers change only through /finalize; status only through /status
    obj["spec"] = old.get("spec", {})
    obj["status"] = old.get("status", {})
    obj["metadata"].setdefault("labels", {})[METADATA_NAME_LABEL] = obj["metadata"]["name"]


# ------------------------------------------------------------------ configmaps / secrets

_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def _key_errors(data: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if data is None:
        return errs
    if not isinstance(data, dict):
        return [invalid(path, data, "must be a map of string keys to string values")]
    for key, value in data.items():
        if len(key) > 253 or not _CONFIG_KEY.match(key):
            errs.append(
                invalid(
                    path,
                    key,
                    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
                    "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
                    "'[-._a-zA-Z0-9]+')",
                )
            )
        if not isinstance(value, str):
            errs.append(invalid(f"{path}[{key}]", value, "must be a string"))
    return errs


def _immutable_errors(obj: Obj, old: Obj | None, fields: tuple[str, ...]) -> list[FieldError]:
    if old is None or not old.get("immutable"):
        return []
    errs = []
    if not obj.get("immutable"):
        errs.append(forbidden("immutable", "field is immutable when `immutable` is set"))
    for field in fields:
        if obj.get(field) != old.get(field):
            errs.append(forbidden(field, "field is immutable when `immutable` is set"))
    return errs


def _configmap_validate(obj: Obj, old: Obj | None) -> list[FieldError]:
    errs = _key_errors(obj.get("data"), "data") + _key_errors(obj.get("binaryData"), "binaryData")
    for key in set(obj.get("data") or {}) & set(obj.get("binaryData") or {}):
        errs.append(invalid("data", key, "duplicate of key present in binaryData"))
    for key, value in (obj.get("binaryData") or {}).items():
        _check_base64(value, f"binaryData.{key}")
    return errs + _immutable_errors(obj, old, ("data", "binaryData"))


def _check_base64(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise bad_request(f"{where}: illegal base64 data: not a string")
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise bad_request(f"illegal base64 data in {where}: {exc}") from None


def _secret_prepare(obj: Obj, _old: Obj | None) -> None:
    obj.setdefault("type", "Opaque")
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict):
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            if isinstance(value, str):
                data[key] = base64.b64encode(value.encode()).decode()
    for key, value in (obj.get("data") or {}).items():
        _check_base64(value, f"data.{key}")


def _secret_validate(obj: Obj, old: Obj | None) -> list[FieldError]:
    errs = _key_errors(obj.get("data"), "data")
    if old is not None and old.get("type") != obj.get("type"):
        errs.append(invalid("type", obj.get("type"), "field is immutable"))
    return errs + _immutable_errors(obj, old, ("data",))


# ------------------------------------------------------------------ pods

_RESTART = ("Always", "OnFailure", "Never")


def _pod_prepare_create(obj: Obj, _old: Obj | None) -> None:
    spec = obj.setdefault("spec", {})
    default_pod_spec(spec)
    spec.setdefault("priority", 0)  # the Priority admission plugin's doing, so pods only (not templates)
    obj["status"] = {"phase": "Pending", "qosClass": _qos(spec)}


def default_pod_spec(spec: Obj) -> None:
    """SetDefaults_PodSpec and SetDefaults_Container: what a pod or pod template gets."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            if not isinstance(container, dict):
                continue
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            image = container.get("image") or ""
            tag = image.rsplit("/", 1)[-1]
            latest = "@" not in image and (":" not in tag or tag.endswith(":latest"))
            container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
            container.setdefault("resources", {})
            for port in container.get("ports") or []:
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")


def _qos(spec: Obj) -> str:
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    res = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in res):
        return "BestEffort"
    guaranteed = all(
        r.get("limits") and all(r.get("requests", r["limits"]).get(k) == v for k, v in r["limits"].items()) for r in res
    )
    return "Guaranteed" if guaranteed else "Burstable"


def _pod_prepare_update(obj: Obj, old: Obj | None) -> None:
    assert old is not None
    obj["status"] = old.get("status", {})


_MUTABLE_POD_SPEC = (
    "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    "`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)


def _pod_validate(obj: Obj, old: Obj | None) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    containers = spec.get("containers")
    if not containers:
        errs.append(required("spec.containers"))
    names: set[str] = set()
    for group in ("initContainers", "containers"):
        for idx, container in enumerate(spec.get(group) or []):
            path = f"spec.{group}[{idx}]"
            if not isinstance(container, dict):
                errs.append(invalid(path, container, "must be an object"))
                continue
            name = container.get("name")
            if not name:
                errs.append(required(f"{path}.name"))
            else:
                errs.extend(invalid(f"{path}.name", name, m) for m in dns1123_label_errors(str(name)))
                if name in names:
                    errs.append(FieldError("Duplicate value", f"{path}.name", "", name, True))
                names.add(name)
            if not container.get("image"):
                errs.append(required(f"{path}.image"))
    if spec.get("restartPolicy") not in _RESTART:
        errs.append(unsupported("spec.restartPolicy", spec.get("restartPolicy"), list(_RESTART)))
    if old is not None and not errs:
        errs.extend(_pod_update_errors(spec, old.get("spec") or {}))
    return errs


def _pod_update_errors(spec: Obj, old_spec: Obj) -> list[FieldError]:
    def scrub(s: Obj) -> Obj:
        out = dict(s)
        for key in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds", "schedulingGates"):
            out.pop(key, None)
        for group in ("containers", "initContainers"):
            out[group] = [
                {k: v for k, v in c.items() if k != "image"} for c in (s.get(group) or []) if isinstance(c, dict)
            ]
        if old_spec.get("nodeName") is None:
            out.pop("nodeName", None)  # binding sets it once
        return out

    if scrub(spec) != scrub(old_spec):
        return [forbidden("spec", f"pod updates may not change fields other than {_MUTABLE_POD_SPEC}")]
    if old_spec.get("nodeName") and spec.get("nodeName") != old_spec.get("nodeName"):
        return [forbidden("spec.nodeName", "field is immutable")]
    return []


def pod_ready_text(obj: Obj) -> str:
    statuses = (obj.get("status") or {}).get("containerStatuses") or []
    total = len((obj.get("spec") or {}).get("containers") or [])
    ready = sum(1 for c in statuses if isinstance(c, dict) and c.get("ready"))
    return f"{ready}/{total}"


def pod_status_text(obj: Obj) -> str:
    status = obj.get("status") or {}
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for c in status.get("containerStatuses") or []:
        state = (c or {}).get("state") or {}
        if state.get("waiting", {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated", {}).get("reason"):
            reason = state["terminated"]["reason"]
    if obj["metadata"].get("deletionTimestamp"):
        reason = "Terminating"
    return str(reason)


def pod_restarts(obj: Obj) -> int:
    statuses = (obj.get("status") or {}).get("containerStatuses") or []
    return sum(int((c or {}).get("restartCount") or 0) for c in statuses)


# ------------------------------------------------------------------ events


def _event_object(involved: Any) -> str:
    if not isinstance(involved, dict):
        return ""
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


def _event_last_seen(obj: Obj) -> str:
    ts = obj.get("lastTimestamp") or obj.get("eventTime") or obj["metadata"].get("creationTimestamp")
    return human_age(ts)


EVENT_FIELDS_V1_TO_CORE = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
EVENT_FIELDS_CORE_TO_V1 = {v: k for k, v in EVENT_FIELDS_V1_TO_CORE.items()}


def event_to_events_v1(obj: Obj) -> Obj:
    out = {EVENT_FIELDS_CORE_TO_V1.get(k, k): v for k, v in obj.items()}
    out["apiVersion"] = "events.k8s.io/v1"
    return out


def event_to_core(obj: Obj) -> Obj:
    out = {EVENT_FIELDS_V1_TO_CORE.get(k, k): v for k, v in obj.items()}
    out["apiVersion"] = "v1"
    return out


def _event_validate(obj: Obj, _old: Obj | None) -> list[FieldError]:
    """core/v1 Events: kube-apiserver's legacy event validation only (kept lax for old clients)."""
    errs: list[FieldError] = []
    ns = obj["metadata"].get("namespace") or ""
    involved = obj.get("involvedObject")
    involved_ns = str(involved.get("namespace") or "") if isinstance(involved, dict) else ""
    mismatch = invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
    if not obj.get("eventTime"):
        if (not involved_ns and ns not in ("", "default")) or (involved_ns and involved_ns != ns):
            errs.append(mismatch)
        return errs
    # "new" events (with an eventTime) must say who reported what
    if not involved_ns and ns not in ("default", "kube-system"):
        errs.append(mismatch)
    controller = str(obj.get("reportingComponent") or "")
    if not controller:
        errs.append(required("reportingController"))
    errs.extend(invalid("reportingController", controller, m) for m in qualified_name_errors(controller))
    for key, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128)):
        value = str(obj.get(key) or "")
        if not value:
            errs.append(required(key))
        elif len(value) > limit:
            errs.append(invalid(key, "", f"can have at most {limit} characters"))
    if len(str(obj.get("message") or "")) > 1024:
        errs.append(invalid("message", "", "can have at most 1024 characters"))
    return errs


# fields an events.k8s.io/v1 client may not change once written (error paths use the core names)
_EVENT_IMMUTABLE = (
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "type",
    "eventTime",
    "action",
    "related",
    "reportingComponent",
    "reportingInstance",
)


def _events_v1_validate(obj: Obj, old: Obj | None) -> list[FieldError]:
    """events.k8s.io/v1 Events: the legacy rules plus the strict ones of the new API."""
    errs = _event_validate(obj, old)
    if old is not None:
        for key in _EVENT_IMMUTABLE:
            if obj.get(key) != old.get(key):
                path = "reportingController" if key == "reportingComponent" else key
                errs.append(invalid(path, obj.get(key), "field is immutable"))
        return errs
    if not obj.get("eventTime"):
        errs.append(required("eventTime"))
    etype = obj.get("type") or ""
    if etype not in ("Normal", "Warning"):
        errs.append(invalid("type", "", f"has invalid value: {etype}"))
    for key in ("firstTimestamp", "lastTimestamp", "count"):
        if obj.get(key):
            errs.append(invalid(key, "", "needs to be unset"))
    source = obj.get("source")
    if isinstance(source, dict) and (source.get("component") or source.get("host")):
        errs.append(invalid("source", "", "needs to be unset"))
    series = obj.get("series")
    if isinstance(series, dict):
        if not isinstance(series.get("count"), int) or series["count"] < 2:
            errs.append(invalid("series.count", "", "should be at least 2"))
        if not series.get("lastObservedTime"):
            errs.append(required("series.lastObservedTime"))
    return errs


EVENT_FIELD_SELECTORS = frozenset(
    {
        "metadata.name",
        "metadata.namespace",
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    }
)


def event_columns() -> tuple[Column, ...]:
    return (
        Column("Last Seen", "string", "Time of the last occurrence", _event_last_seen),
        Column("Type", "string", "Normal or Warning", lambda o: o.get("type", "")),
        Column("Reason", "string", "Why the event was emitted", lambda o: o.get("reason", "")),
        Column(
            "Object",
            "string",
            "The object the event is about",
            lambda o: _event_object(o.get("involvedObject") or o.get("regarding")),
        ),
        Column(
            "Message",
            "string",
            "Human-readable description",
            lambda o: str(o.get("message") or o.get("note") or "").strip(),
        ),
        Column(
            "Count",
            "integer",
            "How often it occurred",
            lambda o: o.get("count") or o.get("deprecatedCount") or 1,
            priority=1,
        ),
        Column(NAME, "string", "Name of the event", lambda o: o["metadata"]["name"], priority=1, format="name"),
    )


# ------------------------------------------------------------------ HPA


def _hpa_prepare_create(obj: Obj, _old: Obj | None) -> None:
    obj["status"] = {"currentReplicas": 0, "desiredReplicas": 0}


def _hpa_validate(obj: Obj, _old: Obj | None) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    ref = spec.get("scaleTargetRef")
    if not isinstance(ref, dict):
        errs.append(required("spec.scaleTargetRef"))
    else:
        for key in ("kind", "name"):
            if not ref.get(key):
                errs.append(required(f"spec.scaleTargetRef.{key}"))
    max_r = spec.get("maxReplicas")
    min_r = spec.get("minReplicas", 1)
    if not isinstance(max_r, int) or isinstance(max_r, bool):
        errs.append(required("spec.maxReplicas"))
    elif isinstance(min_r, int):
        if min_r < 1:
            errs.append(invalid("spec.minReplicas", min_r, "must be greater than or equal to 1"))
        if max_r < min_r:
            errs.append(invalid("spec.maxReplicas", max_r, "must be greater than or equal to `minReplicas`"))
    for idx, metric in enumerate(spec.get("metrics") or []):
        if not isinstance(metric, dict) or not metric.get("type"):
            errs.append(required(f"spec.metrics[{idx}].type", "must specify a metric source type"))
    return errs


def _hpa_targets(obj: Obj) -> str:
    """`<current>/<target>` per metric, as `kubectl get hpa` shows."""
    metrics = (obj.get("spec") or {}).get("metrics") or []
    current = (obj.get("status") or {}).get("currentMetrics") or []
    parts = []
    for idx, metric in enumerate(metrics):
        target = _metric_value(metric, "target")
        have = _metric_value(current[idx], "current") if idx < len(current) else None
        parts.append(f"{have or '<unknown>'}/{target or '<unset>'}")
    return ", ".join(parts) or "<none>"


def _metric_value(metric: Any, which: str) -> str | None:
    """The value inside e.g. {"type": "Resource", "resource": {"target": {"averageUtilization": 80}}}."""
    if not isinstance(metric, dict):
        return None
    source = metric.get(str(metric.get("type", "")).lower()[:1] + str(metric.get("type", ""))[1:])
    values = (source or {}).get(which) if isinstance(source, dict) else None
    if not isinstance(values, dict):
        return None
    for key in ("averageUtilization", "averageValue", "value"):
        if key in values:
            return f"{values[key]}%" if key == "averageUtilization" else str(values[key])
    return None


# ------------------------------------------------------------------ leases / nodes


def _lease_validate(obj: Obj, _old: Obj | None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    dur = spec.get("leaseDurationSeconds")
    if dur is not None and (not isinstance(dur, int) or dur <= 0):
        return [invalid("spec.leaseDurationSeconds", dur, "must be greater than 0")]
    return []


def _node_status(obj: Obj) -> str:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return "Ready" if cond.get("status") == "True" else "NotReady"
    return "Unknown"


# ------------------------------------------------------------------ registration


def register_builtins(registry: Registry) -> None:
    core: list[ResourceType] = [
        ResourceType(
            "",
            "v1",
            "namespaces",
            "namespace",
            "Namespace",
            namespaced=False,
            short_names=("ns",),
            subresources=("status", "finalize"),
            name_rule="label",
            schema=SCHEMAS["Namespace"],
            columns=(
                name_col(),
                Column(
                    "Status",
                    "string",
                    "The status of the namespace",
                    lambda o: (o.get("status") or {}).get("phase", ""),
                ),
                age_col(),
            ),
            field_selectors=frozenset({"metadata.name", "status.phase"}),
            prepare_create=_ns_prepare_create,
            prepare_update=_ns_prepare_update,
            return_deleted_object=True,
        ),
        ResourceType(
            "",
            "v1",
            "configmaps",
            "configmap",
            "ConfigMap",
            namespaced=True,
            short_names=("cm",),
            schema=SCHEMAS["ConfigMap"],
            validate=_configmap_validate,
            columns=(name_col(), Column("Data", "integer", "Number of keys", _len("data", "binaryData")), age_col()),
        ),
        ResourceType(
            "",
            "v1",
            "secrets",
            "secret",
            "Secret",
            namespaced=True,
            schema=SCHEMAS["Secret"],
            prepare_create=_secret_prepare,
            prepare_update=_secret_prepare,
            validate=_secret_validate,
            field_selectors=frozenset({"metadata.name", "metadata.namespace", "type"}),
            columns=(
                name_col(),
                Column("Type", "string", "The type of the secret", lambda o: o.get("type", "")),
                Column("Data", "integer", "Number of keys", _len("data")),
                age_col(),
            ),
        ),
        ResourceType(
            "",
            "v1",
            "serviceaccounts",
            "serviceaccount",
            "ServiceAccount",
            namespaced=True,
            short_names=("sa",),
            subresources=("token",),  # TokenRequest (kubeplane.reviews), answered, never stored
            schema=SCHEMAS["ServiceAccount"],
            columns=(name_col(), age_col()),
        ),
        ResourceType(
            "",
            "v1",
            "resourcequotas",
            "resourcequota",
            "ResourceQuota",
            namespaced=True,
            short_names=("quota",),
            subresources=("status",),
            schema=SCHEMAS["ResourceQuota"],
            columns=(name_col(), age_col()),
        ),
        ResourceType(
            "",
            "v1",
            "limitranges",
            "limitrange",
            "LimitRange",
            namespaced=True,
            short_names=("limits",),
            schema=SCHEMAS["LimitRange"],
            columns=(name_col(), age_col()),
        ),
        ResourceType(
            "",
            "v1",
            "pods",
            "pod",
            "Pod",
            namespaced=True,
            short_names=("po",),
            categories=("all",),
            subresources=("status",),
            schema=SCHEMAS["Pod"],
            prepare_create=_pod_prepare_create,
            prepare_update=_pod_prepare_update,
            validate=_pod_validate,
            return_deleted_object=True,
            field_selectors=frozenset(
                {
                    "metadata.name",
                    "metadata.namespace",
                    "spec.nodeName",
                    "spec.restartPolicy",
                    "spec.schedulerName",
                    "spec.serviceAccountName",
                    "status.phase",
                    "status.podIP",
                    "status.nominatedNodeName",
                }
            ),
            columns=(
                name_col(),
                Column(
                    "Ready",
                    "string",
                    "The aggregate readiness state of this pod for accepting traffic.",
                    pod_ready_text,
                ),
                Column("Status", "string", "The aggregate status of the containers in this pod.", pod_status_text),
                Column(
                    "Restarts",
                    "string",
                    "The number of times the containers in this pod have been restarted",
                    lambda o: str(pod_restarts(o)),
                ),
                age_col(),
                Column(
                    "IP",
                    "string",
                    "The IP address assigned to the pod",
                    lambda o: (o.get("status") or {}).get("podIP", "<none>"),
                    priority=1,
                ),
                Column(
                    "Node",
                    "string",
                    "The node the pod is assigned to",
                    lambda o: (o.get("spec") or {}).get("nodeName", "<none>"),
                    priority=1,
                ),
            ),
        ),
        ResourceType(
            "",
            "v1",
            "nodes",
            "node",
            "Node",
            namespaced=False,
            short_names=("no",),
            subresources=("status",),
            schema=SCHEMAS["Node"],
            return_deleted_object=True,
            field_selectors=frozenset({"metadata.name", "spec.unschedulable"}),
            columns=(
                name_col(),
                Column("Status", "string", "Node readiness", _node_status),
                age_col(),
                Column(
                    "Version",
                    "string",
                    "Kubelet version",
                    lambda o: ((o.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", ""),
                ),
            ),
        ),
        ResourceType(
            "",
            "v1",
            "events",
            "event",
            "Event",
            namespaced=True,
            short_names=("ev",),
            schema=SCHEMAS["Event"],
            validate=_event_validate,
            field_selectors=EVENT_FIELD_SELECTORS,
            columns=event_columns(),
        ),
    ]
    for rt in core:
        registry.add(rt)

    registry.add(
        ResourceType(
            "events.k8s.io",
            "v1",
            "events",
            "event",
            "Event",
            namespaced=True,
            short_names=("ev",),
            schema=SCHEMAS["Event.events.k8s.io"],
            storage_group="",
            storage_version="v1",
            to_served=event_to_events_v1,
            to_storage=event_to_core,
            validate=_events_v1_validate,
            field_selectors=EVENT_FIELD_SELECTORS
            | {
                f"regarding.{k}"
                for k in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
            }
            | {"reportingController"},
            columns=event_columns(),
        )
    )
    registry.add(
        ResourceType(
            "coordination.k8s.io",
            "v1",
            "leases",
            "lease",
            "Lease",
            namespaced=True,
            schema=SCHEMAS["Lease"],
            validate=_lease_validate,
            columns=(
                name_col(),
                Column(
                    "Holder",
                    "string",
                    "The holder of the lease",
                    lambda o: (o.get("spec") or {}).get("holderIdentity", ""),
                ),
                age_col(),
            ),
        )
    )
    registry.add(
        ResourceType(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            "horizontalpodautoscaler",
            "HorizontalPodAutoscaler",
            namespaced=True,
            short_names=("hpa",),
            categories=("all",),
            subresources=("status",),
            has_generation=True,
            schema=SCHEMAS["HorizontalPodAutoscaler"],
            prepare_create=_hpa_prepare_create,
            validate=_hpa_validate,
            columns=(
                name_col(),
                Column(
                    "Reference",
                    "string",
                    "The target of the autoscaler",
                    lambda o: "{kind}/{name}".format(
                        **{"kind": "", "name": "", **((o.get("spec") or {}).get("scaleTargetRef") or {})}
                    ),
                ),
                Column("Targets", "string", "Current and target metric values", _hpa_targets),
                Column(
                    "MinPods",
                    "string",
                    "Lower replica limit",
                    lambda o: str((o.get("spec") or {}).get("minReplicas", "<unset>")),
                ),
                Column(
                    "MaxPods", "integer", "Upper replica limit", lambda o: (o.get("spec") or {}).get("maxReplicas", 0)
                ),
                Column(
                    "Replicas",
                    "integer",
                    "Current replicas",
                    lambda o: (o.get("status") or {}).get("currentReplicas", 0),
                ),
                age_col(),
            ),
        )
    )
