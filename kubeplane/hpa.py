"""HorizontalPodAutoscalers: autoscaling/v2 is the storage version; autoscaling/v1 (what
`kubectl autoscale` sends) is a converted view of the same objects, as in kube-apiserver.

v1 only has a CPU utilization target; everything v2 has beyond it rides in the
`autoscaling.alpha.kubernetes.io/*` annotations of the v1 form so a v1 round trip keeps
it. v2 defaulting applies on every write: minReplicas 1, and a CPU target of 80% when no
metric is given."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from .builtin_schemas import any_, i, obj, s, top
from .registry import Column, Obj, Preparer, Registry

METRICS = "autoscaling.alpha.kubernetes.io/metrics"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
CURRENT_METRICS = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
DEFAULT_CPU_UTILIZATION = 80

HPA_V1 = top(
    {
        "spec": obj(
            {
                "scaleTargetRef": obj({"apiVersion": s(), "kind": s(), "name": s()}),
                "minReplicas": i(),
                "maxReplicas": i(),
                "targetCPUUtilizationPercentage": i(),
            }
        ),
        "status": obj(
            {
                "observedGeneration": i(),
                "lastScaleTime": s(),
                "currentReplicas": i(),
                "desiredReplicas": i(),
                "currentCPUUtilizationPercentage": i(),
                "conditions": any_(),
            }
        ),
    }
)


def _cpu_target(metric: Any) -> int | None:
    if not isinstance(metric, dict) or metric.get("type") != "Resource":
        return None
    resource = metric.get("resource") or {}
    target = resource.get("target") or {}
    if resource.get("name") == "cpu" and target.get("type") == "Utilization":
        value = target.get("averageUtilization")
        return value if isinstance(value, int) else None
    return None


def _cpu_current(metric: Any) -> int | None:
    if not isinstance(metric, dict) or metric.get("type") != "Resource":
        return None
    resource = metric.get("resource") or {}
    value = (resource.get("current") or {}).get("averageUtilization")
    return value if resource.get("name") == "cpu" and isinstance(value, int) else None


def cpu_metric(utilization: int) -> Obj:
    return {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": utilization}},
    }


def v2_to_v1(hpa: Obj) -> Obj:
    out = {k: v for k, v in hpa.items() if k not in ("apiVersion", "spec", "status")}
    out = {"apiVersion": "autoscaling/v1", **out}
    meta = dict(hpa["metadata"])
    annotations = dict(meta.get("annotations") or {})
    spec2 = hpa.get("spec") or {}
    spec1: Obj = {k: spec2[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec2}
    others = []
    for metric in spec2.get("metrics") or []:
        cpu = _cpu_target(metric)
        if cpu is not None and "targetCPUUtilizationPercentage" not in spec1:
            spec1["targetCPUUtilizationPercentage"] = cpu
        else:
            others.append(metric)
    if others:
        annotations[METRICS] = orjson.dumps(others).decode()
    if spec2.get("behavior"):
        annotations[BEHAVIOR] = orjson.dumps(spec2["behavior"]).decode()
    out["spec"] = spec1
    if "status" in hpa:
        status2 = hpa["status"] or {}
        status1: Obj = {
            k: status2[k]
            for k in ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas")
            if k in status2
        }
        current_others = []
        for metric in status2.get("currentMetrics") or []:
            cpu = _cpu_current(metric)
            if cpu is not None and "currentCPUUtilizationPercentage" not in status1:
                status1["currentCPUUtilizationPercentage"] = cpu
            else:
                current_others.append(metric)
        if current_others:
            annotations[CURRENT_METRICS] = orjson.dumps(current_others).decode()
        if status2.get("conditions"):
            annotations[CONDITIONS] = orjson.dumps(status2["conditions"]).decode()
        out["status"] = status1
    if annotations:
        meta["annotations"] = annotations
    out["metadata"] = meta
    return out


def v1_to_v2(hpa: Obj) -> Obj:
    out = {k: v for k, v in hpa.items() if k not in ("apiVersion", "spec", "status")}
    out = {"apiVersion": "autoscaling/v2", **out}
    meta = dict(hpa.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    spec1 = hpa.get("spec") or {}
    spec2: Obj = {k: spec1[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec1}
    metrics: list[Any] = []
    if isinstance(spec1.get("targetCPUUtilizationPercentage"), int):
        metrics.append(cpu_metric(spec1["targetCPUUtilizationPercentage"]))
    metrics.extend(_annotation_list(annotations.pop(METRICS, None)))
    if metrics:
        spec2["metrics"] = metrics
    behavior = annotations.pop(BEHAVIOR, None)
    if behavior:
        spec2["behavior"] = orjson.loads(behavior)
    out["spec"] = spec2
    if "status" in hpa:
        status1 = hpa["status"] or {}
        status2: Obj = {
            k: status1[k]
            for k in ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas")
            if k in status1
        }
        current: list[Any] = []
        if isinstance(status1.get("currentCPUUtilizationPercentage"), int):
            current.append(
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "current": {"averageUtilization": status1["currentCPUUtilizationPercentage"]},
                    },
                }
            )
        current.extend(_annotation_list(annotations.pop(CURRENT_METRICS, None)))
        if current:
            status2["currentMetrics"] = current
        conditions = _annotation_list(annotations.pop(CONDITIONS, None))
        if conditions:
            status2["conditions"] = conditions
        out["status"] = status2
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out["metadata"] = meta
    return out


def _annotation_list(text: str | None) -> list[Any]:
    if not text:
        return []
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return []  # not ours to interpret: a malformed annotation carries no metrics
    return value if isinstance(value, list) else []


def default_v2(hpa: Obj) -> None:
    spec = hpa.setdefault("spec", {})
    if isinstance(spec, dict):
        spec.setdefault("minReplicas", 1)
        if not spec.get("metrics"):
            spec["metrics"] = [cpu_metric(DEFAULT_CPU_UTILIZATION)]


def _with_defaults(prepare: Preparer | None) -> Preparer:
    def run(hpa: Obj, old: Obj | None) -> None:
        if prepare is not None:
            prepare(hpa, old)
        default_v2(hpa)

    return run


def _v1_targets(hpa: Obj) -> str:
    target = (hpa.get("spec") or {}).get("targetCPUUtilizationPercentage")
    current = (hpa.get("status") or {}).get("currentCPUUtilizationPercentage")
    have = f"{current}%" if current is not None else "<unknown>"
    return f"cpu: {have}/{target}%" if target is not None else "<none>"


def install_hpa(registry: Registry) -> None:
    v2 = registry.get("autoscaling", "v2", "horizontalpodautoscalers")
    assert v2 is not None
    v2.prepare_create = _with_defaults(v2.prepare_create)
    v2.prepare_update = _with_defaults(v2.prepare_update)
    v1 = copy.copy(v2)
    v1.version = "v1"
    v1.schema = HPA_V1
    v1.storage_group, v1.storage_version = "autoscaling", "v2"
    v1.to_served, v1.to_storage = v2_to_v1, v1_to_v2
    # the v2 table, with the CPU-only target column a v1 object can fill
    targets = Column("Targets", "string", "Current and target CPU utilization", _v1_targets)
    v1.columns = tuple(targets if c.name == "Targets" else c for c in v2.columns)
    v1.extra = {}
    registry.add(v1)
