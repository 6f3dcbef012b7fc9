"""The Kubernetes JSONPath subset used by printer columns and scale paths."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.jsonpath import JSONPathError, compile_path, get_path, set_path

OBJ: dict[str, Any] = {
    "metadata": {"name": "x", "labels": {"app.kubernetes.io/name": "web"}},
    "spec": {"replicas": 3, "ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]},
    "status": {
        "conditions": [
            {"type": "Ready", "status": "True", "count": 2},
            {"type": "Synced", "status": "False", "count": 5},
        ]
    },
}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (".metadata.name", ["x"]),
        ("{.metadata.name}", ["x"]),
        ("$.spec.replicas", [3]),
        (".spec.ports[0].port", [80]),
        (".spec.ports[-1].name", ["https"]),
        (".spec.ports[*].port", [80, 443]),
        (".spec.ports[0:1].name", ["http"]),
        (".metadata.labels['app.kubernetes.io/name']", ["web"]),
        (r".metadata.labels.app\.kubernetes\.io/name", ["web"]),
        ('.status.conditions[?(@.type=="Ready")].status', ["True"]),
        (".status.conditions[?(@.type!='Ready')].type", ["Synced"]),
        (".status.conditions[?(@.count>3)].type", ["Synced"]),
        (".status.conditions[?(@.count<=2)].type", ["Ready"]),
        (".status.conditions[?(@.missing)].type", []),
        ("..port", [80, 443]),
        (".spec.*", [3, [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]]),
        (".spec.absent", []),
        (".spec.ports[7].port", []),
        (".metadata.name.deeper", []),
    ],
)
def test_compile_path(expr: str, expected: list[Any]) -> None:
    assert compile_path(expr)(OBJ) == expected


def test_get_and_set_simple_paths() -> None:
    assert get_path(OBJ, ".spec.replicas") == 3
    assert get_path(OBJ, ".spec.nothing") is None
    target: dict[str, Any] = {"spec": "not-a-map"}
    set_path(target, ".spec.replicas", 5)
    assert target == {"spec": {"replicas": 5}}
    set_path(target, ".status.scale.replicas", 1)
    assert target["status"] == {"scale": {"replicas": 1}}


@pytest.mark.parametrize("expr", [".spec.ports[abc]", ".spec.ports[", ".status.conditions[?(@.type ~ 'x')]"])
def test_invalid_expressions(expr: str) -> None:
    with pytest.raises(JSONPathError):
        compile_path(expr)
