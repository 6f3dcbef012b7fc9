"""The pure Event correlator: which occurrences become new Events, which are counted on
an existing one, which are dropped (client-go's series key, window and spam filter)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mcruntime.eventcorrelator import Count, Create, EventCorrelator, ObjectRef, SeriesKey

WD = ObjectRef("WorkloadDeployment", "default", "web", "uid-1")
OTHER = ObjectRef("WorkloadDeployment", "default", "api", "uid-2")
KEY = SeriesKey(WD, "Warning", "CellUnreachable", "", "federator")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run(steps: list[tuple[float, SeriesKey]], **kwargs: float) -> list[str]:
    """Feed occurrences at (seconds since start, key); the recorder's writes succeed.
    Returns what was decided for each: "new", "count N" or "throttled"."""
    clock = Clock()
    start = clock.now
    correlator = EventCorrelator(clock=clock, **kwargs)  # type: ignore[arg-type]
    out = []
    for at, key in steps:
        clock.now = start + at
        decision = correlator.correlate(key)
        if isinstance(decision, Create):
            correlator.recorded(key, f"event-{len(out)}", key.regarding.namespace, 1)
            out.append("new")
        elif isinstance(decision, Count):
            correlator.recorded(key, decision.name, decision.namespace, decision.count)
            out.append(f"count {decision.count} on {decision.name}")
        else:
            out.append("throttled")
    return out


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        pytest.param([(0, KEY)], ["new"], id="first occurrence is a new Event"),
        pytest.param(
            [(0, KEY), (1, KEY), (2, KEY)],
            ["new", "count 2 on event-0", "count 3 on event-0"],
            id="same reason on the same object is counted",
        ),
        pytest.param(
            [(0, KEY), (300, KEY), (600, KEY)],
            ["new", "count 2 on event-0", "count 3 on event-0"],
            id="a series that keeps recurring within the window stays one Event",
        ),
        pytest.param([(0, KEY), (361, KEY)], ["new", "new"], id="after a quiet window a new Event"),
        pytest.param(
            [(0, KEY), (1, replace(KEY, regarding=OTHER))], ["new", "new"], id="another object is another Event"
        ),
        pytest.param([(0, KEY), (1, replace(KEY, reason="CellReady"))], ["new", "new"], id="another reason"),
        pytest.param([(0, KEY), (1, replace(KEY, type="Normal"))], ["new", "new"], id="another type"),
        pytest.param([(0, KEY), (1, replace(KEY, action="Delete"))], ["new", "new"], id="another action"),
        pytest.param(
            [(0, KEY), (1, replace(KEY, component="cell-wd"))], ["new", "new"], id="another reporting component"
        ),
        pytest.param(
            [(0, KEY), (1, replace(KEY, regarding=replace(WD, uid="uid-9")))],
            ["new", "new"],
            id="a recreated object (new uid) is another object",
        ),
    ],
)
def test_series(steps: list[tuple[float, SeriesKey]], expected: list[str]) -> None:
    assert run(steps) == expected


def test_the_spam_filter_drops_beyond_the_burst_then_refills() -> None:
    steps = [(0.0, KEY)] * 4 + [(0.0, replace(KEY, reason=f"R{i}")) for i in range(2)] + [(30.0, KEY), (31.0, KEY)]
    got = run(steps, burst=5, refill_seconds=30.0)
    # 5 tokens per object whatever the reason; one more 30 s later
    assert got == [
        "new",
        "count 2 on event-0",
        "count 3 on event-0",
        "count 4 on event-0",
        "new",
        "throttled",
        "count 5 on event-0",
        "throttled",
    ]


def test_the_spam_filter_is_per_object() -> None:
    steps = [(0.0, KEY), (0.0, KEY), (0.0, replace(KEY, regarding=OTHER))]
    assert run(steps, burst=1) == ["new", "throttled", "new"]


def test_a_forgotten_series_starts_a_new_event() -> None:
    correlator = EventCorrelator(clock=Clock())
    correlator.recorded(KEY, "event-0", "default", 4)
    assert correlator.correlate(KEY) == Count("event-0", "default", 5)
    correlator.forget(KEY)
    assert correlator.correlate(KEY) == Create()


def test_memory_is_bounded() -> None:
    correlator = EventCorrelator(clock=Clock(), cache_size=2)
    keys = [replace(KEY, reason=f"R{i}") for i in range(3)]
    for i, key in enumerate(keys):
        correlator.recorded(key, f"event-{i}", "default", 1)
    assert correlator.correlate(keys[0]) == Create()  # evicted, least recently used
    assert correlator.correlate(keys[2]) == Count("event-2", "default", 2)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="window > 0"):
        EventCorrelator(window=0)
    with pytest.raises(ValueError, match="burst >= 1"):
        EventCorrelator(burst=0)
