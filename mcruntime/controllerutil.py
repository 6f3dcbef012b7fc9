"""The controller author's kit (controller-runtime's `controllerutil`): finalizers, owner
references, "apply only if the cached object differs" (saying what it did, like
controller-runtime's `OperationResult`), the exact delete, the one status write, and
running one reconcile's independent writes at once (`concurrently`).

Every helper makes at most one API request, and none when there is nothing to change:
at steady state a controller built from these sends no request at all."""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import orjson

from .client import Client, Preconditions
from .errors import APIError, is_not_found
from .fields import get_list, get_objects, get_str, get_str_map, is_object
from .objects import Obj
from .resources import Resource


class AlreadyOwnedError(ValueError):
    """The object already has a different controller (controller-runtime's AlreadyOwnedError)."""


# ---------------------------------------------------------------------- finalizers
# Finalizer writes never conflict with other writers of the object (a status writer bumps
# the resourceVersion all the time): adding is a server-side apply of the finalizer alone,
# under a field manager of its own (`metadata.finalizers` is a set, so each manager owns
# its entries and nobody else's is touched); removing is a JSON patch that tests the
# entry's position, so it removes exactly ours, whoever added it.


def has_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    return finalizer in get_list(obj, "metadata.finalizers")


def finalizer_field_manager(finalizer: str) -> str:
    return f"finalizer/{finalizer}"[:128]


def finalizer_wanted(obj: Mapping[str, Any], finalizer: str, *, annotations: Mapping[str, str] | None = None) -> bool:
    """Whether `add_finalizer(obj, finalizer, annotations=...)` would write (pure: no
    request): the finalizer is missing, or an annotation lacks its value."""
    if not has_finalizer(obj, finalizer):
        return True
    current = get_str_map(obj, "metadata.annotations")
    return any(current.get(k) != v for k, v in (annotations or {}).items())


async def add_finalizer(
    client: Client,
    resource: Resource,
    obj: Mapping[str, Any],
    finalizer: str,
    *,
    annotations: Mapping[str, str] | None = None,
) -> Obj:
    """Add `finalizer` to `obj` (as read, e.g. from the cache), with `annotations` in the
    same write; no request if the finalizer is there and every annotation already has its
    value. Returns the object after the change (the server's answer) or `obj` unchanged.
    The apply carries `obj`'s uid, a precondition: an object deleted (or deleted and made
    again) since it was read is a 409 Conflict, never created anew by the apply."""
    if not finalizer_wanted(obj, finalizer, annotations=annotations):
        return dict(obj)
    wanted = dict(annotations or {})
    intent: dict[str, Any] = {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": get_str(obj, "metadata.name", required=False), "finalizers": [finalizer]},
    }
    if wanted:
        intent["metadata"]["annotations"] = wanted
    if get_str(obj, "metadata.namespace", required=False):
        intent["metadata"]["namespace"] = get_str(obj, "metadata.namespace", required=False)
    if get_str(obj, "metadata.uid", required=False):
        intent["metadata"]["uid"] = get_str(obj, "metadata.uid", required=False)
    return await client.apply(resource, intent, field_manager=finalizer_field_manager(finalizer))


async def remove_finalizer(client: Client, resource: Resource, obj: Mapping[str, Any], finalizer: str) -> Obj | None:
    """Remove `finalizer`; no request if absent. Returns the object after the change, or
    None when the object is gone (this was its last finalizer, or it was already deleted).
    If the list changed since `obj` was read, a 409 Conflict is raised (retry quietly)."""
    if not has_finalizer(obj, finalizer):
        return dict(obj)
    index = list(get_list(obj, "metadata.finalizers")).index(finalizer)
    ops = [
        {"op": "test", "path": f"/metadata/finalizers/{index}", "value": finalizer},
        {"op": "remove", "path": f"/metadata/finalizers/{index}"},
    ]
    try:
        return await client.patch(
            resource,
            get_str(obj, "metadata.name", required=False),
            ops,
            namespace=get_str(obj, "metadata.namespace", required=False) or None,
            patch_type="json",
        )
    except APIError as exc:
        if is_not_found(exc):
            return None
        if exc.status == 422 and "test" in exc.message:
            raise APIError(
                409,
                "Conflict",
                f"finalizers of {get_str(obj, 'metadata.name', required=False)} changed meanwhile: {exc.message}",
            ) from exc
        raise


# ---------------------------------------------------------------------- owner references
def owner_reference(
    owner: Mapping[str, Any], *, controller: bool = False, block_owner_deletion: bool = False
) -> dict[str, Any]:
    """An ownerReference to a live object: its own apiVersion, kind, name and uid (a
    reference built from anything else, e.g. a controller name where the Kind belongs,
    is the bug that silently breaks cascading deletion)."""
    name, uid = get_str(owner, "metadata.name", required=False), get_str(owner, "metadata.uid", required=False)
    missing = [f for f, v in (("apiVersion", owner.get("apiVersion")), ("kind", owner.get("kind")),
                              ("metadata.name", name), ("metadata.uid", uid)) if not v]  # fmt: skip
    if missing:
        raise ValueError(f"an owner reference needs a live object with {', '.join(missing)}")
    ref: dict[str, Any] = {
        "apiVersion": str(owner["apiVersion"]),
        "kind": str(owner["kind"]),
        "name": name,
        "uid": uid,
    }
    if controller:
        ref["controller"] = True
    if block_owner_deletion:
        ref["blockOwnerDeletion"] = True
    return ref


def controller_reference(owner: Mapping[str, Any], *, block_owner_deletion: bool = True) -> dict[str, Any]:
    """The controller ownerReference to `owner` (controller=true, blockOwnerDeletion)."""
    return owner_reference(owner, controller=True, block_owner_deletion=block_owner_deletion)


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in get_objects(obj, "metadata.ownerReferences"):
        if is_object(ref) and ref.get("controller"):
            return ref
    return None


def is_controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == get_str(owner, "metadata.uid", required=False)


def set_controller_reference(owner: Mapping[str, Any], obj: dict[str, Any]) -> None:
    """Make `owner` the controller of `obj` (in place). Raises AlreadyOwnedError when
    another object already controls it: a controller never adopts what it does not own."""
    ref = controller_reference(owner)
    current = controller_of(obj)
    if current is not None and current.get("uid") != ref["uid"]:
        raise AlreadyOwnedError(
            f"{obj.get('kind', 'object')} {get_str(obj, 'metadata.name', required=False)!r} is already controlled by "
            f"{current.get('kind')} {current.get('name')!r} (uid {current.get('uid')})"
        )
    refs = [r for r in get_objects(obj, "metadata.ownerReferences") if r.get("uid") != ref["uid"]]
    obj.setdefault("metadata", {})["ownerReferences"] = [*refs, ref]


# ---------------------------------------------------------------------- apply if differs
def is_subset(desired: Any, actual: Any) -> bool:
    """Whether everything `desired` states is already true of `actual`: the server-side
    apply reading of an intent. Maps compare key by key (keys only in `actual`, such as
    defaults or other managers' fields, do not matter); lists of equal length compare item
    by item the same way (so defaulted fields inside list items do not count as drift);
    scalars compare equal."""
    if is_object(desired):
        if not is_object(actual):
            return False
        return all(k in actual and is_subset(v, actual[k]) for k, v in desired.items())
    if isinstance(desired, list):
        if not isinstance(actual, list) or len(desired) != len(actual):
            return False
        return all(is_subset(d, a) for d, a in zip(desired, actual, strict=True))
    if isinstance(desired, bool) or isinstance(actual, bool):  # True == 1 in Python, not in JSON
        return isinstance(desired, bool) and isinstance(actual, bool) and desired == actual
    return bool(desired == actual)


_TYPE_FIELDS = ("apiVersion", "kind")  # absent from LIST items in the cache; the call names the type

# The digest of the last intent a manager applied, on the object itself. Comparing values
# alone (`is_subset`) cannot see an intent that shrank — a label or a spec field this
# manager no longer wants is still on the object, and server-side apply removes it only
# when the smaller intent is sent. The digest changes exactly then. (The cache strips
# managedFields, which would tell the same thing, to keep cached objects small.)
INTENT_ANNOTATION_PREFIX = "intent.mcruntime.io/"
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_.-]")


def intent_annotation(field_manager: str) -> str:
    """The annotation key holding `field_manager`'s intent digest (a valid key for any
    manager name: the name part is at most 63 characters of [A-Za-z0-9_.-])."""
    name = _NOT_IN_NAME.sub("-", field_manager).strip("-_.")[:63].rstrip("-_.")
    return INTENT_ANNOTATION_PREFIX + (name or "manager")


def intent_digest(intent: Mapping[str, Any]) -> str:
    """A short digest of an intent, independent of key order."""
    raw = orjson.dumps(intent, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(raw).hexdigest()[:16]


class Operation(enum.StrEnum):
    """What `apply_if_differs` did (controller-runtime's `OperationResult`)."""

    UNCHANGED = "unchanged"  # the cache already said it: no request
    CREATED = "created"  # nothing was cached: the apply created it
    UPDATED = "updated"  # the cached object differed: the apply updated it


@dataclass(frozen=True)
class ApplyResult:
    obj: Obj
    operation: Operation

    @property
    def changed(self) -> bool:
        """A request was sent."""
        return self.operation is not Operation.UNCHANGED


def _intent(desired: Mapping[str, Any], manager: str, subresource: str) -> tuple[dict[str, Any], Mapping[str, Any]]:
    """What `apply_if_differs` compares with the cached object, and the body it applies."""
    if subresource == "status":
        return {"status": desired.get("status") or {}}, desired
    intent = {k: v for k, v in desired.items() if k not in _TYPE_FIELDS}
    metadata = dict(intent.get("metadata") or {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), intent_annotation(manager): intent_digest(intent)}
    intent["metadata"] = metadata
    return intent, {**desired, "metadata": metadata}


def would_apply(
    desired: Mapping[str, Any], cached: Mapping[str, Any] | None, field_manager: str, *, subresource: str = ""
) -> bool:
    """Whether `apply_if_differs(desired, cached=cached)` would write (pure: no request), so a
    caller can add what rides along with a write but must never cause one."""
    return cached is None or not is_subset(_intent(desired, field_manager, subresource)[0], cached)


async def apply_if_differs(
    client: Client,
    resource: Resource,
    desired: Mapping[str, Any],
    *,
    cached: Mapping[str, Any] | None = None,
    field_manager: str | None = None,
    force: bool = True,
    subresource: str = "",
) -> ApplyResult:
    """Server-side apply `desired` (this manager's whole intent for the fields it owns)
    unless the cached object already says everything it says and was last applied with
    this very intent: then no request at all.

    `cached` is the object as the caller read it from the cache; when omitted it is read
    from the cache (a missing object is applied, i.e. created). `force` takes fields over
    from other managers, as controllers do. The object carries the intent's digest in the
    annotation `intent_annotation(field_manager)`, so an intent that shrinks (a field no
    longer wanted) is a difference too, and the apply removes that field. A status intent
    (`subresource="status"`) is compared by value only: the status subresource ignores
    metadata, and status intents state whole conditions and counters."""
    if cached is None:
        cached = await client.get_or_none(
            resource,
            get_str(desired, "metadata.name", required=False),
            namespace=get_str(desired, "metadata.namespace", required=False) or None,
        )
    manager = field_manager or client.field_manager
    intent, body = _intent(desired, manager, subresource)
    if cached is not None and is_subset(intent, cached):
        return ApplyResult(dict(cached), Operation.UNCHANGED)
    applied = await client.apply(resource, body, field_manager=manager, force=force, subresource=subresource)
    return ApplyResult(applied, Operation.CREATED if cached is None else Operation.UPDATED)


async def apply_decided(
    client: Client,
    resource: Resource,
    desired: Mapping[str, Any],
    *,
    cached: Mapping[str, Any] | None,
    field_manager: str | None = None,
    force: bool = True,
) -> ApplyResult:
    """The write of `apply_if_differs` (the same body, with the intent's digest) for a caller
    whose decision has compared already (`would_apply` said it differs, or nothing is
    cached): one request, and the comparison is not made twice. `cached` is the object the
    decision was made over; none means the apply creates the object."""
    manager = field_manager or client.field_manager
    body = _intent(desired, manager, "")[1]
    applied = await client.apply(resource, body, field_manager=manager, force=force)
    return ApplyResult(applied, Operation.CREATED if cached is None else Operation.UPDATED)


# ---------------------------------------------------------------------- delete exactly
async def delete_exact(client: Client, resource: Resource, obj: Mapping[str, Any]) -> None:
    """Delete exactly `obj` as it was read: its UID is the precondition, so a newer object
    that took the name meanwhile is never hit; not found is tolerated (someone got there
    first). One request; the caller decides whether an object already being deleted is
    worth one."""
    uid = get_str(obj, "metadata.uid", required=False)
    if not uid:
        name = get_str(obj, "metadata.name", required=False)
        raise ValueError(f"delete_exact needs the object as read, with metadata.uid: {name!r}")
    await client.delete(
        resource,
        get_str(obj, "metadata.name", required=False),
        namespace=get_str(obj, "metadata.namespace", required=False) or None,
        preconditions=Preconditions(uid=str(uid)),
        ignore_not_found=True,
    )


# ---------------------------------------------------------------------- the status write
async def write_status(
    client: Client,
    resource: Resource,
    obj: Mapping[str, Any],
    status: Mapping[str, Any],
    *,
    field_manager: str,
    conditional: bool = False,
) -> Obj:
    """Write `status` to `obj`'s status subresource: one request (the caller compares with
    the cache first, so nothing changed means no call). Two concurrency rules, chosen by
    what the status is computed from:

    - `conditional=False`: a server-side apply of `status` under `field_manager`, forced.
      For a status computed from *other* objects (the cells' copies, a Pod) or a share of
      the status this manager alone owns (its conditions among other managers'): the
      manager's own fields are replaced, other managers' fields are never touched, and
      there is nothing to conflict with — the next event recomputes it anyway.
    - `conditional=True`: a merge patch carrying `obj`'s `metadata.resourceVersion`. For a
      status computed from *the object itself* (its spec and generation, or a verdict that
      must not be decided twice): a status computed from an older version is refused with
      409 Conflict, and the runtime retries quietly with a fresh read."""
    if conditional:
        patch = {
            "metadata": {"resourceVersion": get_str(obj, "metadata.resourceVersion", required=False)},
            "status": dict(status),
        }
        return await client.patch(
            resource,
            get_str(obj, "metadata.name", required=False),
            patch,
            namespace=get_str(obj, "metadata.namespace", required=False) or None,
            subresource="status",
            field_manager=field_manager,
        )
    metadata: dict[str, Any] = {"name": get_str(obj, "metadata.name", required=False)}
    if get_str(obj, "metadata.namespace", required=False):
        metadata["namespace"] = get_str(obj, "metadata.namespace", required=False)
    body = {"apiVersion": resource.api_version, "kind": resource.kind, "metadata": metadata, "status": dict(status)}
    return await client.apply(resource, body, field_manager=field_manager, force=True, subresource="status")


# ---------------------------------------------------------------------- independent writes at once
Call = Callable[[], Coroutine[Any, Any, object]]  # one write (or a helper making at most one)


async def concurrently(calls: Sequence[Call]) -> None:
    """Run `calls` at once and return when every one has: one reconcile's writes to
    different objects (each cell's copy, the finalizer) cost one round trip, not one each.
    The last call runs in the calling task, so a single call (the common case on an update:
    one copy to rewrite) costs no task and no task group. A failure cancels the others and
    is raised as itself; an ExceptionGroup only when several failed."""
    if len(calls) <= 1:
        for call in calls:
            await call()
        return
    try:
        async with anyio.create_task_group() as tg:
            for call in calls[:-1]:
                tg.start_soon(call)
            await calls[-1]()
    except ExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
