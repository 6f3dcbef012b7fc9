"""PodRuntime: a sandbox Instance as a Pod, and the Pod's state as Programmed / Available.

Contract (pure; wire dicts in and out):

`wants_pod(instance)`: a Pod should exist when the Instance has a sandbox runtime, no
scheduling gates left, is not suspended (`status.suspended`) and is not being deleted.

`pod_for(instance, namespace)`: the desired Pod, named like the Instance, controller-owned by
it (apiVersion `compute.datumapis.com/v1alpha`, kind `Instance`, its uid,
`blockOwnerDeletion`), labelled with the Instance's labels (so the WorkloadDeployment's
selector, and an HPA using it, finds the Pods), annotated with the runtime hash
(`TEMPLATE_HASH_ANNOTATION`: spec.controller.templateHash, or for an Instance nobody
templated a hash of its spec). Containers map field by field (name, image, command, args,
env, envFrom, resources; ports as containerPort/name/protocol); `imagePullSecrets` carry over;
`restartPolicy: Always`. Volume attachments are not realised by this runtime.

`pod_matches(desired, live)`: Pods are immutable, so a live Pod whose runtime hash or
controller uid differs from the desired one must be deleted and recreated, never patched.
A Pod with the Instance's name that no Instance controls is someone else's: the caller
checks ownership before deleting anything.

`conditions_from_pod(pod, generation, suspended=False)` → (Programmed, Available), each a
condition dict (type, status, reason, message, observedGeneration=generation), first match
wins:
- suspended: Programmed True/Programmed (the Instance keeps its placement, as upstream's
  providers keep it; only the process stops), Available False/Stopping while its Pod is
  still there, then False/Suspended.
- no Pod: Programmed False/PendingProgramming, Available False/Provisioning.
- otherwise Programmed True/Programmed (the runtime has everything it needs), and Available:
  terminating → False/Stopping; phase Failed → False/InstanceCrashing (the failed
  container's exit); Succeeded → False/Stopped; Pod Ready=True → True/Available; a
  container (init containers first) waiting or failed → the most blocking of
  ImagePullBackOff, ErrImagePull, InvalidImageName... → ImageUnavailable; CrashLoopBackOff
  or exited non-zero → InstanceCrashing; CreateContainerConfigError, CreateContainerError,
  RunContainerError, hook errors → ConfigurationError; other waiting (ContainerCreating...)
  → Provisioning; ties go to the first container. The message is the container's own,
  as `container <name>: <message>`. Then PodScheduled False → False/Provisioning with the
  scheduler's message; all containers running but the Pod not Ready → False/Starting;
  else False/Provisioning.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from federation.api.conditionjson import FALSE, TRUE, ConditionStatus
from federation.api.constants import API_VERSION, Kind
from federation.api.reasons import (
    InstanceAvailableReason,
    InstanceCondition,
    InstanceProgrammedReason,
    ready_reason_priority,
)
from mcruntime.fields import get_int, get_list, get_mapping, get_str, get_str_map, is_deleting

from .readiness import is_suspended, scheduling_gates
from .template import template_hash

TEMPLATE_HASH_ANNOTATION = "compute.datumapis.com/template-hash"

_IMAGE_UNAVAILABLE = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "ImageInspectError",
        "RegistryUnavailable",
        "SignatureValidationFailed",
    }
)
_CONFIGURATION_ERROR = frozenset(
    {
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
        "PreCreateHookError",
        "PreStartHookError",
        "PostStartHookError",
    }
)
_CRASHING = frozenset({"CrashLoopBackOff"})


# ------------------------------------------------------------------ desired Pod


def wants_pod(instance: Mapping[str, Any]) -> bool:
    """Whether the runtime should run a Pod for this Instance now."""
    has_sandbox = bool(get_mapping(instance, "spec.runtime.sandbox"))
    return has_sandbox and not scheduling_gates(instance) and not is_suspended(instance) and not is_deleting(instance)


def runtime_hash(instance: Mapping[str, Any]) -> str:
    """The hash a Pod of this Instance carries (and status.controller.observedTemplateHash reports)."""
    declared = get_str(instance, "spec.controller.templateHash", required=False)
    if declared:
        return declared
    spec = {k: v for k, v in get_mapping(instance, "spec", required=True).items() if k != "controller"}
    return template_hash({"spec": spec})


def _str_list(container: Mapping[str, Any], key: str, base: str) -> list[str]:
    values = get_list(container, key, base=base)
    if not all(isinstance(v, str) for v in values):
        raise ValueError(f"{base}.{key}: expected a list of strings, got {values!r}")
    return list(values)


def _ports(container: Mapping[str, Any], base: str) -> list[dict[str, Any]]:
    out = []
    for i, port in enumerate(get_list(container, "ports", base=base)):
        field = f"{base}.ports[{i}]"
        if not isinstance(port, Mapping):
            raise ValueError(f"{field}: expected an object, got {type(port).__name__}")
        number = get_int(port, "port", base=field)
        if number is None or not 1 <= number <= 65535:
            raise ValueError(f"{field}.port: expected a port number 1-65535, got {port.get('port')!r}")
        mapped: dict[str, Any] = {"containerPort": number, "name": get_str(port, "name", base=field)}
        protocol = get_str(port, "protocol", base=field, required=False)
        if protocol:
            mapped["protocol"] = protocol
        out.append(mapped)
    return out


def _container(container: Any, base: str) -> dict[str, Any]:
    if not isinstance(container, Mapping):
        raise ValueError(f"{base}: expected an object, got {type(container).__name__}")
    out: dict[str, Any] = {
        "name": get_str(container, "name", base=base),
        "image": get_str(container, "image", base=base),
    }
    for key in ("command", "args"):
        values = _str_list(container, key, base)
        if values:
            out[key] = values
    env = get_list(container, "env", base=base)
    if env:
        out["env"] = copy.deepcopy(env)
    env_from = get_list(container, "envFrom", base=base)
    if env_from:  # the kubelet resolves these from the namespace's companions (or refuses to start)
        out["envFrom"] = copy.deepcopy(env_from)
    ports = _ports(container, base)
    if ports:
        out["ports"] = ports
    resources = {
        key: dict(value)
        for key in ("limits", "requests")
        if (value := get_mapping(container, f"resources.{key}", base=base))
    }
    if resources:
        out["resources"] = resources
    return out


def pod_for(instance: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """The Pod that realises a sandbox Instance."""
    if not namespace:
        raise ValueError("namespace: required for the Pod")
    name = get_str(instance, "metadata.name")
    sandbox = get_mapping(instance, "spec.runtime.sandbox")
    if not sandbox:
        raise ValueError("spec.runtime.sandbox: required (the Pod runtime runs sandbox Instances only)")
    base = "spec.runtime.sandbox.containers"
    containers = [
        _container(c, f"{base}[{i}]")
        for i, c in enumerate(get_list(sandbox, "containers", base="spec.runtime.sandbox"))
    ]
    if not containers:
        raise ValueError(f"{base}: at least one container is required")
    spec: dict[str, Any] = {"containers": containers, "restartPolicy": "Always"}
    pull_secrets = get_list(sandbox, "imagePullSecrets", base="spec.runtime.sandbox")
    if pull_secrets:
        spec["imagePullSecrets"] = copy.deepcopy(pull_secrets)
    owner = {
        "apiVersion": API_VERSION,
        "kind": Kind.INSTANCE.value,
        "name": name,
        "uid": get_str(instance, "metadata.uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    metadata = {
        "name": name,
        "namespace": namespace,
        "labels": get_str_map(instance, "metadata.labels"),
        "annotations": {TEMPLATE_HASH_ANNOTATION: runtime_hash(instance)},
        "ownerReferences": [owner],
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def pod_template_hash(pod: Mapping[str, Any]) -> str | None:
    """The runtime hash a live Pod was made from (None when it carries none)."""
    return get_str_map(pod, "metadata.annotations").get(TEMPLATE_HASH_ANNOTATION)


def _controller_uid(obj: Mapping[str, Any]) -> str | None:
    for ref in get_list(obj, "metadata.ownerReferences"):
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            uid = ref.get("uid")
            return uid if isinstance(uid, str) else None
    return None


def pod_matches(desired: Mapping[str, Any], live: Mapping[str, Any]) -> bool:
    """Whether `live` is the Pod `desired` describes (else: delete and recreate it)."""
    return pod_template_hash(live) == pod_template_hash(desired) and _controller_uid(live) == _controller_uid(desired)


# ------------------------------------------------------------------ observed Pod


def _condition(type_: str, status: ConditionStatus, reason: str, message: str, generation: int) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message, "observedGeneration": generation}


def _classify_waiting(reason: str) -> str:
    if reason in _IMAGE_UNAVAILABLE:
        return InstanceAvailableReason.IMAGE_UNAVAILABLE.value
    if reason in _CRASHING:
        return InstanceAvailableReason.INSTANCE_CRASHING.value
    if reason in _CONFIGURATION_ERROR:
        return InstanceAvailableReason.CONFIGURATION_ERROR.value
    return InstanceAvailableReason.PROVISIONING.value


def _container_problem(status: Mapping[str, Any], base: str) -> tuple[str, str] | None:
    """(Available reason, message) for one container status, None when it is fine."""
    name = get_str(status, "name", base=base, required=False) or "?"
    waiting = get_mapping(status, "state.waiting", base=base)
    if waiting:
        raw = get_str(waiting, "reason", base=f"{base}.state.waiting", required=False) or "Waiting"
        message = get_str(waiting, "message", base=f"{base}.state.waiting", required=False) or raw
        return _classify_waiting(raw), f"container {name}: {message}"
    terminated = get_mapping(status, "state.terminated", base=base)
    if terminated:
        code = terminated.get("exitCode")
        if code != 0:
            why = get_str(terminated, "reason", base=f"{base}.state.terminated", required=False) or "Error"
            detail = get_str(terminated, "message", base=f"{base}.state.terminated", required=False)
            text = f"container {name}: exited with code {code} ({why})" + (f": {detail}" if detail else "")
            return InstanceAvailableReason.INSTANCE_CRASHING.value, text
    return None


def _worst_container_problem(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    worst: tuple[str, str] | None = None
    for key in ("initContainerStatuses", "containerStatuses"):
        for i, status in enumerate(get_list(pod, f"status.{key}")):
            base = f"status.{key}[{i}]"
            if not isinstance(status, Mapping):
                raise ValueError(f"{base}: expected an object, got {type(status).__name__}")
            problem = _container_problem(status, base)
            if problem and (worst is None or ready_reason_priority(problem[0]) > ready_reason_priority(worst[0])):
                worst = problem
    return worst


def _pod_condition(pod: Mapping[str, Any], type_: str) -> Mapping[str, Any]:
    for cond in get_list(pod, "status.conditions"):
        if isinstance(cond, Mapping) and cond.get("type") == type_:
            return cond
    return {}


def _available(pod: Mapping[str, Any], name: str) -> tuple[ConditionStatus, str, str]:
    phase = get_str(pod, "status.phase", required=False)
    if is_deleting(pod):
        return FALSE, InstanceAvailableReason.STOPPING.value, f"Pod {name} is terminating"
    if phase == "Failed":
        problem = _worst_container_problem(pod)
        message = problem[1] if problem else get_str(pod, "status.message", required=False) or f"Pod {name} failed"
        return FALSE, InstanceAvailableReason.INSTANCE_CRASHING.value, message
    if phase == "Succeeded":
        return FALSE, InstanceAvailableReason.STOPPED.value, f"all containers of Pod {name} exited"
    if _pod_condition(pod, "Ready").get("status") == TRUE:
        return TRUE, InstanceAvailableReason.AVAILABLE.value, f"Pod {name} is ready"
    problem = _worst_container_problem(pod)
    if problem:
        return FALSE, problem[0], problem[1]
    scheduled = _pod_condition(pod, "PodScheduled")
    if scheduled.get("status") == FALSE:
        message = scheduled.get("message") or f"Pod {name} is not scheduled"
        return FALSE, InstanceAvailableReason.PROVISIONING.value, str(message)
    if phase == "Running":
        message = _pod_condition(pod, "Ready").get("message") or f"Pod {name} is starting"
        return FALSE, InstanceAvailableReason.STARTING.value, str(message)
    return FALSE, InstanceAvailableReason.PROVISIONING.value, f"Pod {name} is pending"


def conditions_from_pod(
    pod: Mapping[str, Any] | None, generation: int, *, suspended: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(Programmed, Available) of the Instance whose Pod is `pod` (None: no Pod yet)."""
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
        raise ValueError(f"metadata.generation: expected an integer >= 0, got {generation!r}")
    programmed_type = InstanceCondition.PROGRAMMED.value
    available_type = InstanceCondition.AVAILABLE.value
    if suspended:
        kept = "suspended: the Instance keeps its placement; no Pod runs until it is resumed"
        if pod is not None:
            name = get_str(pod, "metadata.name")
            stopping = (InstanceAvailableReason.STOPPING.value, f"suspended: Pod {name} is stopping")
        else:
            stopping = (InstanceAvailableReason.SUSPENDED.value, "suspended: the Pod is stopped; the Instance stays")
        return (
            _condition(programmed_type, TRUE, InstanceProgrammedReason.PROGRAMMED.value, kept, generation),
            _condition(available_type, FALSE, *stopping, generation),
        )
    if pod is None:
        return (
            _condition(
                programmed_type, FALSE, InstanceProgrammedReason.PENDING_PROGRAMMING.value, "no Pod yet", generation
            ),
            _condition(
                available_type,
                FALSE,
                InstanceAvailableReason.PROVISIONING.value,
                "waiting for the Pod to be created",
                generation,
            ),
        )
    name = get_str(pod, "metadata.name")
    programmed = _condition(
        programmed_type, TRUE, InstanceProgrammedReason.PROGRAMMED.value, f"Pod {name} created", generation
    )
    status, reason, message = _available(pod, name)
    return programmed, _condition(available_type, status, reason, message, generation)
