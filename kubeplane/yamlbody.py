"""YAML request bodies, decoded with the limits kube-apiserver's YAML decoder applies.

kube-apiserver turns YAML into JSON with sigs.k8s.io/yaml over goyaml v2, which refuses a
document whose aliases expand it out of proportion ("document contains excessive aliasing",
the billion-laughs fix for CVE-2019-11253) and one nested past its max depth. PyYAML does
neither: an alias is a shared reference, so a 500-byte body can stand for gigabytes once
written out, and deep nesting exhausts the interpreter's stack. `load` composes the node
graph with a depth bound, counts decode work the way goyaml does before building any
value, and returns plain, unshared JSON data (timestamps stay strings, as in kube)."""

from __future__ import annotations

from typing import Any

import orjson
import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from .limits import MANAGED_FIELDS_EXTRA_DEPTH, MAX_DEPTH

# composing stops here, before the interpreter's stack is at risk; the body's depth is then
# checked against MAX_DEPTH as every body is (managedFields may nest a little deeper)
_COMPOSE_DEPTH = MAX_DEPTH + MANAGED_FIELDS_EXTRA_DEPTH

# goyaml v2.4 decode.go: past 1000 decode operations with more than 100 from aliases, the
# share coming from aliases may be at most 99% for documents up to 400,000 operations,
# scaling down to 10% at 4,000,000.
_ALIAS_RATIO_LOW = 400_000
_ALIAS_RATIO_HIGH = 4_000_000


class YAMLLimitError(ValueError):
    """A YAML body past one of the decoder's limits (the message is goyaml's)."""


def allowed_alias_ratio(decode_count: int) -> float:
    if decode_count <= _ALIAS_RATIO_LOW:
        return 0.99
    if decode_count >= _ALIAS_RATIO_HIGH:
        return 0.10
    span = _ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW
    return 0.99 - 0.89 * ((decode_count - _ALIAS_RATIO_LOW) / span)


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that stops composing past MAX_DEPTH nested collections."""

    def __init__(self, stream: bytes) -> None:
        super().__init__(stream)
        self._depth = 0
        self.anchor_names: dict[int, str] = {}  # id(node) -> its anchor, for error messages

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        nested = self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent)
        anchor = None if self.check_event(yaml.AliasEvent) else getattr(self.peek_event(), "anchor", None)  # type: ignore[no-untyped-call]
        if nested:
            self._depth += 1
            if self._depth > _COMPOSE_DEPTH:
                raise YAMLLimitError(f"yaml: exceeded max depth of {MAX_DEPTH}")
        try:
            node: Node | None = super().compose_node(parent, index)
        finally:
            if nested:
                self._depth -= 1
        if anchor is not None and node is not None:
            self.anchor_names[id(node)] = anchor
        return node

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        # keys become strings as they are built (YAMLToJSON), so 1 and true stay two keys
        self.flatten_mapping(node)
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                key = _json_key(key, key_node)
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


def _json_key(key: Any, node: Node) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, (int, float)):
        return str(key)
    raise yaml.constructor.ConstructorError(
        "while constructing a mapping", None, f"found a key JSON cannot hold: {key!r}", node.start_mark
    )


# sigs.k8s.io/yaml keeps timestamps as the strings they were written as
_BoundedLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def check_aliasing(root: Node, anchor_names: dict[int, str] | None = None) -> None:
    """Walk the node graph in document order as goyaml's decoder would, counting every node
    decoded (an alias decodes its whole target again) and failing like it does."""
    decoded = 0
    via_alias = 0
    defined: set[int] = set()
    on_path: set[int] = set()
    # (node, inside an alias expansion, leaving the node)
    stack: list[tuple[Node, bool, bool]] = [(root, False, False)]
    while stack:
        node, in_alias, leaving = stack.pop()
        key = id(node)
        if leaving:
            on_path.discard(key)
            continue
        if key in on_path:
            name = (anchor_names or {}).get(key, "")
            raise YAMLLimitError(f"yaml: anchor '{name}' value contains itself")
        if key in defined and not in_alias:
            decoded += 1  # the alias node itself
            in_alias = True
        defined.add(key)
        decoded += 1
        if in_alias:
            via_alias += 1
        if via_alias > 100 and decoded > 1000 and via_alias / decoded > allowed_alias_ratio(decoded):
            raise YAMLLimitError("yaml: document contains excessive aliasing")
        children: list[Node]
        if isinstance(node, SequenceNode):
            children = list(node.value)
        elif isinstance(node, MappingNode):
            children = [part for pair in node.value for part in pair]
        else:
            continue
        on_path.add(key)
        stack.append((node, in_alias, True))
        stack.extend((child, in_alias, False) for child in reversed(children))


def load(raw: bytes) -> Any:
    """One YAML document as JSON data. Raises YAMLLimitError past a limit, yaml.YAMLError for
    malformed YAML and ValueError for values JSON cannot hold."""
    loader = _BoundedLoader(raw)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        check_aliasing(root, loader.anchor_names)
        data = loader.construct_document(root)
    finally:
        loader.dispose()
    try:
        # the round trip unshares aliases (each becomes its own copy, as after YAMLToJSON)
        return orjson.loads(orjson.dumps(data))
    except (orjson.JSONEncodeError, TypeError) as exc:
        raise ValueError(f"cannot represent the YAML value as JSON: {exc}") from None
