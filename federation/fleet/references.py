"""Referenced data: the ConfigMaps and Secrets a WorkloadDeployment's template references,
what its copies say they expect, and the companion copies written into a cell (DESIGN.md
§3 "Companions"). Pure: plain JSON dicts in, plain values out.

Contract
- `references(wd)`: every ConfigMap and Secret the template (`spec.template.spec`) names,
  one `Reference` per (kind, name), sorted: sandbox containers' `env[].valueFrom.
  configMapKeyRef` / `secretKeyRef`, `envFrom[].configMapRef` / `secretRef`, `volumes[].
  configMap.name` / `secret.secretName`, and `runtime.sandbox.imagePullSecrets[].name`
  (Secrets). A reference is optional only when every mention of it says `optional: true`;
  image pull secrets are never optional. Entries without a name (or malformed ones) are
  not references: the API server's schema refuses them before anything reads them here.
- `expected_referenced_data(wd)`: the `expected-referenced-data` annotation value of its
  copies: a JSON array of `"<Kind>/<name>"` of the required (non-optional) references,
  sorted; None when there are none (the annotation is then left off). Computed from the
  spec alone, so it is written with the spec and never changes at steady state. Names
  only, no resourceVersions: a source's resourceVersion lives in the project, a
  companion's in the cell, and carrying it would turn every source edit into a write of
  every copy (the companion's own update is what the cell waits on).
- `parse_expected(value)`: the annotation back to (kind, name) pairs; ValueError naming
  what is wrong for anything else.
- `companion_for(source, namespace, project_namespace, referenced_by)`: the companion
  (apply intent) of a source ConfigMap or Secret: same kind and name, in the cell
  namespace, labelled `compute.datumapis.com/referenced-data: "true"` and with the
  project namespace (like the copy), annotated `compute.datumapis.com/referenced-by`
  (sorted JSON array of `"<namespace>/<name>"` of the referencing WDs; with `--sharding`
  each shard writes its own WDs under `referenced_by_key(shard)`); `data`,
  `binaryData`, and a Secret's `type` copied. With `--sharding` (`share_label`) it is also
  labelled `referenced-by.sharding.compute.datumapis.com/<shard>: "true"` (`referenced_by_key`:
  the same key as the shard's annotation), the label a shard's cell caches select
  (`shard_share`, `sharers`). Nothing else of the source travels:
  not `immutable` (a source deleted and recreated must still update its companion),
  not its labels or annotations (kubectl's last-applied annotation
  holds a Secret's data in clear), not its owner references. `SourceTooLarge` (a
  ValueError) when its data is over `MAX_COMPANION_BYTES`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from federation.api.constants import Annotation, Label
from mcruntime.fields import get_mapping, get_str, get_str_map, is_object
from mcruntime.resources import CONFIGMAPS, SECRETS, Resource

CONFIG_MAP = "ConfigMap"
SECRET = "Secret"
SOURCE_RESOURCES: dict[str, Resource] = {CONFIG_MAP: CONFIGMAPS, SECRET: SECRETS}
KINDS = (CONFIG_MAP, SECRET)
# Per companion (data + binaryData, as stored): what a tenant may push into every cell.
MAX_COMPANION_BYTES = 256 * 1024

REFERENCED_DATA_LABEL = str(Label.REFERENCED_DATA)
EXPECTED_ANNOTATION = str(Annotation.EXPECTED_REFERENCED_DATA)
REFERENCED_BY_ANNOTATION = str(Annotation.REFERENCED_BY)
# with --sharding, the referencing WDs each shard owns, one annotation per shard (a shard id is
# a DNS label, a valid annotation name): shards whose WDs share a companion each write their own
SHARD_REFERENCED_BY_PREFIX = "referenced-by.sharding.compute.datumapis.com/"


def referenced_by_key(shard: str | None) -> str:
    """The annotation a companion lists its referencing WDs under: one per shard with sharding."""
    return REFERENCED_BY_ANNOTATION if shard is None else SHARD_REFERENCED_BY_PREFIX + shard


def sharers(companion: Mapping[str, Any]) -> set[str]:
    """The shards that hold a share of a companion: their label `referenced_by_key(shard)`,
    or its annotation alone (as written before the label)."""
    keys = [*get_str_map(companion, "metadata.labels"), *get_str_map(companion, "metadata.annotations")]
    prefix = SHARD_REFERENCED_BY_PREFIX
    return {key.removeprefix(prefix) for key in keys if key.startswith(prefix)}


def shard_share(shard: str) -> str:
    """The label selector of the companions a shard holds a share of (its cell caches')."""
    return referenced_by_key(shard)


@dataclass(frozen=True, order=True, slots=True)
class Reference:
    kind: str  # CONFIG_MAP or SECRET
    name: str
    optional: bool = False

    @property
    def token(self) -> str:
        return f"{self.kind}/{self.name}"


class SourceTooLarge(ValueError):
    """A source whose data is larger than a companion may be."""


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if is_object(value) else {}


def _items(value: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(value, list):
        yield from (item for item in value if is_object(item))


def _mention(kind: str, ref: Any, name_key: str = "name", *, can_be_optional: bool = True) -> Reference | None:
    ref = _mapping(ref)
    name = ref.get(name_key)
    if not isinstance(name, str) or not name:
        return None
    return Reference(kind, name, optional=can_be_optional and ref.get("optional") is True)


def _mentions(template_spec: Mapping[str, Any]) -> Iterator[Reference | None]:
    sandbox = _mapping(_mapping(template_spec.get("runtime")).get("sandbox"))
    for container in _items(sandbox.get("containers")):
        for env in _items(container.get("env")):
            source = _mapping(env.get("valueFrom"))
            yield _mention(CONFIG_MAP, source.get("configMapKeyRef"))
            yield _mention(SECRET, source.get("secretKeyRef"))
        for env_from in _items(container.get("envFrom")):
            yield _mention(CONFIG_MAP, env_from.get("configMapRef"))
            yield _mention(SECRET, env_from.get("secretRef"))
    for volume in _items(template_spec.get("volumes")):
        yield _mention(CONFIG_MAP, volume.get("configMap"))
        yield _mention(SECRET, volume.get("secret"), "secretName")
    for pull in _items(sandbox.get("imagePullSecrets")):
        yield _mention(SECRET, pull, can_be_optional=False)


def template_references(template_spec: Mapping[str, Any]) -> list[Reference]:
    """The references of an Instance template's (or an Instance's) spec; see `references`."""
    merged: dict[tuple[str, str], bool] = {}
    for ref in _mentions(template_spec):
        if ref is not None:
            key = (ref.kind, ref.name)
            merged[key] = merged.get(key, True) and ref.optional
    return sorted(Reference(kind, name, optional) for (kind, name), optional in merged.items())


def references(wd: Mapping[str, Any]) -> list[Reference]:
    """The ConfigMaps and Secrets a WorkloadDeployment's template references."""
    template = _mapping(_mapping(wd.get("spec")).get("template"))
    return template_references(_mapping(template.get("spec")))


def expected_tokens(refs: Iterable[Reference]) -> list[str]:
    return sorted({ref.token for ref in refs if not ref.optional})


def expected_referenced_data(wd: Mapping[str, Any]) -> str | None:
    """The copies' `expected-referenced-data` annotation value, or None when nothing is required."""
    return _expected_value(references(wd))


def _expected_value(refs: Iterable[Reference]) -> str | None:
    tokens = expected_tokens(refs)
    return json.dumps(tokens, separators=(",", ":")) if tokens else None


@dataclass(frozen=True, slots=True)
class Referenced:
    """A WD's `references` and its copies' `expected_referenced_data`, made together from
    one walk of its template, for a caller that reads both several times per spec (and
    remembers them: `placementmemo.PlacementMemo.referenced`)."""

    refs: tuple[Reference, ...]
    expected: str | None


def referenced(wd: Mapping[str, Any]) -> Referenced:
    refs = references(wd)
    return Referenced(tuple(refs), _expected_value(refs))


def referencing_namespace(wd: Mapping[str, Any]) -> list[str]:
    """Index: a WD's namespace when its template references any ConfigMap or Secret (a WD
    that references none is in no bucket), so the WDs that need companions are found
    without decoding the rest of the namespace."""
    namespace = get_mapping(wd, "metadata").get("namespace")
    return [str(namespace)] if namespace and _references_any(wd) else []


def _references_any(wd: Mapping[str, Any]) -> bool:
    """Whether `references(wd)` is not empty, stopping at the first reference (the index
    above reads it on every stored version of every WD: no list merged and sorted)."""
    template = _mapping(_mapping(wd.get("spec")).get("template"))
    return any(ref is not None for ref in _mentions(_mapping(template.get("spec"))))


def referencing(wds: Iterable[Mapping[str, Any]], kind: str, name: str) -> list[Mapping[str, Any]]:
    """The WDs (of one namespace) whose template references the `kind` object `name`."""
    return [wd for wd in wds if any(ref.kind == kind and ref.name == name for ref in references(wd))]


def missing_sources(
    wd: Mapping[str, Any], exists: Callable[[str, str], bool], *, known: Referenced | None = None
) -> list[str]:
    """The `"<Kind>/<name>"` of the required references for which `exists(kind, name)` is
    false: in the project namespace, what no companion can be made of (SourceNotFound).
    `known`: the WD's `referenced(wd)`, when the caller has it."""
    refs = known.refs if known is not None else references(wd)
    return [ref.token for ref in refs if not ref.optional and not exists(ref.kind, ref.name)]


def source_identity(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The view of a project ConfigMap or Secret the management controllers cache: which
    exist and their resourceVersion, nothing of their content (a companion's data is read
    live when it is written, so a project's Secrets are never held in memory)."""
    m = get_mapping(obj, "metadata")
    keep = ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp")
    return {"metadata": {k: m[k] for k in keep if k in m}}


def parse_expected(value: str) -> list[tuple[str, str]]:
    """The (kind, name) pairs of an `expected-referenced-data` value."""
    try:
        decoded = json.loads(value)
    except ValueError as exc:
        raise ValueError(f"annotation {EXPECTED_ANNOTATION}: not JSON: {exc}") from exc
    if not isinstance(decoded, list):
        raise ValueError(f"annotation {EXPECTED_ANNOTATION}: expected a JSON array, got {type(decoded).__name__}")
    out = []
    for i, token in enumerate(decoded):
        kind, _, name = token.partition("/") if isinstance(token, str) else ("", "", "")
        if kind not in KINDS or not name:
            raise ValueError(
                f'annotation {EXPECTED_ANNOTATION}[{i}]: expected "ConfigMap/<name>" or "Secret/<name>", got {token!r}'
            )
        out.append((kind, name))
    return out


def data_size(source: Mapping[str, Any]) -> int:
    """Bytes of a ConfigMap's or Secret's keys and values, as stored (base64 for Secrets)."""
    size = 0
    for section in ("data", "binaryData", "stringData"):
        for key, value in _mapping(source.get(section)).items():
            size += len(str(key)) + len(str(value))
    return size


def companion_for(
    source: Mapping[str, Any],
    namespace: str,
    project_namespace: str,
    referenced_by: Iterable[str],
    *,
    referenced_by_annotation: str = REFERENCED_BY_ANNOTATION,
    share_label: str | None = None,
) -> dict[str, Any]:
    """The companion of `source` in cell namespace `namespace` (see the module docstring)."""
    kind = source.get("kind")
    name = get_str(source, "metadata.name", required=False)
    if kind not in KINDS or not isinstance(name, str) or not name:
        raise ValueError(f"companion source: expected a named ConfigMap or Secret, got kind {kind!r} name {name!r}")
    size = data_size(source)
    if size > MAX_COMPANION_BYTES:
        raise SourceTooLarge(
            f'{kind} "{name}" holds {size} bytes of data, more than a companion may ({MAX_COMPANION_BYTES})'
        )
    labels = {REFERENCED_DATA_LABEL: "true", str(Label.UPSTREAM_NAMESPACE): project_namespace}
    if share_label is not None:  # sharded: the label this shard's cell caches select
        labels[share_label] = "true"
    companion: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": {referenced_by_annotation: json.dumps(sorted(set(referenced_by)), separators=(",", ":"))},
        },
    }
    for section in ("data", "binaryData"):
        values = source.get(section)
        if is_object(values) and values:
            companion[section] = dict(values)
    if kind == SECRET:
        companion["type"] = source.get("type") or "Opaque"
    return companion


def is_companion(obj: Mapping[str, Any]) -> bool:
    return get_str_map(obj, "metadata.labels").get(REFERENCED_DATA_LABEL) == "true"
