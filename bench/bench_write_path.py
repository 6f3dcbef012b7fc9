"""CPU per write inside the embedded API server (no HTTP): what one create or one merge
patch costs through the whole pipeline (decoding, defaulting, validation, CEL rules,
field management, commit, and the serialised form the answer is sent as). Best of
several rounds of process time, so the figure is stable on a noisy machine; rerun it
before and after touching the write path.

    python bench/bench_write_path.py            # 5 rounds of 5000 writes per case
    python bench/bench_write_path.py --smoke    # 2 rounds of 200
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import yaml
from harness import workload_deployment as fanout_wd

from kubeplane.objectapi import APPLY_PATCH, MERGE_PATCH, WriteOptions
from kubeplane.registry import ResourceType
from kubeplane.server import ControlPlane

WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["city"],
            "properties": {
                "city": {"type": "string", "minLength": 1},
                "minReplicas": {"type": "integer", "minimum": 0},
                "maxReplicas": {"type": "integer", "minimum": 0},
                "owner": {"type": "string"},
                "ports": {
                    "type": "array",
                    "maxItems": 8,
                    "items": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 15}}},
                },
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}
RULES = [
    {"rule": "self.minReplicas <= self.maxReplicas", "message": "minReplicas must not exceed maxReplicas"},
    {"rule": "self.city == self.city.upperAscii()", "message": "city codes are upper case"},
    {"rule": "self.ports.all(p, p.name.matches('^[a-z]+$'))", "message": "port names are lower case"},
    {"rule": "size(self.ports) <= 8"},
    {"rule": "has(self.owner) || self.maxReplicas < 10", "message": "large widgets need an owner"},
    {"rule": "self.city.size() == 3"},
]


def crd(name: str, with_rules: bool) -> dict[str, Any]:
    schema = orjson.loads(orjson.dumps(WIDGET_SCHEMA))
    if with_rules:
        schema["properties"]["spec"]["x-kubernetes-validations"] = RULES
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{name}.bench.example.com"},
        "spec": {
            "group": "bench.example.com",
            "scope": "Namespaced",
            "names": {"plural": name, "singular": name[:-1], "kind": name[:-1].capitalize()},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def custom_type(plane: ControlPlane, name: str, with_rules: bool) -> ResourceType:
    from kubeplane.crds import types_for

    crd_rt = plane.crds.crd_rt
    entry = plane.api.create(crd_rt, "", crd(name, with_rules), WriteOptions(field_manager="bench"))
    (rt,) = types_for(entry.obj)
    plane.registry.add(rt)
    return rt


WD_CRD = Path(__file__).resolve().parents[1] / "config/crd/compute/compute.datumapis.com_workloaddeployments.yaml"
WD_API_VERSION = "compute.datumapis.com/v1alpha"


def wd_type(plane: ControlPlane) -> ResourceType:
    """The WorkloadDeployment CRD the federation writes (its schema and CEL rules, as deployed)."""
    from kubeplane.crds import types_for

    crd_rt = plane.crds.crd_rt
    entry = plane.api.create(crd_rt, "", yaml.safe_load(WD_CRD.read_text()), WriteOptions(field_manager="bench"))
    (rt,) = [rt for rt in types_for(entry.obj) if rt.api_version == WD_API_VERSION]
    plane.registry.add(rt)
    return rt


def workload_deployment(i: int) -> dict[str, Any]:
    """A downstream copy as the federation applies it: bench_fanout's WD (`harness`), with
    the labels a copy carries; a fresh object (the template is shared between calls)."""
    body: dict[str, Any] = orjson.loads(orjson.dumps(fanout_wd(f"wd-{i}", "DFW", 2)))
    body["metadata"]["labels"] = {"app": "bench", "compute.datumapis.com/project": "p-1"}
    return body


def wd_status_patch(i: int) -> tuple[str, dict[str, Any], str]:
    """The status merge patch a cell (or the projector) sends for a WD."""
    condition = {
        "type": "Available",
        "status": "True",
        "reason": "ReplicasReady",
        "message": f"{i % 7}/2 instances ready",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "observedGeneration": 1,
    }
    status = {"observedGeneration": 1, "replicas": 2, "readyReplicas": i % 7, "conditions": [condition]}
    return MERGE_PATCH, {"status": status}, "status"


def wd_apply(i: int) -> tuple[str, dict[str, Any], str]:
    """The federation's apply of a copy with its replicas changed."""
    body = workload_deployment(i)
    body["spec"]["replicas"] = body["spec"]["scaleSettings"]["minReplicas"] = 3 + i % 5
    return APPLY_PATCH, body, ""


def configmap(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"c-{i}", "labels": {"bench": "x", "shard": str(i % 10)}},
        "data": {"payload": "x" * 400, "index": str(i)},
    }


def widget(kind: str) -> Callable[[int], dict[str, Any]]:
    def make(i: int) -> dict[str, Any]:
        return {
            "apiVersion": "bench.example.com/v1",
            "kind": kind,
            "metadata": {"name": f"w-{i}"},
            "spec": {
                "city": "DFW",
                "minReplicas": 1,
                "maxReplicas": 3,
                "owner": "team-a",
                "ports": [{"name": "http"}, {"name": "metrics"}],
            },
        }

    return make


def status_patch(i: int) -> tuple[str, dict[str, Any], str]:
    """A status merge patch as a controller sends it (to the status subresource)."""
    return (
        MERGE_PATCH,
        {"status": {"phase": "Ready", "observedGeneration": 1, "replicas": i % 7, "message": f"round {i}"}},
        "status",
    )


def spec_apply(kind: str) -> Callable[[int], tuple[str, dict[str, Any], str]]:
    """A server-side apply of the whole object by its owner, one spec field changed."""

    def make(i: int) -> tuple[str, dict[str, Any], str]:
        body = widget(kind)(i)
        body["spec"]["maxReplicas"] = 3 + i % 5
        return APPLY_PATCH, body, ""

    return make


def label_patch(i: int) -> tuple[str, dict[str, Any], str]:
    return MERGE_PATCH, {"metadata": {"labels": {"round": str(i)}}}, ""


Change = Callable[[int], tuple[str, dict[str, Any], str]]


def best_of(
    rounds: int,
    n: int,
    setup: Callable[[ControlPlane], tuple[ResourceType, Callable[[int], Any]]],
    change: Change | None,
    *,
    applied: bool = False,
) -> float:
    best = float("inf")
    for _ in range(rounds):
        plane = ControlPlane(kubelet=False, garbage_collector=False)
        rt, make = setup(plane)
        bodies = [orjson.dumps(make(i)) for i in range(n)]
        opts = WriteOptions(field_manager="bench")
        if change is not None:
            for body in bodies:
                if applied:  # created by the apply that later changes it, as a controller does
                    plane.api.patch(
                        rt, "default", orjson.loads(body)["metadata"]["name"], APPLY_PATCH, orjson.loads(body), opts
                    )
                else:
                    plane.api.create(rt, "default", orjson.loads(body), opts)
            changes = [change(i) for i in range(n)]
            encoded = [(ct, orjson.dumps(p), sub) for ct, p, sub in changes]
            start = time.process_time()
            for i, (ct, p, sub) in enumerate(encoded):
                name = orjson.loads(bodies[i])["metadata"]["name"]
                # `.raw`: the bytes the HTTP answer (and every watcher) needs; the store
                # serialises at commit (it refuses what it could not serve back), so a write
                # is measured with its serialisation wherever it happens
                _ = plane.api.patch(
                    rt, "default", name, ct, orjson.loads(p), WriteOptions(field_manager="bench"), subresource=sub
                ).raw
        else:
            start = time.process_time()
            for body in bodies:
                _ = plane.api.create(rt, "default", orjson.loads(body), opts).raw
        best = min(best, (time.process_time() - start) / n * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per case (the best is shown)")
    parser.add_argument("--writes", type=int, default=5000, help="writes per round")
    args = parser.parse_args()
    rounds, n = (2, 200) if args.smoke else (args.rounds, args.writes)

    def cm(plane: ControlPlane) -> tuple[ResourceType, Callable[[int], Any]]:
        rt = plane.registry.get("", "v1", "configmaps")
        assert rt is not None
        return rt, configmap

    def plain(plane: ControlPlane) -> tuple[ResourceType, Callable[[int], Any]]:
        return custom_type(plane, "widgets", False), widget("Widget")

    def ruled(plane: ControlPlane) -> tuple[ResourceType, Callable[[int], Any]]:
        return custom_type(plane, "gadgets", True), widget("Gadget")

    def wds(plane: ControlPlane) -> tuple[ResourceType, Callable[[int], Any]]:
        return wd_type(plane), workload_deployment

    print(
        f"embedded API server write path, CPU per write, best of {rounds} rounds of {n}"
        f"{' [smoke]' if args.smoke else ''}"
    )
    rows = [
        ("create ConfigMap (built-in, typed decoding)", best_of(rounds, n, cm, None)),
        ("create custom resource (schema, no rules)", best_of(rounds, n, plain, None)),
        (f"create custom resource ({len(RULES)} CEL rules)", best_of(rounds, n, ruled, None)),
        ("merge-patch labels of a ConfigMap", best_of(rounds, n, cm, label_patch)),
        (f"merge-patch labels of a custom resource ({len(RULES)} CEL rules)", best_of(rounds, n, ruled, label_patch)),
        (f"merge-patch status of a custom resource ({len(RULES)} CEL rules)", best_of(rounds, n, ruled, status_patch)),
        (
            f"apply a changed spec to a custom resource ({len(RULES)} CEL rules)",
            best_of(rounds, n, ruled, spec_apply("Gadget"), applied=True),
        ),
        ("create a WorkloadDeployment (its CRD, CEL rules)", best_of(rounds, n, wds, None)),
        ("merge-patch status of a WorkloadDeployment", best_of(rounds, n, wds, wd_status_patch)),
        ("apply a changed spec to a WorkloadDeployment", best_of(rounds, n, wds, wd_apply, applied=True)),
    ]
    for label, micros in rows:
        print(f"  {label:<62}{micros:8.1f} µs  ({1e6 / micros:,.0f}/s on one core)")
    print(
        f"  CEL rules cost per create: {rows[2][1] - rows[1][1]:.1f} µs "
        f"({rows[2][1] / rows[1][1]:.2f}x a rule-free custom resource)"
    )


if __name__ == "__main__":
    main()
