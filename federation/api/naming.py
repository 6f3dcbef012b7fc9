"""Names derived by convention (DESIGN.md §2-§3), in one place so that the controller that
creates an object and the one that looks it up can never disagree."""

from __future__ import annotations

from .constants import Label


def workload_deployment_name(workload: str, placement: str, target: str) -> str:
    """`<workload>-<placement>-<lowercase target>`: one WorkloadDeployment per placement and
    target (a Location's name, or a city code)."""
    if not target:
        raise ValueError(f"placement target {target!r}: must not be empty")
    return f"{workload}-{placement}-{target.lower()}"


def instance_name(workload_deployment: str, ordinal: int) -> str:
    """`<deployment>-<ordinal>`, like a StatefulSet's Pods."""
    if ordinal < 0:
        raise ValueError(f"instance ordinal {ordinal!r}: must be >= 0")
    return f"{workload_deployment}-{ordinal}"


def downstream_namespace_name(project_namespace_uid: str) -> str:
    """`ns-<project namespace UID>`: where a project's deployments land in a cell.

    Keyed on the UID, not the name, so two projects with a `default` namespace never
    share a cell namespace, and a namespace recreated under the same name is a new one."""
    if not project_namespace_uid:
        raise ValueError(f"project namespace UID {project_namespace_uid!r}: must not be empty")
    return f"ns-{project_namespace_uid}"


def workload_deployment_selector(workload_deployment: str) -> str:
    """The serialized label selector a WorkloadDeployment publishes in `status.selector`
    (read by the scale subresource and the HorizontalPodAutoscaler)."""
    return f"{Label.WORKLOAD_DEPLOYMENT_NAME}={workload_deployment}"
