"""Field ownership (`metadata.managedFields`) and server-side apply.

Semantics follow structured-merge-diff as the apiserver uses it:
- A field set is the set of paths an object specifies. Scalars are members; items of
  associative lists (`k:{...}`) and sets (`v:...`) are members besides their children;
  atomic lists/maps are single members; map entries that are not declared schema fields
  (labels, data, untyped subtrees) are members too, which is where `.` nodes come from.
- Update (POST/PUT/PATCH): the writer gains the fields it added or changed; every other
  manager loses those and any field that was removed.
- Apply: the applied configuration is merged into the live object; fields this manager
  applied before and no longer applies are removed unless another manager owns them;
  changing a field another manager owns is a conflict (409) unless `force=true`, in which
  case ownership moves.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import orjson

from .errors import APIError, bad_request
from .jsondata import json_copy

Obj = dict[str, Any]
Path = tuple[str, ...]

_CONTAINER = object()

IGNORED_META = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
        "generateName",
    }
)
STATUS: Path = ("f:status",)

# metadata is always typed as ObjectMeta, whatever a CRD's schema says about it
OBJECT_META_SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        "ownerReferences": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {k: {"type": "string"} for k in ("apiVersion", "kind", "name", "uid")}
                | {"controller": {"type": "boolean"}, "blockOwnerDeletion": {"type": "boolean"}},
            },
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["uid"],
        },
    },
}


# ------------------------------------------------------------ schema lookups


def _child(schema: Obj | None, key: str) -> tuple[Obj | None, bool]:
    """(schema of key, whether key is a declared struct field)."""
    if schema is None:
        return None, False
    props = schema.get("properties")
    if props and key in props:
        return props[key], True
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        return extra, False
    return None, False


def _list_type(schema: Obj | None) -> tuple[str, list[str]]:
    if schema is None:
        return "atomic", []
    kind = schema.get("x-kubernetes-list-type")
    if kind == "map":
        return "map", list(schema.get("x-kubernetes-list-map-keys") or [])
    if kind == "set":
        return "set", []
    return "atomic", []


def _items(schema: Obj | None) -> Obj | None:
    if schema is None:
        return None
    items = schema.get("items")
    return items if isinstance(items, dict) else None


def _is_atomic_map(schema: Obj | None) -> bool:
    return bool(schema) and schema.get("x-kubernetes-map-type") == "atomic"  # type: ignore[union-attr]


def _item_element(item: Any, kind: str, keys: list[str], index: int, items: Obj | None = None) -> str:
    if kind == "map" and isinstance(item, dict):
        # a key field the item leaves out takes its schema default (structured-merge-diff does the
        # same, so an applied `{containerPort: 80}` is the live `{containerPort: 80, protocol: TCP}`)
        props = (items or {}).get("properties") or {}
        key: Obj = {}
        for k in keys:
            if k in item:
                key[k] = item[k]
            elif isinstance(props.get(k), dict) and "default" in props[k]:
                key[k] = props[k]["default"]
        if len(key) == len(keys):
            return "k:" + orjson.dumps(key, option=orjson.OPT_SORT_KEYS).decode()
    if kind == "set":
        return "v:" + orjson.dumps(item).decode()
    return f"i:{index}"


# ------------------------------------------------------------ field sets


def members(obj: Obj, schema: Obj | None, *, scope: str = "main", has_status: bool = False) -> dict[Path, Any]:
    """Member paths of `obj` mapped to their value (leaves) or a container marker. `scope`
    "status": only the members under status; with `has_status`, the main scope's leave it out.
    (Each top-level field's members start with its own name: the scope picks fields, not members.)"""
    out: dict[Path, Any] = {}
    if scope == "status":
        if "status" in obj:
            _field(obj["status"], schema, "status", STATUS, out)
        return out
    for key, value in obj.items():
        if key in ("apiVersion", "kind") or (has_status and key == "status"):
            continue
        path: Path = ("f:" + key,)
        if key == "metadata" and isinstance(value, dict):
            for mkey, mval in value.items():
                if mkey not in IGNORED_META:
                    _field(mval, OBJECT_META_SCHEMA, mkey, (*path, "f:" + mkey), out)
            continue
        _field(value, schema, key, path, out)
    return out


def members_since(
    obj: Obj,
    schema: Obj | None,
    old: Obj,
    old_members: dict[Path, Any],
    *,
    scope: str = "main",
    has_status: bool = False,
) -> dict[Path, Any]:
    """members(obj), given `old_members` = members(old) (same schema and scope): the members of a
    field (a metadata field) whose value equals the old one are taken from old_members rather
    than walked again, and so are those of a changed map's fields that equal the old ones (a
    spec whose replicas changed walks its replicas, not its template). Their leaf values are the
    old ones, equal under == (a True where the old object had 1): what compare() asks of them;
    the member paths are the same."""
    groups: dict[Path, list[tuple[Path, Any]]] = {}
    for member, leaf in old_members.items():
        group = member[:2] if member[0] == "f:metadata" else member[:1]
        groups.setdefault(group, []).append((member, leaf))
    out: dict[Path, Any] = {}
    old_meta = old.get("metadata")
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        path: Path = ("f:" + key,)
        # the scope's filter, as members() applies it
        if scope == "status" and path != STATUS:
            continue
        if scope != "status" and has_status and path == STATUS:
            continue
        if key == "metadata" and isinstance(value, dict):
            for mkey, mval in value.items():
                if mkey in IGNORED_META:
                    continue
                mpath = (*path, "f:" + mkey)
                if isinstance(old_meta, dict) and mkey in old_meta and old_meta[mkey] == mval:
                    out.update(groups.get(mpath, ()))  # unchanged: its old members
                else:
                    _field(mval, OBJECT_META_SCHEMA, mkey, mpath, out)
            continue
        before = old.get(key)
        if key in old and before == value:
            out.update(groups.get(path, ()))
        elif isinstance(value, dict) and isinstance(before, dict):
            _field_since(value, schema, key, path, before, groups.get(path, ()), out)
        else:
            _field(value, schema, key, path, out)
    return out


def _field_since(
    value: Obj, parent: Obj | None, key: str, path: Path, before: Obj, old_members: Any, out: dict[Path, Any]
) -> None:
    """_field(value, parent, key, path, out) for a map field that changed from `before`, whose
    members were `old_members`: a field of it equal to its old self keeps its old members."""
    sub, declared = _child(parent, key)
    if _is_atomic_map(sub):
        _field(value, parent, key, path, out)
        return
    kept: dict[Path, list[tuple[Path, Any]]] = {}
    for member, leaf in old_members:
        if len(member) > len(path):
            kept.setdefault(member[: len(path) + 1], []).append((member, leaf))
    # (as _walk does for a map, but for the fields that kept their value)
    props: Obj = (sub.get("properties") or {}) if sub is not None else {}
    extra = sub.get("additionalProperties") if sub is not None else None
    if not isinstance(extra, dict):
        extra = None
    for ckey, child in value.items():
        cpath = (*path, "f:" + ckey)
        if ckey in before and before[ckey] == child:
            out.update(kept.get(cpath, ()))
            continue
        csub = props.get(ckey)
        cdeclared = csub is not None
        if not cdeclared:
            csub = extra
        if isinstance(child, (dict, list)):
            _walk(child, csub, cpath, out)
            if not cdeclared or child == {}:
                out.setdefault(cpath, _leaf(child))
        else:
            out[cpath] = child
    if value == {} or not declared:
        out.setdefault(path, _leaf(value))


def _field(value: Any, parent: Obj | None, key: str, path: Path, out: dict[Path, Any]) -> None:
    """The members of one field `key` of a map whose schema is `parent`, at `path`; a field
    with no members below it (null, empty, or not declared) is a leaf itself."""
    sub, declared = _child(parent, key)
    _walk(value, sub, path, out)
    if value is None or value == {} or not declared:
        out.setdefault(path, _leaf(value))


def _leaf(value: Any) -> Any:
    return _CONTAINER if isinstance(value, (dict, list)) and value else value


def _walk(value: Any, schema: Obj | None, path: Path, out: dict[Path, Any]) -> None:
    if isinstance(value, dict):
        if _is_atomic_map(schema):
            out[path] = value
            return
        # _child's answers, looked up once per map rather than once per key
        props: Obj = (schema.get("properties") or {}) if schema is not None else {}
        extra = schema.get("additionalProperties") if schema is not None else None
        if not isinstance(extra, dict):
            extra = None
        for key, child in value.items():
            sub = props.get(key)
            declared = sub is not None
            if not declared:
                sub = extra
            cpath = (*path, "f:" + key)
            if isinstance(child, (dict, list)):
                _walk(child, sub, cpath, out)
                if not declared or child == {}:
                    out.setdefault(cpath, _leaf(child))
            else:
                out[cpath] = child  # a scalar: its own member, whatever the schema says
    elif isinstance(value, list):
        kind, keys = _list_type(schema)
        if kind == "atomic":
            out[path] = value
            return
        items = _items(schema)
        for i, item in enumerate(value):
            cpath = (*path, _item_element(item, kind, keys, i, items))
            _walk(item, items, cpath, out)
            out.setdefault(cpath, _leaf(item))
    else:
        out[path] = value


def compare(old: dict[Path, Any], new: dict[Path, Any]) -> tuple[set[Path], set[Path], set[Path]]:
    """(added, modified, removed) between two member maps."""
    added = new.keys() - old.keys()
    removed = old.keys() - new.keys()
    modified = {
        p for p in new.keys() & old.keys() if new[p] is not _CONTAINER and old[p] is not _CONTAINER and new[p] != old[p]
    }
    return set(added), modified, set(removed)


# ------------------------------------------------------------ fieldsV1 coding


def to_fields_v1(paths: set[Path]) -> Obj:
    """Encode a field set as a fieldsV1 tree: `{}` for a leaf member, `"."` marking a member
    that also has members below it. Paths are visited in sorted order, so every level's
    keys come out sorted without a second pass."""
    root: Obj = {}
    member_nodes: list[Obj] = []
    for path in sorted(paths):
        node = root
        for element in path:
            child = node.get(element)
            if child is None:
                child = node[element] = {}
            node = child
        member_nodes.append(node)
    for node in member_nodes:
        if node:
            node["."] = {}
    return root


def from_fields_v1(tree: Obj, prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    for key, child in tree.items():
        if key == ".":
            continue
        path = (*prefix, key)
        if not isinstance(child, dict):
            continue
        if not child or "." in child:
            out.add(path)
        out |= from_fields_v1(child, path)
    return out


def path_string(path: Path) -> str:
    out = []
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            out.append("." + rest)
        elif kind == "k":
            try:
                keys = orjson.loads(rest)
                out.append("[" + ",".join(f"{k}={orjson.dumps(v).decode()}" for k, v in keys.items()) + "]")
            except orjson.JSONDecodeError:
                out.append(f"[{rest}]")
        elif kind == "v":
            out.append(f"[={rest}]")
        else:
            out.append(f"[{rest}]")
    return "".join(out)


# ------------------------------------------------------------ managers


@dataclass
class Managed:
    manager: str
    operation: str
    subresource: str
    api_version: str
    time: str
    fields: set[Path] = field(default_factory=set)
    # the fieldsV1 tree this entry was decoded from, when this server encoded it from `fields`
    # (Encodings): an unchanged field set is written back without encoding it again
    encoded: tuple[Obj, frozenset[Path]] | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.manager, self.operation, self.subresource)


class Encodings:
    """fieldsV1 trees this server encoded, by identity, with the field set each encodes. A stored
    object keeps the very dicts its write encoded, so the next write on it reads its field sets
    back without decoding them and, for the managers it leaves alone, without encoding them.
    Only trees encoded here count (a client's own managedFields need not be in normal form)."""

    LIMIT = 2048  # (a tree and its set: a few KB)

    def __init__(self) -> None:
        # (an OrderedDict: dropping a plain dict's oldest key scans past every key dropped before,
        # microseconds per write once full)
        self._trees: OrderedDict[int, tuple[Obj, frozenset[Path]]] = OrderedDict()

    def lookup(self, tree: Any) -> tuple[Obj, frozenset[Path]] | None:
        found = self._trees.get(id(tree))
        return found if found is not None and found[0] is tree else None

    def add(self, tree: Obj, fields: frozenset[Path]) -> None:
        trees = self._trees
        if len(trees) >= self.LIMIT:
            trees.popitem(last=False)  # the oldest first (as FieldManager._remember)
        trees[id(tree)] = (tree, fields)  # (holding the tree keeps its id its own)


def decode_managed(entries: Any, known: Encodings | None = None) -> dict[tuple[str, str, str], Managed]:
    out: dict[tuple[str, str, str], Managed] = {}
    if not isinstance(entries, list):
        return out
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        tree = entry.get("fieldsV1") or {}
        encoded = known.lookup(tree) if known is not None else None
        m = Managed(
            manager=str(entry.get("manager", "")),
            operation=str(entry.get("operation", "Update")),
            subresource=str(entry.get("subresource", "")),
            api_version=str(entry.get("apiVersion", "")),
            time=str(entry.get("time", "")),
            fields=set(encoded[1]) if encoded is not None else from_fields_v1(tree),
            encoded=encoded,
        )
        out[m.key] = m
    return out


def encode_managed(managers: dict[tuple[str, str, str], Managed], known: Encodings | None = None) -> list[Obj]:
    ordered = sorted(managers.values(), key=lambda m: (m.operation != "Apply", m.time, m.manager))
    out = []
    for m in ordered:
        if m.encoded is not None and m.encoded[1] == m.fields:
            # a copy (no dict shared between two objects); a tree holds only names and {}, so
            # orjson's round trip is exact, and the cheapest copy there is
            tree: Obj = orjson.loads(orjson.dumps(m.encoded[0]))
            fields = m.encoded[1]
        else:
            tree = to_fields_v1(m.fields)
            fields = frozenset(m.fields)
        if known is not None:
            known.add(tree, fields)
        entry: Obj = {
            "manager": m.manager,
            "operation": m.operation,
            "apiVersion": m.api_version,
            "time": m.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": tree,
        }
        if m.subresource:
            entry["subresource"] = m.subresource
        out.append(entry)
    return out


def validate_managed_fields(entries: Any) -> None:
    if entries is None:
        return
    if not isinstance(entries, list):
        raise bad_request("metadata.managedFields must be a list")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise bad_request(f"metadata.managedFields[{i}] must be an object")
        if entry.get("operation") not in ("Apply", "Update"):
            raise bad_request(f"metadata.managedFields[{i}].operation must be Apply or Update")
        if entry.get("fieldsType", "FieldsV1") != "FieldsV1":
            raise bad_request(f"metadata.managedFields[{i}].fieldsType must be FieldsV1")


# ------------------------------------------------------------ the manager


class FieldManager:
    """Field ownership for one resource type (its schema says which lists are associative)."""

    # member maps remembered per object: the stored object a write starts from is the object the
    # previous write stored, so its members were computed then (by identity; see _recall)
    REMEMBERED = 2048  # (a WorkloadDeployment's map: ~4 KB, and the object it belongs to; 2 scopes each)

    def __init__(self, schema: Obj | None, *, has_status: bool) -> None:
        self.schema = schema
        self.has_status = has_status
        self._remembered: OrderedDict[tuple[int, bool], tuple[Obj, dict[Path, Any]]] = OrderedDict()  # (as Encodings)
        self._encodings = Encodings()

    def _members(self, obj: Obj | None, subresource: str) -> dict[Path, Any]:
        if obj is None:
            return {}
        scope = "status" if subresource == "status" else "main"
        return members(obj, self.schema, scope=scope, has_status=self.has_status)

    def _members_since(self, obj: Obj, old: Obj, old_members: dict[Path, Any], subresource: str) -> dict[Path, Any]:
        scope = "status" if subresource == "status" else "main"
        return members_since(obj, self.schema, old, old_members, scope=scope, has_status=self.has_status)

    def _remember(self, obj: Obj, subresource: str, found: dict[Path, Any]) -> None:
        """Keep `obj`'s members for when it comes back as a write's old object. Only for objects
        nobody changes afterwards outside the metadata fields members ignore (a stored object, or
        the object an update is about to store). The entry holds `obj`, so its id stays its own.
        The oldest goes first: the writes of one object come close together (a create, its
        status, a copy's apply), so a bounded memory keeps what is about to be asked for."""
        remembered = self._remembered
        if len(remembered) >= self.REMEMBERED:
            remembered.popitem(last=False)
        remembered[(id(obj), subresource == "status")] = (obj, found)

    def _remember_other_scope(self, new: Obj, old: Obj, subresource: str) -> None:
        """With a status subresource, the writes of an object alternate between the scopes (a
        spec or metadata write, the status, ...): the members of the scope this write is not in
        follow from `old`'s, when remembered, as members_since gives them (what this write left
        as it was is not walked), so the next write of the other scope finds them."""
        other = "" if subresource == "status" else "status"
        kept = self._remembered.get((id(old), other == "status"))
        if kept is not None and kept[0] is old:
            self._remember(new, other, self._members_since(new, old, kept[1], other))

    def _stored_members(self, obj: Obj | None, subresource: str) -> dict[Path, Any]:
        """The members of a stored object (never changed after commit): remembered or computed."""
        if obj is None:
            return {}
        kept = self._remembered.get((id(obj), subresource == "status"))
        if kept is not None and kept[0] is obj:
            return kept[1]
        found = self._members(obj, subresource)
        self._remember(obj, subresource, found)
        return found

    def update(
        self,
        old: Obj | None,
        new: Obj,
        *,
        manager: str,
        subresource: str,
        api_version: str,
        now: str,
    ) -> None:
        """Record an Update by `manager` in new.metadata.managedFields."""
        meta = new["metadata"]
        old_entries = old["metadata"].get("managedFields") if old else None
        incoming = meta.get("managedFields")
        if incoming is not None and incoming != old_entries:
            validate_managed_fields(incoming)
            if incoming == []:
                # an explicit empty list resets ownership (then this writer owns what it wrote)
                managers: dict[tuple[str, str, str], Managed] = {}
                old = None
            else:
                meta["managedFields"] = incoming
                return
        else:
            managers = decode_managed(old_entries, self._encodings)
        added: set[Path]
        modified: set[Path]
        removed: set[Path]
        if old is None:  # a create: everything is added, nothing to compare with
            new_m = self._members(new, subresource)
            added, modified, removed = set(new_m), set(), set()
        else:
            old_m = self._stored_members(old, subresource)
            new_m = self._members_since(new, old, old_m, subresource)
            added, modified, removed = compare(old_m, new_m)
            if self.has_status:
                self._remember_other_scope(new, old, subresource)
        self._remember(new, subresource, new_m)
        changed = added | modified
        key = (manager, "Update", subresource)
        for k, m in managers.items():
            if k != key:
                m.fields -= changed
                m.fields -= removed
        mine = managers.get(key)
        if mine is None:
            mine = Managed(manager, "Update", subresource, api_version, now)
        before = set(mine.fields)
        mine.fields = (mine.fields - removed) | changed
        if mine.fields != before or key not in managers:
            mine.time = now
            mine.api_version = api_version
        managers[key] = mine
        managers = {k: m for k, m in managers.items() if m.fields}
        if managers:
            meta["managedFields"] = encode_managed(managers, self._encodings)
        else:
            meta.pop("managedFields", None)

    def apply(
        self,
        live: Obj | None,
        config: Obj,
        *,
        manager: str,
        subresource: str,
        api_version: str,
        force: bool,
        now: str,
        resource: str,
        group: str,
        stored: Obj | None = None,
    ) -> Obj:
        """Merge an applied configuration into `live` and return the new object. `stored`: the
        stored object `live` is an unchanged, private copy of, when it is one: its members and
        field sets are known, and `live` is merged into rather than copied first (the result takes
        its values, and may change them: the caller uses `live` no more). Without `stored`, `live`
        is left as it was and the result shares nothing with it."""
        if config.get("metadata", {}).get("managedFields") is not None:
            raise bad_request("metadata.managedFields must be nil")
        source = stored if stored is not None else live  # (the stored object holds encoded trees)
        managers = decode_managed(source["metadata"].get("managedFields") if source else None, self._encodings)
        key = (manager, "Apply", subresource)
        last = managers[key].fields if key in managers else set()
        applied_members = self._members(config, subresource)
        applied = set(applied_members)

        # `live` private (stored given): the result takes its values as they are, else copies
        own = stored is not None
        base = (live if own else json_copy(live)) if live is not None else {}
        merged = _merge(base, config, self.schema)
        if live is not None and subresource == "status":
            # a status apply changes the status alone: everything else is live's
            status = merged.get("status")
            merged = dict(live) if own else json_copy(live)
            if status is not None:
                merged["status"] = status
        elif live is not None:
            merged["metadata"] = dict(merged["metadata"])
            for field_name in IGNORED_META:
                if field_name == "managedFields":
                    continue  # (written below, from the field sets)
                if field_name in live["metadata"]:
                    value = live["metadata"][field_name]
                    merged["metadata"][field_name] = value if own else json_copy(value)
                else:
                    merged["metadata"].pop(field_name, None)
            if self.has_status:
                _reset_status(merged, live, own)

        # conflicts come from what merging the configuration changes; removing what this manager
        # stopped applying (below) never conflicts (structured-merge-diff prunes after its update)
        live_m = self._stored_members(stored, subresource) if stored is not None else self._members(live, subresource)
        merged_m = (
            self._members(merged, subresource)
            if live is None
            else self._members_since(merged, live, live_m, subresource)
        )
        added, modified, _ = compare(live_m, merged_m)
        changed = added | modified
        conflicts: dict[tuple[str, str, str], set[Path]] = {}
        for k, m in managers.items():
            if k == key:
                continue
            clash = m.fields & changed
            if clash:
                conflicts[k] = clash
        if conflicts and not force:
            raise _conflict_error(conflicts, managers, resource, group, merged)

        dropped = last - applied
        if dropped:
            self._remove_unapplied(merged, dropped, applied, managers, key, conflicts)
            merged_m = self._members(merged, subresource)  # (what the removals left: walked again)
        _, _, removed = compare(live_m, merged_m)
        for k, m in managers.items():
            if k != key:
                m.fields -= conflicts.get(k, set())
                m.fields -= removed
        mine = managers.get(key)
        if mine is None or mine.fields != applied:
            managers[key] = Managed(manager, "Apply", subresource, api_version, now, applied)
        managers = {k: m for k, m in managers.items() if m.fields}
        meta = merged.setdefault("metadata", {})
        if managers:
            meta["managedFields"] = encode_managed(managers, self._encodings)
        else:
            meta.pop("managedFields", None)
        result: Obj = merged
        return result

    @staticmethod
    def _remove_unapplied(
        merged: Obj,
        dropped: set[Path],
        applied: set[Path],
        managers: dict[tuple[str, str, str], Managed],
        key: tuple[str, str, str],
        conflicts: dict[tuple[str, str, str], set[Path]],
    ) -> None:
        """Remove from `merged` the fields this manager applied before and no longer applies,
        unless another manager owns them (or something below them)."""
        others: set[Path] = set()
        for k, m in managers.items():
            if k != key:
                others |= m.fields - conflicts.get(k, set())
        other_prefixes = {p[:i] for p in others for i in range(1, len(p) + 1)}
        kept = other_prefixes | {p[:i] for p in applied for i in range(1, len(p) + 1)}
        for path in sorted(dropped, key=len):
            if path in other_prefixes:
                continue
            _remove_path(merged, path)
            # the fields above a manager's leaves count as its own too (structured-merge-diff's
            # EnsureNamedFieldsAreMembers): one left empty goes unless someone still owns or applies it
            for i in range(len(path) - 1, 0, -1):
                ancestor = path[:i]
                if ancestor in kept or _value_at(merged, ancestor) not in ({}, []):
                    break
                _remove_path(merged, ancestor)


def _reset_status(merged: Obj, live: Obj, own: bool) -> None:
    """An apply to the main resource leaves the status as it was (`own`: live's value is private)."""
    if "status" in live:
        merged["status"] = live["status"] if own else json_copy(live["status"])
    else:
        merged.pop("status", None)


def _conflict_error(
    conflicts: dict[tuple[str, str, str], set[Path]],
    managers: dict[tuple[str, str, str], Managed],
    resource: str,
    group: str,
    obj: Obj,
) -> APIError:
    causes = []
    lines = []
    for k, paths in sorted(conflicts.items()):
        m = managers[k]
        who = f'conflict with "{m.manager}"'
        if m.subresource:
            who += f' with subresource "{m.subresource}"'
        if m.operation == "Update":
            who += f" using {m.api_version}"
        for p in sorted(paths):
            causes.append({"reason": "FieldManagerConflict", "message": who, "field": path_string(p)})
            lines.append(f"{who}: {path_string(p)}")
    count = len(causes)
    noun = "conflict" if count == 1 else "conflicts"
    message = f"Apply failed with {count} {noun}: " + "\n".join(lines)
    name = obj.get("metadata", {}).get("name", "")
    details: Obj = {"name": name, "kind": resource, "causes": causes}
    if group:
        details["group"] = group
    return APIError(409, "Conflict", message, details)


def _merge(live: Any, config: Any, schema: Obj | None) -> Any:
    if isinstance(config, dict) and isinstance(live, dict) and not _is_atomic_map(schema):
        out = dict(live)
        for key, value in config.items():
            sub, _ = _child(schema, key)
            out[key] = _merge(live[key], value, sub) if key in live else json_copy(value)
        return out
    if isinstance(config, list) and isinstance(live, list):
        kind, keys = _list_type(schema)
        items = _items(schema)
        if kind == "map":
            ident = [_item_element(v, kind, keys, i, items) for i, v in enumerate(live)]
            out_list = list(live)
            for i, value in enumerate(config):
                element = _item_element(value, kind, keys, i, items)
                if element in ident:
                    idx = ident.index(element)
                    out_list[idx] = _merge(out_list[idx], value, items)
                else:
                    out_list.append(json_copy(value))
                    ident.append(element)
            return out_list
        if kind == "set":
            out_list = list(live)
            for value in config:
                if value not in out_list:
                    out_list.append(json_copy(value))
            return out_list
    return json_copy(config)


def _remove_path(obj: Any, path: Path) -> None:
    cur = obj
    for i, element in enumerate(path):
        last = i == len(path) - 1
        kind, _, rest = element.partition(":")
        if kind == "f":
            if not isinstance(cur, dict) or rest not in cur:
                return
            if last:
                del cur[rest]
                return
            cur = cur[rest]
        elif isinstance(cur, list):
            idx = _find_item(cur, kind, rest)
            if idx is None:
                return
            if last:
                del cur[idx]
                return
            cur = cur[idx]
        else:
            return


def _value_at(obj: Any, path: Path) -> Any:
    """The value at a field-set path, or None when it is not there."""
    cur = obj
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            if not isinstance(cur, dict) or rest not in cur:
                return None
            cur = cur[rest]
        elif isinstance(cur, list):
            idx = _find_item(cur, kind, rest)
            if idx is None:
                return None
            cur = cur[idx]
        else:
            return None
    return cur


def _find_item(values: list[Any], kind: str, rest: str) -> int | None:
    try:
        target: Any = orjson.loads(rest) if kind in ("k", "v") else int(rest)
    except (orjson.JSONDecodeError, ValueError):
        return None
    for idx, value in enumerate(values):
        if kind == "k" and isinstance(value, dict) and all(value.get(k) == v for k, v in target.items()):
            return idx
        if kind == "v" and value == target:
            return idx
        if kind == "i" and idx == target:
            return idx
    return None
