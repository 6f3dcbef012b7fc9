"""CustomResourceDefinitions: the CRD kind itself (defaulting and validation as
apiextensions-apiserver does them) and the controller that serves a CRD's resources once
its names are accepted, and on deletion removes every instance before the CRD goes."""

from __future__ import annotations

import logging
from typing import Any

import anyio

from .builtin_schemas import SCHEMAS
from .builtins import name_col
from .cel import crd_rule_errors
from .crdversions import deprecation_warning, selectable_field_errors, selectable_fields
from .errors import APIError, FieldError, invalid, required, unsupported
from .follow import Follower
from .jsonpath import JSONPathError, compile_path
from .meta import now_rfc3339
from .objectapi import DeleteOptions, ObjectAPI
from .registry import Column, Obj, Registry, ResourceType, ScalePaths
from .schema import structural_errors
from .selectors import FieldSelector, LabelSelector
from .table import crd_columns
from .validation import dns1123_label_errors, dns1123_subdomain_errors

log = logging.getLogger(__name__)

GROUP = "apiextensions.k8s.io"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
COLUMN_TYPES = ("integer", "number", "string", "boolean", "date")


# ------------------------------------------------------------------ the CRD kind


def _prepare_create(obj: Obj, _old: Obj | None) -> None:
    spec = obj.setdefault("spec", {})
    _default_spec(spec)
    storage = [v.get("name") for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("storage")]
    obj["status"] = {
        "conditions": [],
        "acceptedNames": {"plural": "", "kind": ""},
        "storedVersions": storage[:1],
    }


def _prepare_update(obj: Obj, old: Obj | None) -> None:
    assert old is not None
    spec = obj.setdefault("spec", {})
    _default_spec(spec)
    status = obj.setdefault("status", {})
    stored = list(status.get("storedVersions") or [])
    for v in spec.get("versions") or []:
        if isinstance(v, dict) and v.get("storage") and v.get("name") not in stored:
            stored.append(v["name"])
    status["storedVersions"] = stored


def _default_spec(spec: Obj) -> None:
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str):
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    spec.setdefault("conversion", {"strategy": "None"})
    for v in spec.get("versions") or []:
        if isinstance(v, dict):
            v.setdefault("served", True)


def _validate(obj: Obj, old: Obj | None) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    group = spec.get("group")
    if not group:
        errs.append(required("spec.group"))
    elif not isinstance(group, str) or "." not in group:
        errs.append(invalid("spec.group", group, "should be a domain with at least one dot"))
    else:
        errs.extend(invalid("spec.group", group, m) for m in dns1123_subdomain_errors(group))
    names = spec.get("names")
    if not isinstance(names, dict):
        errs.append(required("spec.names"))
        names = {}
    plural = names.get("plural")
    for key in ("plural", "kind"):
        if not names.get(key):
            errs.append(required(f"spec.names.{key}"))
    for key in ("plural", "singular"):
        value = names.get(key)
        if isinstance(value, str) and value:
            errs.extend(invalid(f"spec.names.{key}", value, m) for m in dns1123_label_errors(value))
    for idx, short in enumerate(names.get("shortNames") or []):
        errs.extend(invalid(f"spec.names.shortNames[{idx}]", short, m) for m in dns1123_label_errors(str(short)))
    if plural and group and obj["metadata"].get("name") != f"{plural}.{group}":
        errs.append(invalid("metadata.name", obj["metadata"].get("name"), 'must be spec.names.plural+"."+spec.group'))
    scope = spec.get("scope")
    if scope not in ("Namespaced", "Cluster"):
        errs.append(unsupported("spec.scope", scope, ["Cluster", "Namespaced"]))
    if old is not None and (old.get("spec") or {}).get("scope") != scope:
        errs.append(invalid("spec.scope", scope, "field is immutable"))
    conversion = spec.get("conversion") or {}
    if conversion.get("strategy", "None") != "None":
        errs.append(unsupported("spec.conversion.strategy", conversion.get("strategy"), ["None"]))
    errs.extend(_validate_versions(spec.get("versions")))
    return errs


def _validate_versions(versions: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(versions, list) or not versions:
        return [required("spec.versions", "must have exactly one version marked as storage version")]
    seen: set[str] = set()
    storage = 0
    for idx, v in enumerate(versions):
        path = f"spec.versions[{idx}]"
        if not isinstance(v, dict):
            errs.append(invalid(path, v, "must be an object"))
            continue
        name = v.get("name")
        if not name:
            errs.append(required(f"{path}.name"))
        else:
            errs.extend(invalid(f"{path}.name", name, m) for m in dns1123_label_errors(str(name)))
            if name in seen:
                errs.append(FieldError("Duplicate value", f"{path}.name", "", name, True))
            seen.add(name)
        if v.get("storage"):
            storage += 1
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if schema is None:
            errs.append(required(f"{path}.schema.openAPIV3Schema", "schemas are required"))
        else:
            schema_errs = structural_errors(schema, f"{path}.schema.openAPIV3Schema")
            errs.extend(schema_errs)
            if not schema_errs:  # CEL rules and field paths are only checked against a valid structural schema
                errs.extend(crd_rule_errors(schema, f"{path}.schema.openAPIV3Schema"))
                errs.extend(selectable_field_errors(v.get("selectableFields"), schema, f"{path}.selectableFields"))
        scale = (v.get("subresources") or {}).get("scale")
        if isinstance(scale, dict):
            errs.extend(_validate_scale(scale, f"{path}.subresources.scale"))
        for cidx, col in enumerate(v.get("additionalPrinterColumns") or []):
            cpath = f"{path}.additionalPrinterColumns[{cidx}]"
            if not isinstance(col, dict):
                errs.append(invalid(cpath, col, "must be an object"))
                continue
            for key in ("name", "type", "jsonPath"):
                if not col.get(key):
                    errs.append(required(f"{cpath}.{key}"))
            if col.get("type") and col["type"] not in COLUMN_TYPES:
                errs.append(unsupported(f"{cpath}.type", col["type"], list(COLUMN_TYPES)))
            if col.get("jsonPath"):
                try:
                    compile_path(str(col["jsonPath"]))
                except (JSONPathError, ValueError):
                    errs.append(invalid(f"{cpath}.jsonPath", col["jsonPath"], "must be a simple json path"))
    if storage != 1:
        errs.append(invalid("spec.versions", versions, "must have exactly one version marked as storage version"))
    return errs


def _validate_scale(scale: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    spec_path = scale.get("specReplicasPath")
    if not spec_path:
        errs.append(required(f"{path}.specReplicasPath"))
    elif not str(spec_path).startswith(".spec."):
        errs.append(invalid(f"{path}.specReplicasPath", spec_path, "should be a json path under .spec"))
    status_path = scale.get("statusReplicasPath")
    if not status_path:
        errs.append(required(f"{path}.statusReplicasPath"))
    elif not str(status_path).startswith(".status."):
        errs.append(invalid(f"{path}.statusReplicasPath", status_path, "should be a json path under .status"))
    sel = scale.get("labelSelectorPath")
    if sel and not str(sel).startswith((".spec.", ".status.")):
        errs.append(invalid(f"{path}.labelSelectorPath", sel, "should be a json path under either .spec or .status"))
    return errs


def crd_resource_type() -> ResourceType:
    return ResourceType(
        GROUP,
        "v1",
        "customresourcedefinitions",
        "customresourcedefinition",
        "CustomResourceDefinition",
        namespaced=False,
        short_names=("crd", "crds"),
        categories=("api-extensions",),
        subresources=("status",),
        has_generation=True,
        schema=SCHEMAS["CustomResourceDefinition"],
        prepare_create=_prepare_create,
        prepare_update=_prepare_update,
        validate=_validate,
        return_deleted_object=True,
        columns=(
            name_col(),
            Column("Created At", "date", "Creation time", lambda o: o["metadata"].get("creationTimestamp")),
        ),
    )


def types_for(crd: Obj) -> list[ResourceType]:
    """The served resource types a (valid) CRD defines, one per served version."""
    spec = crd["spec"]
    names = spec["names"]
    versions = [v for v in spec["versions"] if isinstance(v, dict)]
    storage = next(v["name"] for v in versions if v.get("storage"))
    out = []
    for v in versions:
        if not v.get("served"):
            continue
        subs = v.get("subresources") or {}
        scale = subs.get("scale")
        subresources = tuple(s for s in ("status", "scale") if isinstance(subs.get(s), dict))
        out.append(
            ResourceType(
                spec["group"],
                v["name"],
                names["plural"],
                names.get("singular") or names["kind"].lower(),
                names["kind"],
                namespaced=spec["scope"] == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=subresources,
                has_generation=True,
                custom=True,
                schema=(v.get("schema") or {}).get("openAPIV3Schema"),
                columns=crd_columns(v.get("additionalPrinterColumns")),
                scale=ScalePaths(scale["specReplicasPath"], scale["statusReplicasPath"], scale.get("labelSelectorPath"))
                if isinstance(scale, dict)
                else None,
                storage_version=storage,
                preserve_unknown=False,
                return_deleted_object=True,
                field_selectors=frozenset({"metadata.name", "metadata.namespace"}) | selectable_fields(v),
                deprecation_warning=deprecation_warning(v, spec),
                extra={"crd": crd["metadata"]["name"]},
            )
        )
    return out


# ------------------------------------------------------------------ the controller


class CRDController:
    """Establishes CRDs (serving their resources) and finalizes deleted ones."""

    MANAGER = "apiextensions-apiserver"

    def __init__(self, api: ObjectAPI, registry: Registry) -> None:
        self.api = api
        self.registry = registry
        self.crd_rt = crd_resource_type()
        self.served: dict[str, list[ResourceType]] = {}
        self.follower = Follower(api.db, self.crd_rt.storage_key, namespaced=False)
        self._cleanups: set[str] = set()
        self._served_generation: dict[str, int] = {}

    def mark_deleted(self, rt: ResourceType, entry: Any, opts: DeleteOptions) -> Obj | None:
        """Delete hook: a CRD is only marked, with the cleanup finalizer, until its instances are gone."""
        meta = entry.obj["metadata"]
        if meta.get("deletionTimestamp"):
            return None
        marked: Obj = entry.copy()
        mmeta = marked["metadata"]
        mmeta["deletionTimestamp"] = now_rfc3339()
        mmeta["deletionGracePeriodSeconds"] = 0
        fins = list(mmeta.get("finalizers") or [])
        if CLEANUP_FINALIZER not in fins:
            fins.append(CLEANUP_FINALIZER)
        mmeta["finalizers"] = fins
        return marked

    async def run(self, task_group: anyio.abc.TaskGroup) -> None:
        async for keys in self.follower.changes():
            for _, name in keys:
                try:
                    self.reconcile(name, task_group)
                except APIError as exc:
                    log.warning("crd %s: %s", name, exc)

    def reconcile(self, name: str, task_group: anyio.abc.TaskGroup) -> None:
        store = self.api.store_for(self.crd_rt)
        entry = store.get("", name)
        if entry is None:
            self._unserve(name)
            return
        crd = entry.obj
        if crd["metadata"].get("deletionTimestamp"):
            self._set_conditions(name, terminating=True)
            if name not in self._cleanups:
                self._cleanups.add(name)
                task_group.start_soon(self._cleanup, name)
            return
        accepted, reason, message = self._names_ok(crd)
        generation = int(crd["metadata"].get("generation") or 0)
        if accepted and self._served_generation.get(name) != generation:
            self._serve(name, crd)
            self._served_generation[name] = generation
        self._set_conditions(name, accepted=accepted, reason=reason, message=message)

    def _names_ok(self, crd: Obj) -> tuple[bool, str, str]:
        spec = crd["spec"]
        for other in self.api.store_for(self.crd_rt).iter_entries():
            ospec = other.obj.get("spec") or {}
            if other.obj["metadata"]["name"] == crd["metadata"]["name"] or ospec.get("group") != spec["group"]:
                continue
            if (ospec.get("names") or {}).get("kind") == spec["names"]["kind"]:
                return False, "KindConflict", f"{spec['names']['kind']!r} is already in use"
        for rt in self.registry.all():
            if rt.group == spec["group"] and not rt.custom and rt.plural == spec["names"]["plural"]:
                return False, "PluralConflict", f"{rt.plural!r} is already in use"
        return True, "NoConflicts", "no conflicts found"

    def _serve(self, name: str, crd: Obj) -> None:
        new_types = types_for(crd)
        old_types = self.served.get(name, [])
        new_keys = {(t.group, t.version, t.plural) for t in new_types}
        for rt in old_types:
            if (rt.group, rt.version, rt.plural) not in new_keys:
                self.registry.remove(rt.group, rt.version, rt.plural)
                self.api.forget_type(rt)
        for rt in new_types:
            self.registry.add(rt)
            self.api.forget_type(rt)
        if new_types:
            storage = next(v["name"] for v in crd["spec"]["versions"] if v.get("storage"))
            if any(t.version == storage for t in new_types):
                self.registry.set_preferred(new_types[0].group, _preferred(crd))
        self.served[name] = new_types

    def _unserve(self, name: str) -> None:
        self._served_generation.pop(name, None)
        for rt in self.served.pop(name, []):
            self.registry.remove(rt.group, rt.version, rt.plural)
            self.api.forget_type(rt)
            self.api.db.drop_store(rt.storage_key)

    def _set_conditions(
        self, name: str, *, accepted: bool = True, reason: str = "", message: str = "", terminating: bool = False
    ) -> None:
        store = self.api.store_for(self.crd_rt)
        entry = store.get("", name)
        if entry is None:
            return
        obj = entry.copy()
        status = obj.setdefault("status", {})
        conds = list(status.get("conditions") or [])
        if terminating:
            _set_condition(
                conds, "Terminating", "True", "InstanceDeletionInProgress", "CustomResource deletion is in progress"
            )
        else:
            _set_condition(conds, "NamesAccepted", "True" if accepted else "False", reason, message)
            if accepted:
                _set_condition(
                    conds, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted"
                )
                status["acceptedNames"] = dict(obj["spec"]["names"])
            elif not any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
                _set_condition(conds, "Established", "False", "NotAccepted", "not all names are accepted")
        status["conditions"] = conds
        self.api.commit_internal(self.crd_rt, entry, obj, self.MANAGER, subresource="status")

    async def _cleanup(self, name: str) -> None:
        """Delete every instance, wait for them (and their finalizers) to be gone, then let the CRD go."""
        try:
            types = self.served.get(name, [])
            for rt in types:
                rt.extra["terminating"] = True
            if types and self.api.store_for(types[0]).count:
                rt = types[0]
                waiter = Follower(self.api.db, rt.storage_key, rt.namespaced)
                # every change to the instances (a finalizer removed, ...) is a chance to finish
                async for _ in waiter.changes():
                    self.api.delete_collection(
                        rt, None, LabelSelector(), FieldSelector(), DeleteOptions(propagation="Background")
                    )
                    if self.api.store_for(rt).count == 0:
                        waiter.close()
            self._unserve(name)
            store = self.api.store_for(self.crd_rt)
            entry = store.get("", name)
            if entry is not None:
                obj = entry.copy()
                obj["metadata"]["finalizers"] = [
                    f for f in obj["metadata"].get("finalizers") or [] if f != CLEANUP_FINALIZER
                ]
                self.api.commit_internal(self.crd_rt, entry, obj, self.MANAGER)
        finally:
            self._cleanups.discard(name)

    def close(self) -> None:
        self.follower.close()


def _preferred(crd: Obj) -> str:
    from .registry import version_priority

    served = [str(v["name"]) for v in crd["spec"]["versions"] if v.get("served")]
    return sorted(served, key=version_priority, reverse=True)[0]


def _set_condition(conds: list[Obj], ctype: str, status: str, reason: str, message: str) -> None:
    for cond in conds:
        if cond.get("type") == ctype:
            if cond.get("status") != status:
                cond["lastTransitionTime"] = now_rfc3339()
            cond.update(status=status, reason=reason, message=message)
            return
    conds.append(
        {"type": ctype, "status": status, "lastTransitionTime": now_rfc3339(), "reason": reason, "message": message}
    )
