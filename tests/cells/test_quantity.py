"""Kubernetes quantities: exact parsing, canonical cpu/memory output, clear refusals."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cells.quantity import format_cpu, format_memory, parse_quantity


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("500m", Fraction(1, 2)),
        ("1", Fraction(1)),
        ("1.5", Fraction(3, 2)),
        (".5", Fraction(1, 2)),
        ("0", Fraction(0)),
        (2, Fraction(2)),
        (1073741824, Fraction(2**30)),
        ("2Gi", Fraction(2 * 2**30)),
        ("512Mi", Fraction(512 * 2**20)),
        ("1Ki", Fraction(1024)),
        ("1k", Fraction(1000)),
        ("1G", Fraction(10**9)),
        ("1E", Fraction(10**18)),
        ("1Ei", Fraction(2**60)),
        ("100u", Fraction(1, 10**4)),
        ("250n", Fraction(1, 4 * 10**6)),
        ("1e3", Fraction(1000)),
        ("1E-3", Fraction(1, 1000)),
        ("1.5e+2", Fraction(150)),
        ("+1", Fraction(1)),
    ],
)
def test_parse(value: Any, expected: Fraction) -> None:
    assert parse_quantity(value, "f") == expected


@pytest.mark.parametrize(
    "value",
    ["", "abc", "1 Gi", "1gi", "1GiB", "-1", "-500m", -1, 1.5, True, None, [1], "1e1.5", "1e400", "Gi"],
)
def test_malformed_or_negative_quantities_name_the_field(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^spec\.x\.cpu: "):
        parse_quantity(value, "spec.x.cpu")


@pytest.mark.parametrize(
    ("cores", "text"),
    [
        (Fraction(1), "1"),
        (Fraction(2), "2"),
        (Fraction(1, 2), "500m"),
        (Fraction(3, 2), "1500m"),
        (Fraction(0), "0"),
        (Fraction(1, 10**4), "1m"),  # rounded up to a whole millicore
        (Fraction(1001, 1000), "1001m"),
    ],
)
def test_format_cpu(cores: Fraction, text: str) -> None:
    assert format_cpu(cores) == text


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (Fraction(2 * 2**30), "2Gi"),
        (Fraction(512 * 2**20), "512Mi"),
        (Fraction(1536 * 2**20), "1536Mi"),
        (Fraction(1024), "1Ki"),
        (Fraction(10**9), "1G"),
        (Fraction(1500), "1500"),
        (Fraction(1000), "1k"),
        (Fraction(0), "0"),
        (Fraction(1, 2), "1"),  # rounded up to a whole byte
        (Fraction(1023), "1023"),
    ],
)
def test_format_memory(amount: Fraction, text: str) -> None:
    assert format_memory(amount) == text


@given(st.integers(0, 10**6))
def test_cpu_round_trips_through_text(millis: int) -> None:
    cores = Fraction(millis, 1000)
    assert parse_quantity(format_cpu(cores), "cpu") == cores


@given(st.integers(0, 2**50))
def test_memory_round_trips_through_text(amount: int) -> None:
    assert parse_quantity(format_memory(Fraction(amount)), "memory") == amount
