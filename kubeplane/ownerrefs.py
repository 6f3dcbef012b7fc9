"""OwnerReferencesPermissionEnforcement, the admission plugin the project's Roles are written
for (plugin/pkg/admission/gc in kube-apiserver), applied with RBAC authorization:

- changing an object's ownerReferences (other than when creating it) needs `delete` on the
  object: an owner reference can get it garbage-collected;
- setting `blockOwnerDeletion: true` on a reference needs `update` on the owner's
  `finalizers` subresource: it holds the owner's foreground deletion.

Refusals are 403s in the plugin's words."""

from __future__ import annotations

from typing import Any

from .errors import APIError
from .rbac import RBACAuthorizer, UserInfo
from .registry import Obj, Registry, ResourceType
from .requestinfo import RequestAttributes

_CANNOT_BLOCK = "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on"
# pods/status may carry owner references the kubelet does not own (the plugin's whitelist)
_EXEMPT = frozenset({("", "pods", "status")})


def _refs(obj: Obj | None) -> list[Obj]:
    refs = (obj or {}).get("metadata", {}).get("ownerReferences") or []
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


def _new_blocking(new: list[Obj], old: list[Obj]) -> list[Obj]:
    blocking_before = {r.get("uid") for r in old if r.get("blockOwnerDeletion")}
    return [r for r in new if r.get("blockOwnerDeletion") and r.get("uid") not in blocking_before]


def _refused(rt: ResourceType, name: str, message: str) -> APIError:
    qualified = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
    details: dict[str, Any] = {"name": name, "kind": rt.plural}
    if rt.group:
        details["group"] = rt.group
    return APIError(403, "Forbidden", f'{qualified} "{name}" is forbidden: {message}', details)


def _with_reason(why: str, reason: str) -> str:
    # the plugin formats its authorizer call as "<reason>, <error>"; the error is always nil here
    return f"{why}: {reason}, <nil>"


class OwnerReferencesAdmission:
    """Called by the write path (WriteOptions.admit) with the object about to be stored."""

    def __init__(self, authorizer: RBACAuthorizer, registry: Registry, user: UserInfo) -> None:
        self.authorizer = authorizer
        self.registry = registry
        self.user = user

    def __call__(self, rt: ResourceType, new: Obj, old: Obj | None, subresource: str) -> None:
        if (rt.group, rt.plural, subresource) in _EXEMPT:
            return
        new_refs, old_refs = _refs(new), _refs(old)
        if new_refs == old_refs:
            return
        meta = new["metadata"]
        name = str(meta.get("name") or meta.get("generateName") or "")
        namespace = str(meta.get("namespace") or "")
        if old is not None:
            asked = RequestAttributes("delete", "", True, rt.group, rt.version, rt.plural, subresource, namespace, name)
            decision = self.authorizer.authorize(self.user, asked)
            if not decision.allowed:
                why = "cannot set an ownerRef on a resource you can't delete"
                raise _refused(rt, name, _with_reason(why, decision.reason))
        blocking = _new_blocking(new_refs, old_refs)
        if not blocking:
            return
        anything = RequestAttributes("update", "", True, "*", "", "*", "finalizers")
        if self.authorizer.authorize(self.user, anything).allowed:
            return
        for ref in blocking:
            owner = self.registry.find_kind(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
            if owner is None:
                version = ref.get("apiVersion", "")
                kind = ref.get("kind", "")
                raise _refused(
                    rt,
                    name,
                    f"cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion "
                    f'{version} Kind {kind}: no matches for kind "{kind}" in version "{version}"',
                )
            asked = RequestAttributes(
                "update",
                "",
                True,
                owner.group,
                owner.version,
                owner.plural,
                "finalizers",
                namespace,
                str(ref.get("name", "")),
            )
            decision = self.authorizer.authorize(self.user, asked)
            if not decision.allowed:
                raise _refused(rt, name, _with_reason(_CANNOT_BLOCK, decision.reason))
