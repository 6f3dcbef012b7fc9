"""Small builders of the wire objects the cell-mode tests feed to the pure functions."""

from __future__ import annotations

from typing import Any


def cond(type_: str, status: str, reason: str, message: str = "", gen: int | None = 1) -> dict[str, Any]:
    """A condition as the API server stores it (observedGeneration omitted when gen is None)."""
    out: dict[str, Any] = {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2025-01-02T03:04:05Z",
    }
    if gen is not None:
        out["observedGeneration"] = gen
    return out


def instance(
    name: str = "web-0",
    *,
    generation: int = 1,
    gates: tuple[str, ...] = (),
    conditions: tuple[dict[str, Any], ...] = (),
    template_hash: str = "h1",
    deleting: bool = False,
    ready: bool | None = None,
    suspended: bool | None = None,
) -> dict[str, Any]:
    """An Instance; `ready=True/False` adds a Ready condition at the current generation;
    `suspended` sets status.suspended."""
    conds = list(conditions)
    if ready is not None:
        conds.append(
            cond("Ready", "True" if ready else "False", "Available" if ready else "Provisioning", gen=generation)
        )
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns-1",
        "uid": f"uid-{name}",
        "generation": generation,
        "creationTimestamp": "2025-01-02T03:00:00Z",
    }
    if deleting:
        meta["deletionTimestamp"] = "2025-01-02T03:05:00Z"
    return {
        "apiVersion": "compute.datumapis.com/v1alpha",
        "kind": "Instance",
        "metadata": meta,
        "spec": {
            "runtime": {
                "resources": {"instanceType": "datumcloud/d1-standard-2"},
                "sandbox": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
            "networkInterfaces": [{"network": {"name": "default"}}],
            "controller": {"templateHash": template_hash, "schedulingGates": [{"name": g} for g in gates]},
        },
        "status": {"conditions": conds, **({} if suspended is None else {"suspended": suspended})},
    }
