"""The API verbs over stored objects, in the order kube-apiserver's generic registry
applies its steps: decode, admission (namespace lifecycle), strategy (prepare, default,
validate), preconditions, field management, commit.

Both the HTTP layer and the in-process controllers (CRD establishment, garbage
collector, namespace lifecycle, kubelet) write through here, so every writer sees the
same semantics a real cluster would give it."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from . import errors, typed
from .cel import evaluate_object
from .errors import APIError, FieldError
from .fieldmanager import FieldManager
from .jsondata import json_copy, unchanged
from .meta import generated_suffix, new_uid, now_rfc3339
from .patches import json_patch, merge_patch, strategic_merge_patch
from .registry import Obj, Registry, ResourceType
from .schema import apply_defaults, prune, validate
from .selectors import FieldSelector, LabelSelector, field_value, label_selector_to_string
from .store import DELETED, Database, Entry, ResourceStore
from .validation import finalizer_warnings, validate_object_meta

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH)

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
NO_FIELDS: frozenset[str] = frozenset()
SYSTEM_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")


# A validating admission step run on the object about to be stored: (type, new, old or None for
# a create, subresource); it raises APIError to refuse (kubeplane.ownerrefs in RBAC mode).
Admission = Callable[[ResourceType, Obj, Obj | None, str], None]


@dataclass
class WriteOptions:
    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = "Warn"  # Ignore | Warn | Strict
    force: bool = False
    warnings: list[str] = field(default_factory=list)
    admit: Admission | None = None


@dataclass
class DeleteOptions:
    propagation: str | None = None  # Background | Foreground | Orphan
    grace_period: int | None = None
    uid: str | None = None
    resource_version: str | None = None
    dry_run: bool = False
    orphan_dependents: bool | None = None  # the deprecated form of propagationPolicy, if sent


@dataclass
class ListResult:
    items: list[Entry]
    resource_version: int
    continue_token: str = ""
    remaining: int | None = None


# Hooks the embedded control plane's controllers plug in (graceful pod deletion, ...):
# return a marked object to store instead of deleting, the current Entry to leave the
# object as it is, or None for the standard path (finalizers, then removal).
DeleteHook = Callable[[ResourceType, Entry, DeleteOptions], Obj | Entry | None]


class ObjectAPI:
    def __init__(self, db: Database, registry: Registry) -> None:
        self.db = db
        self.registry = registry
        self._field_managers: dict[tuple[str, str, str], FieldManager] = {}
        self.delete_hooks: dict[tuple[str, str], DeleteHook] = {}

    # ------------------------------------------------------------- helpers
    def store_for(self, rt: ResourceType) -> ResourceStore:
        return self.db.store(rt.storage_key, rt.namespaced)

    def field_manager(self, rt: ResourceType) -> FieldManager:
        key = (rt.group, rt.version, rt.plural)
        fm = self._field_managers.get(key)
        if fm is None or fm.schema is not rt.schema:
            fm = FieldManager(rt.schema, has_status="status" in rt.subresources)
            self._field_managers[key] = fm
        return fm

    def forget_type(self, rt: ResourceType) -> None:
        self._field_managers.pop((rt.group, rt.version, rt.plural), None)

    def namespace_entry(self, ns: str) -> Entry | None:
        st = self.db.existing(("", "namespaces"))
        return st.get("", ns) if st else None

    def _require_entry(self, rt: ResourceType, ns: str, name: str) -> Entry:
        entry = self.store_for(rt).get(ns if rt.namespaced else "", name)
        if entry is None:
            raise errors.not_found(rt.plural, rt.group, name)
        return entry

    # ------------------------------------------------------------- reads
    def get(self, rt: ResourceType, ns: str, name: str) -> Entry:
        return self._require_entry(rt, ns, name)

    def list_objects(
        self,
        rt: ResourceType,
        ns: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        *,
        limit: int = 0,
        continue_token: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> ListResult:
        store = self.store_for(rt)
        current = self.db.rev
        at_rev = current
        start_after: tuple[str, str] | None = None
        if continue_token:
            at_rev, start_after = _decode_continue(continue_token)
        elif resource_version_match == "Exact":
            at_rev = _parse_rv(resource_version)
        elif resource_version and resource_version != "0":
            wanted = _parse_rv(resource_version)
            if wanted > current:
                raise APIError(
                    504,
                    "Timeout",
                    f"Too large resource version: {wanted}, current: {current}",
                    {
                        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                        "retryAfterSeconds": 1,
                    },
                )
        view = self._view_at(store, at_rev, bool(continue_token))
        scope = ns if rt.namespaced and ns else None
        keys = view.keys(scope)
        if start_after is not None:
            import bisect

            keys = keys[bisect.bisect_right(keys, start_after) :]
        match = self._matcher(rt, labels, fields)
        items: list[Entry] = []
        last: tuple[str, str] | None = None
        token = ""
        remaining: int | None = None
        for idx, key in enumerate(keys):
            entry = view.get(key)
            if entry is None or not match(entry.obj):
                continue
            if limit and len(items) >= limit:
                token = _encode_continue(at_rev, last) if last else ""
                if labels.empty() and fields.empty():
                    remaining = len(keys) - idx
                break
            items.append(entry)
            last = key
        return ListResult(items, at_rev, token, remaining)

    def _view_at(self, store: ResourceStore, rev: int, paging: bool) -> _SnapshotView:
        if rev >= self.db.rev:
            return _SnapshotView(store, {})
        events = store.log.since(rev)
        if events is None:
            if paging:
                raise errors.expired(
                    "The provided continue parameter is too old to display a consistent list result. You can "
                    "start a new list without the continue parameter, or use the continue token in this "
                    "response to retrieve the remainder of the results. Continuing with the provided token "
                    "results in an inconsistent list - objects that were created, modified, or deleted between "
                    "the time the first chunk was returned and now may show up in the list."
                )
            raise errors.expired(f"too old resource version: {rev} ({store.log.compacted_rev + 1})")
        overrides: dict[tuple[str, str], Entry | None] = {}
        for ev in events:
            meta = ev.entry.obj["metadata"]
            key = (meta.get("namespace") or "", meta["name"])
            if key not in overrides:
                overrides[key] = ev.prev
        return _SnapshotView(store, overrides)

    def _matcher(self, rt: ResourceType, labels: LabelSelector, fields: FieldSelector) -> Callable[[Obj], bool]:
        if labels.empty() and fields.empty():
            return lambda _obj: True
        served = rt.served if rt.to_served is not None else None

        def match(obj: Obj) -> bool:
            if not labels.matches(obj["metadata"].get("labels")):
                return False
            if fields.empty():
                return True
            view = served(obj) if served else obj
            return fields.matches(lambda path: _field_of(view, path))

        return match

    def matcher(self, rt: ResourceType, labels: LabelSelector, fields: FieldSelector) -> Callable[[Obj], bool]:
        return self._matcher(rt, labels, fields)

    # ------------------------------------------------------------- create
    def create(
        self, rt: ResourceType, ns: str, body: Any, opts: WriteOptions, *, managed: list[Obj] | None = None
    ) -> Entry:
        if rt.extra.get("terminating"):
            raise APIError(
                405, "MethodNotAllowed", "create not allowed while custom resource definition is terminating"
            )
        obj = self._decode_object(rt, body)
        meta = obj["metadata"]
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            raise errors.bad_request("resourceVersion should not be set on objects to be created")
        obj = self._to_storage(rt, obj, opts)
        meta = obj["metadata"]  # conversion to the storage form may have built new dicts
        self._admit_namespace(rt, obj)
        for key in SYSTEM_META:
            meta.pop(key, None)
        meta.pop("selfLink", None)
        if "status" in rt.subresources and rt.custom:
            obj.pop("status", None)
        if rt.prepare_create is not None:
            rt.prepare_create(obj, None)
        self._schema_pass(rt, obj, opts)
        meta = obj["metadata"]
        store = self.store_for(rt)
        if not meta.get("name") and meta.get("generateName"):
            for _ in range(8):
                candidate = f"{meta['generateName']}{generated_suffix()}"
                if store.get(meta.get("namespace") or "", candidate) is None:
                    meta["name"] = candidate
                    break
        checked = self._validate(rt, obj, None, opts)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = now_rfc3339()
        if rt.has_generation:
            meta["generation"] = 1
        if managed is not None:
            # server-side apply creating the object: ownership is what was applied
            if managed:
                meta["managedFields"] = managed
            else:
                meta.pop("managedFields", None)
        else:
            self.field_manager(rt).update(
                None,
                obj,
                manager=opts.field_manager,
                subresource="",
                api_version=rt.api_version,
                now=now_rfc3339(),
            )
        if store.get(meta.get("namespace") or "", meta["name"]) is not None:
            raise errors.already_exists(rt.plural, rt.group, meta["name"])
        if opts.admit is not None:
            opts.admit(rt, obj, None, "")
        if opts.dry_run:
            return Entry(obj)
        entry = self.db.commit(store, obj, None)
        entry.valid_under, entry.cel_cost = checked
        return entry

    # ------------------------------------------------------------- update
    def update(
        self, rt: ResourceType, ns: str, name: str, body: Any, opts: WriteOptions, *, subresource: str = ""
    ) -> Entry:
        obj = self._decode_object(rt, body)
        self._check_identity(rt, ns, name, obj)
        old = self._require_entry(rt, ns, name)
        if not obj["metadata"].get("resourceVersion") and (rt.custom or rt.group == "apiextensions.k8s.io"):
            # custom resources and CRDs do not allow unconditional updates (AllowUnconditionalUpdate)
            err = errors.invalid("metadata.resourceVersion", errors.GoValue("0x0"), "must be specified for an update")
            raise errors.invalid_object(rt.plural, rt.group, name, [err])
        self._check_preconditions(rt, old, obj["metadata"])
        return self._write(rt, old, self._to_storage(rt, obj, opts), opts, subresource=subresource)

    # ------------------------------------------------------------- patch
    def patch(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        content_type: str,
        body: Any,
        opts: WriteOptions,
        *,
        subresource: str = "",
    ) -> Entry:
        if content_type not in PATCH_TYPES or (content_type == STRATEGIC_PATCH and rt.custom):
            accepted = [JSON_PATCH, MERGE_PATCH, APPLY_PATCH] if rt.custom else list(PATCH_TYPES)
            raise errors.unsupported_media_type(content_type, accepted)
        store = self.store_for(rt)
        old = store.get(ns if rt.namespaced else "", name)
        if content_type == APPLY_PATCH:
            return self._apply(rt, ns, name, old, body, opts, subresource=subresource)
        if old is None:
            raise errors.not_found(rt.plural, rt.group, name)
        current = rt.served(old.copy())
        if content_type == JSON_PATCH:
            patched = json_patch(current, body)
        elif content_type == MERGE_PATCH:
            if not isinstance(body, dict):
                raise errors.bad_request("merge patch must be a JSON object")
            patched = merge_patch(current, body)
        else:
            patched = strategic_merge_patch(current, body, rt.schema)
        if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
            raise APIError(422, "Invalid", "the patched object must be an object with metadata")
        # a patch may not turn the object into another kind or version: the same answer as PUT
        patched = self._decode_object(rt, patched)
        self._check_identity(rt, ns, name, patched, patch=True)
        self._check_preconditions(rt, old, patched["metadata"])
        # a merge patch of the status alone leaves the rest of `current` (a private copy) as it was
        as_served = content_type == MERGE_PATCH and _stored_as_served(rt, old)
        status_only = as_served and subresource == "status" and body.keys() <= {"status"}
        # and one to the main resource that does not name the status leaves current's as it was
        status_kept = as_served and not subresource and "status" not in body
        # and a field the merge patch does not name is current's (a copy of the stored one) as it was
        copied = frozenset(k for k in patched if k not in body and k != "metadata") if as_served else NO_FIELDS
        stored = self._to_storage(rt, patched, opts)
        return self._write(
            rt,
            old,
            stored,
            opts,
            subresource=subresource,
            status_only=status_only,
            status_kept=status_kept,
            copied=copied,
        )

    def _apply(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        old: Entry | None,
        body: Any,
        opts: WriteOptions,
        *,
        subresource: str,
    ) -> Entry:
        if not opts.field_manager:
            raise errors.bad_request("PATCH requests with apply-patch content type must include fieldManager")
        config = self._decode_object(rt, body, require_type=True)
        self._check_identity(rt, ns, name, config, patch=True)
        fm = self.field_manager(rt)
        now = now_rfc3339()
        if old is None:
            if subresource:
                raise errors.not_found(rt.plural, rt.group, name)
            if config["metadata"].get("uid"):
                # a uid in an applied configuration is a precondition, and nothing has it:
                # the real server refuses to create then (TestCreateOnApplyFailsWithUID)
                raise errors.conflict(rt.plural, rt.group, name,
                                      f"Precondition failed: UID in precondition: {config['metadata']['uid']}, "
                                      "UID in object meta: ")  # fmt: skip
            if rt.namespaced:
                config["metadata"]["namespace"] = ns
            merged = fm.apply(
                None,
                config,
                manager=opts.field_manager,
                subresource="",
                api_version=rt.api_version,
                force=opts.force,
                now=now,
                resource=rt.plural,
                group=rt.group,
            )
            managed = merged["metadata"].pop("managedFields", None)
            return self.create(rt, ns, merged, opts, managed=managed or [])
        live = rt.served(old.copy())
        self._check_preconditions(rt, old, config["metadata"])
        merged = fm.apply(
            live,
            config,
            manager=opts.field_manager,
            subresource=subresource,
            api_version=rt.api_version,
            force=opts.force,
            now=now,
            resource=rt.plural,
            group=rt.group,
            stored=old.obj if rt.to_served is None else None,  # live is a plain copy of it
        )
        stored = self._to_storage(rt, merged, opts)
        # a status apply changes only the status of `live`, a private copy of the stored object
        # when nothing converts it (fm.apply); any other apply keeps live's status
        as_served = _stored_as_served(rt, old)
        return self._write(
            rt,
            old,
            stored,
            opts,
            subresource=subresource,
            managed_done=True,
            status_only=subresource == "status" and as_served,
            status_kept=not subresource and as_served,
        )

    # ------------------------------------------------------------- the write path
    def _write(
        self,
        rt: ResourceType,
        old_entry: Entry,
        new: Obj,
        opts: WriteOptions,
        *,
        subresource: str = "",
        managed_done: bool = False,
        status_only: bool = False,
        status_kept: bool = False,
        copied: frozenset[str] = frozenset(),
    ) -> Entry:
        """Store `new` over `old_entry` (`new` is the caller's to change). `status_only`, for a
        status write: `new` is a private copy of the stored object in which only the status and
        managedFields may differ, so it is stored as it is rather than the stored object copied
        again (its keys, in order, checked here: the stored bytes are those of the copy).
        `status_kept`, for a write to the main resource: `new`'s status, when it has one, is a
        private copy of the stored object's, unchanged, so it is kept rather than copied again.
        `copied`: top-level fields of `new` (not metadata) that are copies of the stored object's,
        unchanged; with those this write knows to be copies (all but the status on a status write,
        the status on a main-resource write), no check compares them with the stored object's
        again (pruning, defaulting, validation, CEL rules, generation, the no-op test): what
        apiextensions' status strategy does by resetting the spec to the old object's."""
        old = old_entry.obj
        if subresource == "status":
            status = new.get("status")
            managed = new["metadata"].get("managedFields")
            if not (status_only and managed is not None and _status_write_of(new, old)):
                new = old_entry.copy()  # everything but the status and managedFields from the stored object
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
            if managed is not None:
                new["metadata"]["managedFields"] = managed
            # everything but the status and metadata: the stored object's (its copy, or the copy it
            # was merged into; checked above)
            copied = frozenset(k for k in new if k not in {"status", "metadata"})
        else:
            meta = new["metadata"]
            for key in SYSTEM_META:
                if key in old["metadata"]:
                    meta[key] = old["metadata"][key]
                else:
                    meta.pop(key, None)
            meta.pop("selfLink", None)
            if "status" in rt.subresources and subresource != "scale":
                if "status" in old:
                    if not (status_kept and "status" in new):
                        new["status"] = json_copy(old["status"])
                    copied |= {"status"}
                else:
                    new.pop("status", None)
            if rt.prepare_update is not None:
                rt.prepare_update(new, old)
                copied = NO_FIELDS  # (a strategy may change any field)
        meta = new["metadata"]
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        if old["metadata"].get("deletionTimestamp"):
            added = set(meta.get("finalizers") or []) - set(old["metadata"].get("finalizers") or [])
            if added:
                raise errors.invalid_object(
                    rt.kind,
                    rt.group,
                    meta["name"],
                    [
                        errors.forbidden(
                            "metadata.finalizers", "no new finalizers can be added if the object is being deleted"
                        )
                    ],
                )
        clean_old = old if rt.custom and old_entry.valid_under is rt.schema else None
        if clean_old is None:
            # (built-in kinds are decoded through their Go types, which may rewrite any field: only
            # a custom resource that passed this schema keeps what it copied as it was)
            copied = NO_FIELDS
        self._schema_pass(rt, new, opts, clean_old, copied)
        meta = new["metadata"]  # a converted view is rebuilt by the schema pass
        checked = self._validate(
            rt, new, old, opts, old_entry=old_entry, copied=copied, meta_copied=subresource == "status" and bool(copied)
        )
        if rt.has_generation and (
            _spec_changed(old, new, status_apart=not rt.custom or "status" in rt.subresources, copied=copied)
            or (rt.generation_counts_annotations and _annotations_changed(old, new))
        ):
            meta["generation"] = int(old["metadata"].get("generation") or 0) + 1
        if not managed_done:
            self.field_manager(rt).update(
                old,
                new,
                manager=opts.field_manager,
                subresource=subresource,
                api_version=rt.api_version,
                now=now_rfc3339(),
            )
        if opts.admit is not None:
            opts.admit(rt, new, old, subresource)
        if _equal_but(new, old, copied):
            return old_entry  # a no-op write does not bump the resourceVersion
        if opts.dry_run:
            return Entry(new)
        store = self.store_for(rt)
        if meta.get("deletionTimestamp") and not self.blocks_removal(rt, new):
            return self.db.delete(store, Entry(new))
        entry = self.db.commit(store, new, old_entry)
        entry.valid_under, entry.cel_cost = checked
        return entry

    @staticmethod
    def blocks_removal(rt: ResourceType, obj: Obj) -> bool:
        """Whether a marked object must stay (finalizers; a namespace's spec.finalizers too)."""
        return bool(obj["metadata"].get("finalizers")) or _extra_blocks(rt, obj)

    def finalize(self, rt: ResourceType, old_entry: Entry, new: Obj, opts: WriteOptions) -> Entry:
        """The namespaces/finalize subresource: only spec.finalizers changes."""
        old = old_entry.obj
        result = old_entry.copy()
        result.setdefault("spec", {})["finalizers"] = list((new.get("spec") or {}).get("finalizers") or [])
        self.field_manager(rt).update(
            old,
            result,
            manager=opts.field_manager,
            subresource="finalize",
            api_version=rt.api_version,
            now=now_rfc3339(),
        )
        if result == old:
            return old_entry
        if opts.dry_run:
            return Entry(result)
        store = self.store_for(rt)
        if result["metadata"].get("deletionTimestamp") and not self.blocks_removal(rt, result):
            return self.db.delete(store, Entry(result))
        return self.db.commit(store, result, old_entry)

    def commit_internal(
        self, rt: ResourceType, old_entry: Entry, new: Obj, manager: str, *, subresource: str = ""
    ) -> Entry:
        """A write by an embedded controller (garbage collector, namespace controller, ...)."""
        return self._write(
            rt, old_entry, new, WriteOptions(field_manager=manager, field_validation="Ignore"), subresource=subresource
        )

    # ------------------------------------------------------------- delete
    def delete(self, rt: ResourceType, ns: str, name: str, opts: DeleteOptions) -> tuple[Entry, bool]:
        """Delete or mark for deletion. Returns (object, deleted_now)."""
        store = self.store_for(rt)
        entry = self._require_entry(rt, ns, name)
        meta = entry.obj["metadata"]
        if opts.uid is not None and opts.uid != meta.get("uid"):
            raise errors.conflict(
                rt.plural,
                rt.group,
                name,
                f"Precondition failed: UID in precondition: {opts.uid}, UID in object meta: {meta.get('uid')}",
            )
        if opts.resource_version is not None and opts.resource_version != meta.get("resourceVersion"):
            raise errors.conflict(
                rt.plural,
                rt.group,
                name,
                f"Precondition failed: ResourceVersion in precondition: {opts.resource_version}, "
                f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
            )
        if rt.storage_key == ("", "namespaces") and name in IMMORTAL_NAMESPACES:
            raise errors.forbidden_error(rt.plural, rt.group, name, "this namespace may not be deleted", [])
        hook = self.delete_hooks.get(rt.storage_key)
        if hook is not None:
            marked = hook(rt, entry, opts)
            if isinstance(marked, Entry):
                return marked, False  # already being deleted the way the hook wants
            if marked is not None:
                if opts.dry_run:
                    return Entry(marked), False
                result = self.db.commit(store, marked, entry)
                return result, False
        finalizers = list(meta.get("finalizers") or [])
        policy = opts.propagation
        if policy == "Foreground" and FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
            finalizers = [f for f in finalizers if f != ORPHAN]
        elif policy == "Orphan" and ORPHAN not in finalizers:
            finalizers.append(ORPHAN)
            finalizers = [f for f in finalizers if f != FOREGROUND]
        elif policy == "Background" and meta.get("deletionTimestamp"):
            finalizers = [f for f in finalizers if f not in (FOREGROUND, ORPHAN)]
        if finalizers or _extra_blocks(rt, entry.obj):
            if meta.get("deletionTimestamp") and finalizers == list(meta.get("finalizers") or []):
                return entry, False
            marked = entry.copy()
            mmeta = marked["metadata"]
            mmeta.setdefault("deletionTimestamp", now_rfc3339())
            mmeta.setdefault("deletionGracePeriodSeconds", 0)
            if finalizers:
                mmeta["finalizers"] = finalizers
            on_mark = rt.extra.get("on_mark_deleted")
            if on_mark is not None:
                on_mark(marked)
            if opts.dry_run:
                return Entry(marked), False
            return self.db.commit(store, marked, entry), False
        if opts.dry_run:
            return entry, True
        self.db.delete(store, entry)
        return entry, True

    def delete_collection(
        self, rt: ResourceType, ns: str | None, labels: LabelSelector, fields: FieldSelector, opts: DeleteOptions
    ) -> list[Entry]:
        result = self.list_objects(rt, ns, labels, fields)
        out = []
        for entry in result.items:
            meta = entry.obj["metadata"]
            try:
                obj, _ = self.delete(rt, meta.get("namespace") or "", meta["name"], opts)
            except APIError as exc:
                if exc.code != 404:
                    raise
                continue
            out.append(obj)
        return out

    # ------------------------------------------------------------- scale
    def get_scale(self, rt: ResourceType, ns: str, name: str) -> Obj:
        assert rt.scale is not None
        entry = self._require_entry(rt, ns, name)
        return scale_of(rt, entry.obj)

    def update_scale(self, rt: ResourceType, ns: str, name: str, scale: Any, opts: WriteOptions) -> Obj:
        from .jsonpath import set_path

        assert rt.scale is not None
        if not isinstance(scale, dict):
            raise errors.bad_request("Scale must be a JSON object")
        entry = self._require_entry(rt, ns, name)
        meta = scale.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        rv = meta.get("resourceVersion")
        if rv and rv != entry.obj["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.plural, rt.group, name, errors.STALE_OBJECT)
        replicas = (scale.get("spec") or {}).get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise errors.invalid_object(
                "Scale",
                "autoscaling",
                name,
                [errors.invalid("spec.replicas", replicas, "must be greater than or equal to 0")],
            )
        obj = entry.copy()
        set_path(obj, rt.scale.spec_replicas, replicas)
        updated = self._write(rt, entry, obj, opts, subresource="scale")
        return scale_of(rt, updated.obj)

    # ------------------------------------------------------------- pieces
    def _decode_object(self, rt: ResourceType, body: Any, *, require_type: bool = False) -> Obj:
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        api_version = body.get("apiVersion")
        kind = body.get("kind")
        if rt.custom or require_type:
            if not kind:
                raise errors.bad_request(f"Object 'Kind' is missing in '{_short(body)}'")
            if not api_version:
                raise errors.bad_request(f"Object 'apiVersion' is missing in '{_short(body)}'")
        if api_version and api_version != rt.api_version:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({rt.api_version})"
            )
        if kind and kind != rt.kind:
            raise errors.bad_request(f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})")
        meta = body.get("metadata")
        if meta is None:
            meta = {}
        elif not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        # the apiserver's field order: apiVersion, kind, metadata, then the rest
        out: Obj = {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": meta}
        for key, value in body.items():
            if key not in out:
                out[key] = value
        return out

    def _check_identity(self, rt: ResourceType, ns: str, name: str, obj: Obj, *, patch: bool = False) -> None:
        meta = obj["metadata"]
        body_name = meta.get("name")
        if body_name is None and patch:
            meta["name"] = name
        elif body_name != name:
            raise errors.bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)

    def _check_preconditions(self, rt: ResourceType, old: Entry, meta: Obj) -> None:
        rv = meta.get("resourceVersion")
        if rv and rv != old.obj["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.plural, rt.group, meta["name"], errors.STALE_OBJECT)
        uid = meta.get("uid")
        have_uid = old.obj["metadata"].get("uid")
        if uid and uid != have_uid:
            raise errors.conflict(
                rt.plural,
                rt.group,
                meta["name"],
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {have_uid}",
            )

    def _admit_namespace(self, rt: ResourceType, obj: Obj) -> None:
        if not rt.namespaced:
            return
        ns = obj["metadata"]["namespace"]
        entry = self.namespace_entry(ns)
        if entry is None:
            raise errors.not_found("namespaces", "", ns)
        if entry.obj["metadata"].get("deletionTimestamp"):
            raise errors.forbidden_error(
                rt.plural,
                rt.group,
                obj["metadata"].get("name") or obj["metadata"].get("generateName") or "",
                f"unable to create new content in namespace {ns} because it is being terminated",
                [
                    {
                        "reason": "NamespaceTerminating",
                        "message": f"namespace {ns} is being terminated",
                        "field": "metadata.namespace",
                    }
                ],
            )

    def _to_storage(self, rt: ResourceType, obj: Obj, opts: WriteOptions) -> Obj:
        """The request's object, in the version it was sent in, converted to the storage form. A kind
        whose versions differ in more than apiVersion (events.k8s.io Events) is first decoded against
        its own schema, so a field unknown to that version is reported and dropped rather than
        carried across the conversion under another version's name."""
        if rt.to_served is not None and rt.schema is not None:
            _prune_and_default(rt, obj, opts)
        return rt.stored(obj)

    def _schema_pass(
        self,
        rt: ResourceType,
        obj: Obj,
        opts: WriteOptions,
        clean_old: Obj | None = None,
        copied: frozenset[str] = frozenset(),
    ) -> None:
        """Prune unknown fields (reporting them per fieldValidation), then apply defaults.
        `clean_old`: the stored object this write changes, when it went through this same
        schema (Entry.valid_under): what the write left as it was is not walked again, nor
        compared when it is in `copied` (_write)."""
        if rt.schema is None:
            return
        if rt.to_served is None:
            _prune_and_default(rt, obj, opts, clean_old, copied)
            return
        # the schema describes the served version (events.k8s.io field names, ...): decode against
        # it as the apiserver does, then convert back to the storage form in place
        view = rt.served(obj)
        _prune_and_default(rt, view, opts)
        stored = rt.stored(view)
        obj.clear()
        obj.update(stored)

    def _validate(
        self,
        rt: ResourceType,
        obj: Obj,
        old: Obj | None,
        opts: WriteOptions | None = None,
        *,
        old_entry: Entry | None = None,
        copied: frozenset[str] = frozenset(),
        meta_copied: bool = False,
    ) -> tuple[object | None, int | None]:
        """Raise APIError (422) for an invalid object. Returns what the new entry records: the
        schema the object passed (Entry.valid_under) or None when it has none, and the bound of
        its CEL rules' cost (Entry.cel_cost). When `old_entry` (the stored `old`) passed this same
        schema, what the write left unchanged is not checked again: same answers, less work;
        and the fields in `copied` (_write) are not even compared with old's, nor the metadata
        when `meta_copied` (a status write's: the stored object's but for managedFields)."""
        # built-in kinds validate metadata with kube-apiserver's rules, CRDs and custom resources
        # with apimachinery's (which only warns about finalizer names that are not qualified)
        kube_rules = not rt.custom and rt.group != "apiextensions.k8s.io"
        errs: list[FieldError] = []
        # an update's metadata errors are a function of the fields validate_object_meta reads, and
        # an old object that passed this schema here (valid_under) had none
        passed = old_entry is not None and rt.schema is not None and old_entry.valid_under is rt.schema
        if not (passed and old is not None and (meta_copied or _meta_unchanged(obj["metadata"], old["metadata"]))):
            errs = validate_object_meta(
                obj["metadata"],
                namespaced=rt.namespaced,
                name_rule=rt.name_rule,
                is_create=old is None,
                kube_finalizers=kube_rules,
            )
        if rt.custom and opts is not None:
            opts.warnings.extend(finalizer_warnings(obj["metadata"], old["metadata"] if old else None))
        checked: object | None = None
        cel_cost: int | None = None
        if rt.custom and rt.schema is not None:
            same_schema = old is not None and old_entry is not None and old_entry.valid_under is rt.schema
            clean_old = old if same_schema else None
            view = obj
            if clean_old is not None and copied:
                # the copied fields are old's (the same JSON): checked as old's own values, which the
                # walks find unchanged by identity, all the way down, without comparing them
                view = {k: (clean_old[k] if k in copied else v) for k, v in obj.items()}
            errs.extend(e for e in validate(view, rt.schema, clean_old=clean_old) if not e.field.startswith("metadata"))
            old_cost = old_entry.cel_cost if same_schema and old_entry is not None else None
            outcome = evaluate_object(rt.schema, view, old, errs, old_cost=old_cost)
            errs.extend(outcome.errors)
            if opts is not None:
                opts.warnings.extend(outcome.warnings)
            checked, cel_cost = rt.schema, outcome.cost
        if rt.validate is not None and not errs:
            errs.extend(rt.validate(obj, old))
        if errs:
            name = obj["metadata"].get("name") or obj["metadata"].get("generateName") or ""
            raise errors.invalid_object(rt.kind, rt.group, name, errs)
        return checked, cel_cost


def _prune_and_default(
    rt: ResourceType, obj: Obj, opts: WriteOptions, clean_old: Obj | None = None, copied: frozenset[str] = frozenset()
) -> None:
    """Decode the body as the apiserver does: custom resources against their structural schema,
    built-in kinds through their Go types (unknown fields, types, omitempty zero values)."""
    assert rt.schema is not None
    if not rt.custom and typed.supports(rt.api_version, rt.kind):
        dropped = typed.normalize(obj, rt.api_version, rt.kind).unknown
    else:
        dropped = prune(obj, rt.schema, clean_old=clean_old, copied=copied)
    if dropped and opts.field_validation != "Ignore":
        messages = [f'unknown field "{d}"' for d in dropped]
        if opts.field_validation == "Strict":
            raise errors.bad_request("strict decoding error: " + ", ".join(messages))
        opts.warnings.extend(messages)
    if rt.custom:
        apply_defaults(obj, rt.schema, clean_old=clean_old, copied=copied)


class _SnapshotView:
    """The objects of a store as they were at some revision (current objects with the
    changes made after that revision rolled back from the event history)."""

    def __init__(self, store: ResourceStore, overrides: dict[tuple[str, str], Entry | None]) -> None:
        self.store = store
        self.overrides = overrides

    def keys(self, ns: str | None) -> list[tuple[str, str]]:
        base = self.store.sorted_keys(ns)
        if not self.overrides:
            return base
        extra = [k for k in self.overrides if ns is None or k[0] == ns]
        return sorted(set(base) | set(extra))

    def get(self, key: tuple[str, str]) -> Entry | None:
        if key in self.overrides:
            return self.overrides[key]
        return self.store.get(*key)


# what validate_object_meta reads
VALIDATED_META = ("name", "generateName", "namespace", "labels", "annotations", "ownerReferences", "finalizers")


def _meta_unchanged(meta: Obj, old_meta: Obj) -> bool:
    """Whether every metadata field validate_object_meta reads is the old one (the same JSON)."""
    return all(unchanged(meta.get(key), old_meta.get(key)) for key in VALIDATED_META)


def _stored_as_served(rt: ResourceType, entry: Entry) -> bool:
    """Whether `entry`'s object is served and stored back unchanged through `rt` (no conversion,
    no apiVersion rewritten either way): a copy of it served is the copy stored."""
    return rt.serves_as_stored(entry.obj) and rt.is_storage_form


def _status_write_of(new: Obj, old: Obj) -> bool:
    """Whether `new` has the keys (top level and metadata, in order) that copying `old` and
    setting the status and managedFields gives: a key added goes last, a status removed goes."""

    def keys_after(before: Obj, key: str, present: bool) -> list[str]:
        keys = [k for k in before if k != key or present]
        if present and key not in before:
            keys.append(key)
        return keys

    return list(new) == keys_after(old, "status", "status" in new) and list(new["metadata"]) == keys_after(
        old["metadata"], "managedFields", True
    )


def _extra_blocks(rt: ResourceType, obj: Obj) -> bool:
    check = rt.extra.get("blocks_removal")
    return bool(check(obj)) if check is not None else False


def _spec_changed(old: Obj, new: Obj, *, status_apart: bool = True, copied: frozenset[str] = frozenset()) -> bool:
    """Whether a write changes what `generation` counts: everything outside metadata, and outside
    status too where status is its own subresource (a custom resource without one counts it).
    `copied`: fields of `new` that are copies of old's (_write), equal without comparing them."""
    ignored = {"metadata", "apiVersion", "kind", "status"} if status_apart else {"metadata", "apiVersion", "kind"}
    keys = (set(old) | set(new)) - ignored - copied
    return any(old.get(k) != new.get(k) for k in keys)


def _equal_but(new: Obj, old: Obj, copied: frozenset[str]) -> bool:
    """new == old, given that the fields in `copied` are copies of old's (equal, not compared)."""
    if not copied:
        return new == old
    return new.keys() == old.keys() and all(k in copied or v == old[k] for k, v in new.items())


def _annotations_changed(old: Obj, new: Obj) -> bool:
    # Semantic.DeepEqual: absent and empty annotations are the same
    return (old["metadata"].get("annotations") or {}) != (new["metadata"].get("annotations") or {})


def _field_of(obj: Obj, path: str) -> str:
    if path == "metadata.namespace":
        return str(obj["metadata"].get("namespace") or "")
    if path == "source":
        src = obj.get("source") or obj.get("deprecatedSource") or {}
        return str(src.get("component", "")) if isinstance(src, dict) else ""
    if path.startswith("regarding."):
        path = "involvedObject." + path[len("regarding.") :]
        obj = {"involvedObject": obj.get("regarding") or obj.get("involvedObject") or {}}
    if path == "reportingController":
        path = "reportingComponent"
        obj = {"reportingComponent": obj.get("reportingController") or obj.get("reportingComponent")}
    return field_value(obj, path)


def scale_of(rt: ResourceType, obj: Obj) -> Obj:
    from .jsonpath import get_path

    assert rt.scale is not None
    meta = obj["metadata"]
    spec_replicas = get_path(obj, rt.scale.spec_replicas)
    status_replicas = get_path(obj, rt.scale.status_replicas)
    status: Obj = {"replicas": status_replicas if isinstance(status_replicas, int) else 0}
    if rt.scale.label_selector:
        selector = get_path(obj, rt.scale.label_selector)
        if isinstance(selector, dict):  # built-ins keep a structured selector; Scale reports its text form
            selector = label_selector_to_string(selector)
        if isinstance(selector, str) and selector:
            status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
            "creationTimestamp": meta.get("creationTimestamp"),
        },
        "spec": {"replicas": spec_replicas if isinstance(spec_replicas, int) else 0},
        "status": status,
    }


def _short(body: Obj) -> str:
    text = orjson.dumps(body).decode()
    return text if len(text) < 200 else text[:200] + "..."


def _parse_rv(value: str) -> int:
    try:
        rv = int(value)
    except (TypeError, ValueError):
        raise errors.bad_request(f"invalid resource version: {value!r}") from None
    if rv < 0:
        raise errors.bad_request(f"invalid resource version: {value!r}")
    return rv


def _encode_continue(rev: int, key: tuple[str, str]) -> str:
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rev, "start": [key[0], key[1]]})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded))
        start = data["start"]
        return int(data["rv"]), (str(start[0]), str(start[1]))
    except (ValueError, KeyError, TypeError, IndexError, orjson.JSONDecodeError):
        raise errors.bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        ) from None


def is_deleted_event(type_: str) -> bool:
    return type_ == DELETED


def monotonic() -> float:
    return time.monotonic()
