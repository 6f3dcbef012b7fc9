"""A kubelet (and scheduler) stand-in for the embedded control plane.

It registers one Node, binds unscheduled pods to it (pods with scheduling gates stay
Pending with PodScheduled=False/SchedulingGated), and plays out what a kubelet would
report: ContainerCreating for `start_delay`, then Running with Ready and container
statuses; an image matching `unpullable_pattern` waits in ImagePullBackOff; one matching
`crashing_pattern` crash-loops (CrashLoopBackOff, restartCount growing on the kubelet's
doubling back-off; with restartPolicy Never the pod fails); a container whose env or
envFrom names a ConfigMap or Secret (or a key of one) that does not exist, and is not
optional, is not started: CreateContainerConfigError with kubelet's own message
(`secret "db" not found`, `couldn't find key password in Secret ns/db`), looked at again
on the kubelet's sync period (`config_retry`) until it is there. Deleting a bound pod is
graceful: the apiserver marks it with deletionTimestamp = now + grace, the kubelet stops
the containers (in `stop_seconds`, or the whole grace period for images matching
`slow_stop_pattern`, which ignore SIGTERM) and then deletes it with grace 0."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import time
from dataclasses import dataclass

import anyio

from .errors import APIError
from .follow import Follower
from .meta import now_rfc3339, rfc3339_in
from .objectapi import DeleteOptions, ObjectAPI, WriteOptions
from .registry import Obj, Registry, ResourceType
from .store import Entry

log = logging.getLogger(__name__)


@dataclass
class KubeletSettings:
    node_name: str = "embedded-node"
    start_delay: float = 0.2
    unpullable_pattern: str = r"(^|[/:])(unpullable|does-not-exist)([-:/@]|$)"
    crashing_pattern: str = r"(^|[/:])crash(ing|er)?([-:/@]|$)"
    slow_stop_pattern: str = r"(^|[/:])slow-stop([-:/@]|$)"
    crash_backoff: float = 10.0  # first restart delay; doubles per crash
    max_backoff: float = 300.0
    stop_seconds: float = 0.1  # how long well-behaved containers take to stop
    pod_cidr: str = "10.244.0.0/16"
    config_retry: float = 1.0  # a container waiting on a missing ConfigMap/Secret is retried this often


@dataclass
class _PodRecord:
    seen_at: float
    pod_ip: str
    started_at: str = ""
    stopping_since: float | None = None


class Kubelet:
    MANAGER = "kubelet"
    SCHEDULER = "default-scheduler"

    def __init__(self, api: ObjectAPI, registry: Registry, settings: KubeletSettings | None = None) -> None:
        self.api = api
        self.settings = settings or KubeletSettings()
        pods = registry.get("", "v1", "pods")
        nodes = registry.get("", "v1", "nodes")
        secrets = registry.get("", "v1", "secrets")
        configmaps = registry.get("", "v1", "configmaps")
        assert pods is not None and nodes is not None and secrets is not None and configmaps is not None
        self.secrets_rt: ResourceType = secrets
        self.configmaps_rt: ResourceType = configmaps
        self.pods_rt: ResourceType = pods
        self.nodes_rt: ResourceType = nodes
        self.follower = Follower(api.db, pods.storage_key, namespaced=True)
        self._records: dict[tuple[str, str], _PodRecord] = {}
        self._due: dict[tuple[str, str], float] = {}
        self._due_changed = asyncio.Event()
        self._ips = ipaddress.ip_network(self.settings.pod_cidr).hosts()
        next(self._ips)  # .1 is the node's gateway
        self._unpullable = re.compile(self.settings.unpullable_pattern)
        self._crashing = re.compile(self.settings.crashing_pattern)
        self._slow = re.compile(self.settings.slow_stop_pattern)

    # ------------------------------------------------------------------ deletion hook
    def graceful_delete(self, rt: ResourceType, entry: Entry, opts: DeleteOptions) -> Obj | Entry | None:
        """Pods on a node are marked with deletionTimestamp = now + grace; the kubelet finishes."""
        obj = entry.obj
        if not (obj.get("spec") or {}).get("nodeName"):
            return None  # never scheduled: nothing to stop, deleted at once
        grace = opts.grace_period
        if grace is None:
            grace = int((obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30))
        if grace <= 0:
            return None
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            current = meta.get("deletionGracePeriodSeconds")
            if isinstance(current, int) and grace >= current:
                return entry
        marked = entry.copy()
        marked["metadata"]["deletionTimestamp"] = rfc3339_in(grace)
        marked["metadata"]["deletionGracePeriodSeconds"] = grace
        return marked

    # ------------------------------------------------------------------ loop
    async def run(self) -> None:
        self._register_node()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._timer)
            try:
                async for keys in self.follower.changes():
                    for key in keys:
                        self._reconcile(key)
            finally:
                tg.cancel_scope.cancel()

    async def _timer(self) -> None:
        """Wakes the pods whose simulated next step (started, crashed, stopped) is due."""
        while True:
            self._due_changed.clear()
            now = time.monotonic()
            for key in [k for k, t in self._due.items() if t <= now]:
                del self._due[key]
                self._reconcile(key)
            if not self._due:
                await self._due_changed.wait()
                continue
            with anyio.move_on_after(max(0.0, min(self._due.values()) - time.monotonic())):
                await self._due_changed.wait()

    def _set_due(self, key: tuple[str, str], at: float) -> None:
        if self._due.get(key) != at:
            self._due[key] = at
            self._due_changed.set()

    def close(self) -> None:
        self.follower.close()

    def _register_node(self) -> None:
        store = self.api.store_for(self.nodes_rt)
        if store.get("", self.settings.node_name) is not None:
            return
        node = {
            "metadata": {
                "name": self.settings.node_name,
                "labels": {"kubernetes.io/hostname": self.settings.node_name, "kubernetes.io/os": "linux"},
            },
            "spec": {"podCIDR": self.settings.pod_cidr},
            "status": {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "kubelet is posting ready status",
                        "lastHeartbeatTime": now_rfc3339(),
                        "lastTransitionTime": now_rfc3339(),
                    },
                ],
                "addresses": [
                    {"type": "InternalIP", "address": "127.0.0.1"},
                    {"type": "Hostname", "address": self.settings.node_name},
                ],
                "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"},
                "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"},
                "nodeInfo": {
                    "kubeletVersion": "v1.32.0-kubeplane",
                    "operatingSystem": "linux",
                    "architecture": "amd64",
                    "containerRuntimeVersion": "kubeplane://0.1",
                },
            },
        }
        self.api.create(self.nodes_rt, "", node, WriteOptions(field_manager=self.MANAGER))

    # ------------------------------------------------------------------ per pod
    def _reconcile(self, key: tuple[str, str]) -> None:
        entry = self.api.store_for(self.pods_rt).get(*key)
        if entry is None:
            self._records.pop(key, None)
            self._due.pop(key, None)
            return
        try:
            self._step(key, entry)
        except APIError as exc:
            # a conflicting write by someone else: their change brings the pod back here
            log.debug("kubelet: pod %s/%s: %s", key[0], key[1], exc)

    def _step(self, key: tuple[str, str], entry: Entry) -> None:
        pod = entry.obj
        spec = pod.get("spec") or {}
        meta = pod["metadata"]
        node = spec.get("nodeName")
        if not node:
            if meta.get("deletionTimestamp"):
                return
            self._schedule(entry)
            return
        if node != self.settings.node_name:
            return
        now = time.monotonic()
        record = self._records.get(key)
        if record is None:
            record = self._records[key] = self._adopt(pod, now) or _PodRecord(seen_at=now, pod_ip=str(next(self._ips)))
        if meta.get("deletionTimestamp"):
            self._stop(key, entry, record, now)
            return
        status, next_change = self._desired_status(pod, record, now)
        if next_change is not None:
            self._set_due(key, next_change)
        if _status_differs(pod.get("status") or {}, status):
            new = entry.copy()
            new["status"] = status
            self.api.commit_internal(self.pods_rt, entry, new, self.MANAGER, subresource="status")

    def _adopt(self, pod: Obj, now: float) -> _PodRecord | None:
        """A pod this node already runs, seen first after a restart of the server with its
        objects kept (--data-dir): its containers kept running, as they do when a real
        kubelet restarts, so its IP and start time stay and nothing is rewritten."""
        status = pod.get("status") or {}
        if not status.get("podIP"):
            return None
        started = ""
        for c in status.get("containerStatuses") or []:
            started = ((c.get("state") or {}).get("running") or {}).get("startedAt") or started
        return _PodRecord(seen_at=now - self.settings.start_delay, pod_ip=str(status["podIP"]), started_at=started)

    def _schedule(self, entry: Entry) -> None:
        pod = entry.obj
        gates = (pod.get("spec") or {}).get("schedulingGates")
        new = entry.copy()
        conds = [c for c in (new.get("status") or {}).get("conditions") or [] if c.get("type") != "PodScheduled"]
        if gates:
            cond = {
                "type": "PodScheduled",
                "status": "False",
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
                "lastProbeTime": None,
                "lastTransitionTime": now_rfc3339(),
            }
            old = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"]
            if old and old[0].get("reason") == "SchedulingGated":
                return
            new.setdefault("status", {})["conditions"] = [*conds, cond]
            self.api.commit_internal(self.pods_rt, entry, new, self.SCHEDULER, subresource="status")
            return
        new["spec"]["nodeName"] = self.settings.node_name
        bound = self.api.commit_internal(self.pods_rt, entry, new, self.SCHEDULER)
        after = bound.copy()
        after.setdefault("status", {})["conditions"] = [
            *conds,
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now_rfc3339()},
        ]
        self.api.commit_internal(self.pods_rt, bound, after, self.SCHEDULER, subresource="status")

    def _desired_status(self, pod: Obj, record: _PodRecord, now: float) -> tuple[Obj, float | None]:
        s = self.settings
        spec = pod.get("spec") or {}
        containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
        old = pod.get("status") or {}
        base: Obj = {
            "phase": "Pending",
            "conditions": _carry_conditions(old),
            "hostIP": "127.0.0.1",
            "podIP": record.pod_ip,
            "podIPs": [{"ip": record.pod_ip}],
            "startTime": old.get("startTime") or now_rfc3339(),
            "qosClass": old.get("qosClass", "BestEffort"),
        }
        ready_at = record.seen_at + s.start_delay
        if now < ready_at:
            base["containerStatuses"] = [_waiting(c, "ContainerCreating", "", 0, None) for c in containers]
            base["conditions"] = _conditions(
                base["conditions"],
                initialized=True,
                ready=False,
                reason="ContainersNotReady",
                names=[c.get("name", "") for c in containers],
            )
            return base, ready_at
        if not record.started_at:
            record.started_at = now_rfc3339()
        statuses = []
        next_change: float | None = None
        running = failed = 0
        not_ready: list[str] = []
        restart_policy = spec.get("restartPolicy", "Always")
        namespace = str(pod["metadata"].get("namespace") or "")
        for c in containers:
            image = str(c.get("image", ""))
            config_error = self._config_error(namespace, c)
            if config_error:
                statuses.append(_waiting(c, "CreateContainerConfigError", config_error, 0, None))
                not_ready.append(c.get("name", ""))
                retry = now + s.config_retry
                next_change = retry if next_change is None else min(next_change, retry)
            elif self._unpullable.search(image):
                statuses.append(_waiting(c, "ImagePullBackOff", f'Back-off pulling image "{image}"', 0, None))
                not_ready.append(c.get("name", ""))
            elif self._crashing.search(image):
                crashes, upcoming = _crash_schedule(ready_at, now, s.crash_backoff, s.max_backoff)
                last = {
                    "terminated": {
                        "exitCode": 1,
                        "reason": "Error",
                        "startedAt": record.started_at,
                        "finishedAt": record.started_at,
                    }
                }
                if restart_policy == "Never":
                    statuses.append(_terminated(c, 1, "Error"))
                    failed += 1
                else:
                    restarts = max(0, crashes - 1)
                    message = f"back-off {_backoff_text(restarts, s)} restarting failed container={c.get('name')}"
                    statuses.append(_waiting(c, "CrashLoopBackOff", message, restarts, last))
                    next_change = upcoming if next_change is None else min(next_change, upcoming)
                    running += 1
                not_ready.append(c.get("name", ""))
            else:
                statuses.append(_running(c, record.started_at))
                running += 1
        base["containerStatuses"] = statuses
        if failed and failed == len(containers):
            base["phase"] = "Failed"
        elif running:
            base["phase"] = "Running"
        ready = not not_ready
        base["conditions"] = _conditions(
            base["conditions"],
            initialized=True,
            ready=ready,
            reason="" if ready else "ContainersNotReady",
            names=not_ready,
        )
        return base, next_change

    def _source(self, kind: str, namespace: str, name: str) -> Obj | None:
        rt = self.secrets_rt if kind == "Secret" else self.configmaps_rt
        entry = self.api.store_for(rt).get(namespace, name)
        return None if entry is None else entry.obj

    def _config_error(self, namespace: str, container: Obj) -> str:
        """kubelet's message for the first ConfigMap/Secret (or key) the container's env
        needs and cannot have, "" when it has everything (optional ones may be missing)."""
        for env in container.get("env") or []:
            source = (env or {}).get("valueFrom") or {}
            for field, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
                ref = source.get(field)
                if not isinstance(ref, dict) or ref.get("optional") is True:
                    continue
                name, key = str(ref.get("name") or ""), str(ref.get("key") or "")
                obj = self._source(kind, namespace, name)
                if obj is None:
                    return f'{kind.lower()} "{name}" not found'
                if key not in (obj.get("data") or {}) and key not in (obj.get("binaryData") or {}):
                    return f"couldn't find key {key} in {kind} {namespace}/{name}"
        for env_from in container.get("envFrom") or []:
            for field, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
                ref = (env_from or {}).get(field)
                if isinstance(ref, dict) and ref.get("optional") is not True:
                    name = str(ref.get("name") or "")
                    if self._source(kind, namespace, name) is None:
                        return f'{kind.lower()} "{name}" not found'
        return ""

    def _stop(self, key: tuple[str, str], entry: Entry, record: _PodRecord, now: float) -> None:
        pod = entry.obj
        meta = pod["metadata"]
        grace = int(meta.get("deletionGracePeriodSeconds") or 0)
        images = [str(c.get("image", "")) for c in (pod.get("spec") or {}).get("containers") or []]
        stop_after = (
            float(grace) if any(self._slow.search(i) for i in images) else min(float(grace), self.settings.stop_seconds)
        )
        if record.stopping_since is None:
            record.stopping_since = now
        if now < record.stopping_since + stop_after:
            self._set_due(key, record.stopping_since + stop_after)
            return
        try:
            self.api.delete(self.pods_rt, key[0], key[1], DeleteOptions(grace_period=0, uid=meta.get("uid")))
        except APIError as exc:
            if exc.code != 404:
                raise


def _crash_schedule(first: float, now: float, base: float, cap: float) -> tuple[int, float]:
    """How many times a crash-looping container has crashed by `now`, and when it next will."""
    crashes = 0
    at = first
    delay = base
    while at <= now:
        crashes += 1
        at += delay
        delay = min(delay * 2, cap)
    return crashes, at


def _backoff_text(restarts: int, s: KubeletSettings) -> str:
    delay = min(s.crash_backoff * (2 ** max(0, restarts)), s.max_backoff)
    return f"{int(delay)}s"


def _container_base(c: Obj) -> Obj:
    image = str(c.get("image", ""))
    return {"name": c.get("name", ""), "image": image, "imageID": ""}


def _waiting(c: Obj, reason: str, message: str, restarts: int, last: Obj | None) -> Obj:
    out = _container_base(c)
    waiting: Obj = {"reason": reason}
    if message:
        waiting["message"] = message
    out.update(ready=False, started=False, restartCount=restarts, state={"waiting": waiting})
    if last is not None:
        out["lastState"] = last
    return out


def _running(c: Obj, started_at: str) -> Obj:
    out = _container_base(c)
    out.update(
        ready=True,
        started=True,
        restartCount=0,
        state={"running": {"startedAt": started_at}},
        containerID=f"kubeplane://{c.get('name', '')}",
    )
    return out


def _terminated(c: Obj, code: int, reason: str) -> Obj:
    out = _container_base(c)
    out.update(ready=False, started=False, restartCount=0, state={"terminated": {"exitCode": code, "reason": reason}})
    return out


def _carry_conditions(old: Obj) -> list[Obj]:
    return [c for c in old.get("conditions") or [] if isinstance(c, dict)]


def _conditions(existing: list[Obj], *, initialized: bool, ready: bool, reason: str, names: list[str]) -> list[Obj]:
    by_type = {c.get("type"): dict(c) for c in existing}

    def put(ctype: str, ok: bool, why: str = "", message: str = "") -> None:
        status = "True" if ok else "False"
        cond = by_type.get(ctype) or {"type": ctype}
        if cond.get("status") != status:
            cond["lastTransitionTime"] = now_rfc3339()
        cond.update(status=status, lastProbeTime=None)
        if why:
            cond["reason"] = why
            cond["message"] = message
        else:
            cond.pop("reason", None)
            cond.pop("message", None)
        by_type[ctype] = cond

    message = f"containers with unready status: [{' '.join(names)}]" if names else ""
    put("Initialized", initialized)
    put("Ready", ready, reason, message)
    put("ContainersReady", ready, reason, message)
    if "PodScheduled" not in by_type:
        put("PodScheduled", True)
    order = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    return sorted(by_type.values(), key=lambda c: order.index(c["type"]) if c.get("type") in order else 99)


def _status_differs(old: Obj, new: Obj) -> bool:
    def strip(status: Obj) -> Obj:
        out = dict(status)
        out["conditions"] = [
            {k: v for k, v in c.items() if k not in ("lastTransitionTime", "lastProbeTime")}
            for c in status.get("conditions") or []
        ]
        out.pop("startTime", None)
        return out

    return strip(old) != strip(new)
