"""The transport's bound on concurrent requests (mcruntime/slots.py): the limit, first come
first served, and cancellation (anyio's cancel scopes on asyncio, as the runtime runs) that
neither loses a slot nor lets a waiter jump the line."""

from __future__ import annotations

import asyncio

import anyio
import anyio.lowlevel
import pytest

from mcruntime.slots import Slots


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_at_most_the_limit_is_taken_and_a_newcomer_waits_behind_the_line() -> None:
    slots = Slots(2)
    assert slots.try_take() and slots.try_take()
    assert not slots.try_take() and slots.in_use == 2
    order: list[str] = []
    with anyio.fail_after(5):
        await line_up(slots, order)
    for _ in range(2):
        slots.give_back()
    assert slots.in_use == 0 and slots.try_take()


async def line_up(slots: Slots, order: list[str]) -> None:
    async def waiter(name: str) -> None:
        await slots.take()
        order.append(name)

    async with anyio.create_task_group() as tg:
        for name in ("a", "b", "c"):
            tg.start_soon(waiter, name)
            await settle()
        assert slots.waiting == 3 and order == []
        slots.give_back()  # handed to "a", not freed
        await settle()
        assert order == ["a"] and slots.in_use == 2 and slots.waiting == 2
        assert not slots.try_take()  # a slot given back goes to the line, never to a newcomer
        slots.give_back()
        slots.give_back()
        await settle()
        assert order == ["a", "b", "c"] and slots.in_use == 2


async def test_a_waiter_cancelled_before_its_turn_leaves_the_line() -> None:
    slots = Slots(1)
    assert slots.try_take()
    got: list[str] = []

    async def waiter(name: str, scope: anyio.CancelScope) -> None:
        with scope:
            await slots.take()
            got.append(name)

    first, second = anyio.CancelScope(), anyio.CancelScope()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter, "first", first)
            await settle()
            tg.start_soon(waiter, "second", second)
            await settle()
            first.cancel()
            await settle()
            assert slots.waiting == 1
            slots.give_back()
    assert got == ["second"] and slots.in_use == 1 and slots.waiting == 0


async def test_a_waiter_cancelled_after_it_was_handed_a_slot_hands_it_on() -> None:
    """A task cancelled (`Task.cancel`) between being handed a slot and running again gives
    it to the next waiter: no slot is lost with it."""
    slots = Slots(1)
    assert slots.try_take()
    tasks = [asyncio.ensure_future(slots.take()) for _ in range(2)]
    await settle()
    slots.give_back()  # handed to the first, which has not run since
    tasks[0].cancel()
    await settle()
    assert tasks[0].cancelled() and tasks[1].done() and not tasks[1].cancelled()
    assert slots.in_use == 1 and slots.waiting == 0


async def test_a_scope_cancelled_after_its_waiter_was_handed_a_slot_leaves_it_the_slot() -> None:
    """anyio does not interrupt a wait that has already ended: the waiter holds the slot and
    gives it back as any holder does (the transport's `finally`)."""
    slots = Slots(1)
    assert slots.try_take()
    got: list[str] = []

    async def waiter(name: str, scope: anyio.CancelScope) -> None:
        with scope:
            await slots.take()
            try:
                got.append(name)
                await anyio.lowlevel.checkpoint()
            finally:
                slots.give_back()

    first = anyio.CancelScope()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter, "first", first)
            tg.start_soon(waiter, "second", anyio.CancelScope())
            await settle()
            slots.give_back()  # handed to "first"; its scope is cancelled before it runs again
            first.cancel()
    assert got == ["first", "second"] and slots.in_use == 0 and slots.waiting == 0


async def test_a_waiter_cancelled_as_the_line_moves_past_it_is_not_counted() -> None:
    """Cancelled (its future cancelled) and passed over by a give_back before it ran again:
    it leaves no trace, and the slot went to the next waiter."""
    slots = Slots(1)
    assert slots.try_take()
    tasks = [asyncio.ensure_future(slots.take()) for _ in range(2)]
    await settle()
    tasks[0].cancel()
    slots.give_back()
    await settle()
    assert tasks[0].cancelled() and tasks[1].done() and not tasks[1].cancelled()
    assert slots.in_use == 1 and slots.waiting == 0
    slots.give_back()
    assert slots.in_use == 0


async def test_a_timed_out_wait_gives_up_its_place() -> None:
    slots = Slots(1)
    assert slots.try_take()
    with anyio.move_on_after(0.01):
        await slots.take()
    assert slots.waiting == 0 and slots.in_use == 1
    slots.give_back()
    assert slots.try_take()


def test_a_slot_not_taken_cannot_be_given_back_and_the_limit_is_positive() -> None:
    with pytest.raises(RuntimeError, match="not taken"):
        Slots(1).give_back()
    with pytest.raises(ValueError, match="at least 1"):
        Slots(0)
