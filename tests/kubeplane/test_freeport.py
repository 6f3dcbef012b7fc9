"""`free_port` draws from outside the kernel's range for outgoing connections, where a port
found free is not taken again by the next connection before its listener binds it."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kubeplane import freeport


def test_a_port_below_the_ephemeral_range_that_binds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "range").write_text("32768\t60999\n")
    monkeypatch.setattr(freeport, "LOCAL_PORT_RANGE", tmp_path / "range")
    for _ in range(20):
        port = freeport.free_port()
        assert freeport.LOWEST <= port < 32768
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_a_range_starting_low_draws_above_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "range").write_text("10500 60000\n")
    monkeypatch.setattr(freeport, "LOCAL_PORT_RANGE", tmp_path / "range")
    assert 60000 < freeport.free_port() <= 65535


def test_every_draw_taken_falls_back_to_the_kernels_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(freeport, "_bindable", lambda port: False)
    port = freeport.free_port()
    assert 0 < port <= 65535


def test_a_kernel_range_spanning_both_ends_falls_back_to_the_kernels_choice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "range").write_text("1024 65535\n")  # nothing below or above it to draw from
    monkeypatch.setattr(freeport, "LOCAL_PORT_RANGE", tmp_path / "range")
    port = freeport.free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_a_port_is_handed_out_once_though_nothing_bound_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the processes a benchmark starts get their ports before any binds: a port drawn again
    # is still bindable, and two of them would fight for it ("address already in use")
    (tmp_path / "range").write_text("11000\t60999\n")  # 1,000 ports to draw from
    monkeypatch.setattr(freeport, "LOCAL_PORT_RANGE", tmp_path / "range")
    monkeypatch.setattr(freeport, "_handed_out", set())
    ports = [freeport.free_port() for _ in range(150)]  # drawn blind, a repeat is near certain (1 - 1e-5)
    assert len(set(ports)) == len(ports)
