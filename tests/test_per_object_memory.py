"""What a manager keeps per cached WD beyond its caches stays small (DESIGN §4; measured by
bench/bench_manager_memory.py, target <= 4 KiB per object at 100k): the strings its memos are
keyed by are shared, and its per-object records carry no instance dict."""

from __future__ import annotations

import orjson
import pytest

from federation.fleet.locations import CityTarget
from federation.fleet.propagation import _Change
from mcruntime.eventcorrelator import ObjectRef, SeriesKey, _Series
from mcruntime.request import Request
from projector.placementmemo import _Entry


def test_requests_share_one_string_per_namespace_and_name() -> None:
    """Every event and every cache read decodes fresh strings; two requests for one object,
    made from two decodes, hold the same string objects, and so do the memos keyed by them."""
    first, second = (orjson.loads(b'{"namespace": "default", "name": "wd-000123"}') for _ in range(2))
    assert first["name"] is not second["name"], "a decode makes its own strings (else this test shows nothing)"
    a = Request("web", first["namespace"], first["name"])
    b = Request("web", second["namespace"], second["name"])
    assert a == b and hash(a) == hash(b)
    assert a.name is b.name and a.namespace is b.namespace
    other = Request("web", orjson.loads(b'"default"'), "other")
    assert other.namespace is a.namespace, "every WD of a namespace shares its namespace string"


@pytest.mark.parametrize(
    "record",
    [
        _Change(1, 0.0),  # the propagation clock's entry, one per WD
        CityTarget("DFW"),  # the placement memo's target, one per WD
        _Entry(("uid", 1)),  # the placement memo's entry, one per WD
        ObjectRef("WorkloadDeployment", "default", "api", "uid"),  # the Event correlator's series, per WD
        SeriesKey(ObjectRef("WorkloadDeployment", "default", "api", "uid"), "Warning", "R", "A", "c"),
        _Series("api.1", "default", 1, 0.0),
    ],
    ids=lambda r: type(r).__name__,
)
def test_per_object_records_carry_no_instance_dict(record: object) -> None:
    assert not hasattr(record, "__dict__"), f"{type(record).__name__} is kept per object: slot it"
