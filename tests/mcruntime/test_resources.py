"""Resources, views and requests as keys: the hash each computes once is the hash of its fields (as
the generated dataclass hash was), equal values hash alike, and a pickled one is hashed
afresh where it is loaded (a string's hash differs between processes)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from mcruntime.objects import strip_for_cache
from mcruntime.request import Request
from mcruntime.resources import CONFIGMAPS, NAMESPACES, Resource
from mcruntime.view import View

REPO = Path(__file__).resolve().parents[2]
WIDGETS = Resource("example.com", "v1", "widgets", "Widget")


def _fields(resource: Resource) -> tuple[str, str, str, str, bool]:
    return resource.group, resource.version, resource.plural, resource.kind, resource.namespaced


@pytest.mark.parametrize("resource", [CONFIGMAPS, NAMESPACES, WIDGETS, Resource("", "v1", "pods", "Pod", False)])
def test_a_resource_hashes_as_its_fields_and_an_equal_copy_alike(resource: Resource) -> None:
    copy = Resource(*_fields(resource))
    assert copy is not resource
    assert hash(resource) == hash(_fields(resource)) == hash(copy)
    assert copy == resource and {resource: 1}[copy] == 1
    assert replace(resource, kind="Other") != resource
    assert hash(replace(resource, kind="Other")) == hash((*_fields(resource)[:3], "Other", resource.namespaced))
    assert repr(copy) == repr(resource) and "_hash" not in repr(resource)


@pytest.mark.parametrize(
    "view",
    [
        View(CONFIGMAPS),
        View(WIDGETS, namespace="ns", label_selector="app=web", field_selector="metadata.name=x"),
        View(NAMESPACES, transform=None, alias="fleet", metadata_only=True),
    ],
)
def test_a_view_hashes_as_its_fields_and_an_equal_copy_alike(view: View) -> None:
    fields = (view.resource, view.namespace, view.label_selector, view.field_selector, view.transform, view.alias,
              view.metadata_only)  # fmt: skip
    copy = View(Resource(*_fields(view.resource)), *fields[1:])  # type: ignore[arg-type]
    assert copy is not view and copy.resource is not view.resource
    assert hash(view) == hash(fields) == hash(copy)
    assert copy == view and {view: 1}[copy] == 1
    # a replaced view hashes as its new fields
    other = replace(view, alias="other")
    assert other != view and hash(other) == hash((*fields[:5], "other", view.metadata_only))


def test_an_empty_narrowing_hashes_as_none_after_normalising() -> None:
    assert View(CONFIGMAPS, namespace="", label_selector="", field_selector="") == View(CONFIGMAPS)
    assert hash(View(CONFIGMAPS, namespace="", label_selector="")) == hash(View(CONFIGMAPS))
    assert hash(View(CONFIGMAPS)) == hash((CONFIGMAPS, None, None, None, strip_for_cache, "", False))


def test_a_pickled_resource_and_view_hash_afresh_in_another_process() -> None:
    """Loaded under another PYTHONHASHSEED, the hash is that process's hash of the fields,
    not the one stored here (a dict keyed by it would miss every lookup)."""
    view = View(WIDGETS, namespace="ns", alias="fleet")
    assert pickle.loads(pickle.dumps(view)) == view
    check = (
        "import pickle, sys; from mcruntime.resources import Resource; "
        "r, v = pickle.loads(sys.stdin.buffer.read()); "
        "assert hash(r) == hash((r.group, r.version, r.plural, r.kind, r.namespaced)), 'resource'; "
        "assert hash(v) == hash((v.resource, v.namespace, v.label_selector, v.field_selector, v.transform, v.alias, "
        "v.metadata_only)), 'view'; "
        "assert {r: 1}[Resource('example.com', 'v1', 'widgets', 'Widget')] == 1"
    )
    for seed in ("1", "2"):
        ran = subprocess.run([sys.executable, "-c", check], input=pickle.dumps((WIDGETS, view)), capture_output=True,
                             timeout=60, check=False, cwd=REPO, env={**os.environ, "PYTHONHASHSEED": seed})  # fmt: skip
        assert ran.returncode == 0, ran.stderr.decode()[-2000:]


def test_a_request_hashes_as_its_fields_once_and_keeps_its_dataclass_behaviour(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request is hashed about a dozen times between its event and its reconcile (the
    queue's sets and timestamps, the rate limiters): its hash is computed when it is made,
    not from a new tuple each time; equality, order, repr and pickling stay the fields'."""
    request = Request("web", "default", "api")
    copy = Request("web", "default", "api")
    assert hash(request) == hash(("web", "default", "api")) == hash(copy)
    assert copy == request and {request: 1}[copy] == 1 and copy is not request
    assert Request("web", "default", "b") < Request("web", "zzz", "a") and sorted([copy, request]) == [request, copy]
    assert repr(request) == "Request(cluster='web', namespace='default', name='api')"
    assert pickle.loads(pickle.dumps(request)) == request
    with pytest.raises(AttributeError):
        request.name = "other"  # type: ignore[misc]
    hashed: list[object] = []
    real_hash = hash

    def counting_hash(value: object) -> int:
        hashed.append(value)
        return real_hash(value)

    monkeypatch.setattr("builtins.hash", counting_hash)
    for _ in range(5):
        assert {request: 1}[copy] == 1
    assert hashed == [], "hashing a made request builds and hashes no tuple of its fields"


def test_a_pickled_request_hashes_afresh_in_another_process() -> None:
    request = Request("web", "default", "api")
    check = (
        "import pickle, sys; from mcruntime.request import Request; "
        "r = pickle.loads(sys.stdin.buffer.read()); "
        "assert hash(r) == hash((r.cluster, r.namespace, r.name)) and r == Request('web', 'default', 'api')"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    ran = subprocess.run([sys.executable, "-c", check], input=pickle.dumps(request), capture_output=True, env=env,
                         cwd=REPO, check=False)  # fmt: skip
    assert ran.returncode == 0, ran.stderr.decode()
