from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable

import anyio
import anyio.lowlevel
import pytest

from mcruntime import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    QueueShutDown,
    WorkQueue,
)
from tests.support import eventually


def fast_queue() -> WorkQueue[str]:
    return WorkQueue("test", rate_limiter=ItemExponentialFailureRateLimiter(0.001, 0.01))


async def test_an_item_queued_many_times_is_stored_once() -> None:
    q = fast_queue()
    for _ in range(5):
        q.add("a")
    q.add("b")
    assert len(q) == 2
    assert await q.get() == "a"
    assert await q.get() == "b"
    assert len(q) == 0


async def test_an_item_added_while_processing_is_requeued_after_done_not_before() -> None:
    q = fast_queue()
    q.add("a")
    item = await q.get()
    q.add("a")
    q.add("a")
    assert len(q) == 0, "a key being processed must not be handed to a second worker"
    q.done(item)
    assert len(q) == 1, "the re-add during processing must come back exactly once"
    assert await q.get() == "a"


async def test_under_load_no_key_is_processed_concurrently_and_no_update_is_lost() -> None:
    q: WorkQueue[str] = fast_queue()
    keys = [f"key-{i}" for i in range(5)]
    state = dict.fromkeys(keys, 0)  # the "object" each key stands for; producers bump it
    seen = dict.fromkeys(keys, -1)  # the state the last processing of each key observed
    active: set[str] = set()
    violations: list[str] = []
    rng = random.Random(7)

    async def producer(n: int) -> None:
        for _ in range(100):
            key = rng.choice(keys)
            state[key] += 1
            q.add(key)
            if rng.random() < 0.5:
                await anyio.lowlevel.checkpoint()

    async def worker() -> None:
        while True:
            try:
                key = await q.get()
            except QueueShutDown:
                return
            if key in active:
                violations.append(key)
            active.add(key)
            observed = state[key]
            for _ in range(rng.randint(0, 3)):
                await anyio.lowlevel.checkpoint()  # work that yields, so other workers interleave
            seen[key] = observed
            active.discard(key)
            q.done(key)

    async with anyio.create_task_group() as workers:
        for _ in range(8):
            workers.start_soon(worker)
        async with anyio.create_task_group() as producers:
            for n in range(50):  # 50 tasks x 100 adds = 5000 adds of 5 keys
                producers.start_soon(producer, n)
        await eventually(lambda: not len(q) and not q.processing, what="the queue to drain")
        q.shutdown()
    assert violations == []
    assert seen == state, "the final processing of each key must observe its last state"


async def test_add_after_delays_and_the_earliest_time_wins() -> None:
    q = fast_queue()
    q.add_after("late", 0.3)
    q.add_after("soon", 0.02)
    q.add_after("moved-up", 60)
    q.add_after("moved-up", 0.05)
    assert len(q) == 0
    with anyio.fail_after(5):
        assert await q.get() == "soon"
        assert await q.get() == "moved-up"
        assert await q.get() == "late"


async def test_a_delayed_add_that_comes_due_while_queued_is_deduplicated() -> None:
    q = fast_queue()
    q.add("a")
    q.add_after("a", 0.01)
    await anyio.sleep(0.05)
    assert len(q) == 1
    assert await q.get() == "a"
    assert len(q) == 0


def test_item_exponential_backoff_doubles_to_a_cap_and_forget_resets() -> None:
    rl: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.005, 0.02)
    assert [rl.when("a") for _ in range(4)] == [0.005, 0.01, 0.02, 0.02]
    assert rl.num_requeues("a") == 4
    assert rl.when("b") == 0.005, "backoff is per item"
    rl.forget("a")
    assert rl.num_requeues("a") == 0
    assert rl.when("a") == 0.005


def test_bucket_limits_the_overall_rate_beyond_the_burst() -> None:
    now = [0.0]
    rl: BucketRateLimiter[str] = BucketRateLimiter(qps=10, burst=2, clock=lambda: now[0])
    assert rl.when("a") == 0
    assert rl.when("b") == 0
    assert rl.when("c") == pytest.approx(0.1)
    assert rl.when("d") == pytest.approx(0.2)
    now[0] = 10.0
    assert rl.when("e") == 0


def test_max_of_takes_the_longest_delay() -> None:
    now = [0.0]
    rl: MaxOfRateLimiter[str] = MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.001, 1.0), BucketRateLimiter(qps=1, burst=1, clock=lambda: now[0])
    )
    assert rl.when("a") == 0.001
    assert rl.when("a") == pytest.approx(1.0)
    assert rl.num_requeues("a") == 2


async def test_add_rate_limited_requeues_with_growing_delay() -> None:
    q = WorkQueue[str]("t", rate_limiter=ItemExponentialFailureRateLimiter(0.05, 1.0))
    q.add_rate_limited("a")
    q.add_rate_limited("a")  # the second failure asks for 0.1 s but the earlier 0.05 s wins
    assert q.num_requeues("a") == 2
    assert len(q) == 0
    with anyio.fail_after(2):
        assert await q.get() == "a"
    q.forget("a")
    assert q.num_requeues("a") == 0


async def test_shutdown_hands_out_what_is_queued_then_refuses() -> None:
    q = fast_queue()
    q.add("a")
    q.add_after("delayed", 0.01)
    q.shutdown()
    q.add("b")
    assert await q.get() == "a"
    with pytest.raises(QueueShutDown):
        await q.get()


async def test_shutdown_wakes_blocked_getters() -> None:
    q = fast_queue()
    failures: list[BaseException] = []

    async def getter() -> None:
        try:
            await q.get()
        except QueueShutDown as exc:
            failures.append(exc)

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(getter)
        await anyio.sleep(0.01)
        q.shutdown()
    assert len(failures) == 3


async def test_shutdown_with_drain_waits_for_in_flight_items() -> None:
    q = fast_queue()
    q.add("a")
    item = await q.get()
    drained: list[bool] = []

    async def drain() -> None:
        drained.append(await q.shutdown_with_drain(within=5))

    async with anyio.create_task_group() as tg:
        tg.start_soon(drain)
        await anyio.sleep(0.02)
        assert drained == [], "drain must wait for the item being processed"
        q.done(item)
    assert drained == [True]


async def test_an_add_wakes_one_waiting_worker_not_every_idle_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """client-go's cond.Signal: an add wakes one waiting getter (the idle workers of a
    controller do not all wake to find one item); a getter cancelled after its wake-up
    passes it on, and shutdown wakes them all. Counted by the getters' looks at the queue."""
    q = fast_queue()
    looks: list[int] = []
    real = WorkQueue._promote
    monkeypatch.setattr(WorkQueue, "_promote", lambda self: looks.append(1) or real(self))
    got: list[str] = []
    ended: list[str] = []

    async def worker() -> None:
        try:
            while True:
                got.append(await q.get())
        except QueueShutDown:
            ended.append("shut down")

    async with anyio.create_task_group() as tg:
        for _ in range(8):
            tg.start_soon(worker)
        await anyio.wait_all_tasks_blocked()
        looks.clear()
        q.add("a")
        await anyio.wait_all_tasks_blocked()
        assert got == ["a"]
        assert len(looks) == 2, "one getter woke for the add (and looked again once it had the item back)"
        # the woken getter cancelled before it ran: its wake-up goes to another
        scopes: list[anyio.CancelScope] = []

        async def cancelled_getter() -> None:
            with anyio.CancelScope() as scope:
                scopes.append(scope)
                got.append(await q.get())

        tg.start_soon(cancelled_getter)
        await anyio.wait_all_tasks_blocked()
        q._getters.rotate(1)  # the cancelled getter's wake-up first...
        q.add("b")
        scopes[0].cancel()  # ...and it is cancelled before it runs
        await anyio.wait_all_tasks_blocked()
        assert got == ["a", "b"], "the wake-up was passed on"
        q.shutdown()
    assert ended == ["shut down"] * 8


def turn_of(low: WorkQueue[str], high: WorkQueue[str]) -> tuple[anyio.Event, Callable[[], Awaitable[None]]]:
    """An Event set once `low`'s wait behind `high` ends, and the task that waits."""
    ended = anyio.Event()

    async def wait_turn() -> None:
        await low.behind(high)
        ended.set()

    return ended, wait_turn


async def test_a_queue_behind_another_waits_for_what_was_ready_there_not_for_what_came_later() -> None:
    high, low = fast_queue(), fast_queue()
    for key in ("a", "b"):
        high.add(key)
    turn, wait_turn = turn_of(low, high)
    async with anyio.create_task_group() as tg:
        tg.start_soon(wait_turn)
        await anyio.wait_all_tasks_blocked()
        high.add("c")  # came after the wait began: the low queue does not wait for it too
        assert await high.get() == "a"
        await anyio.wait_all_tasks_blocked()
        assert not turn.is_set(), "one of the two items ready when the wait began is still queued"
        assert await high.get() == "b"
        await anyio.wait_all_tasks_blocked()
        assert turn.is_set(), "both were handed out: the low queue's turn, though c waits"
    assert len(high) == 1


async def test_behind_an_empty_queue_there_is_no_wait() -> None:
    high, low = fast_queue(), fast_queue()
    high.add("delayed-only")
    item = await high.get()  # being processed, not ready: nothing to wait for
    with anyio.fail_after(1):
        await low.behind(high)
    high.done(item)


@pytest.mark.parametrize("who", ["the waiting queue", "the queue waited on"])
async def test_a_shutdown_on_either_side_ends_the_wait(who: str) -> None:
    high, low = fast_queue(), fast_queue()
    high.add("a")
    ended, wait_turn = turn_of(low, high)
    async with anyio.create_task_group() as tg:
        tg.start_soon(wait_turn)
        await anyio.wait_all_tasks_blocked()
        assert not ended.is_set()
        (low if who == "the waiting queue" else high).shutdown()
        with anyio.fail_after(1):
            await ended.wait()


async def test_a_cancelled_wait_leaves_no_turn_behind() -> None:
    high, low = fast_queue(), fast_queue()
    high.add("a")
    with anyio.move_on_after(0.01):
        await low.behind(high)
    assert high._turns == [], "a turn left for a waiter that is gone would be set for nobody"
    assert low._behind == set()


async def test_a_getter_behind_another_queue_waits_its_turn_once_an_item_is_ready() -> None:
    high, low = fast_queue(), fast_queue()
    got: list[str] = []

    async def getter() -> None:
        got.append(await low.get(behind=high))

    async with anyio.create_task_group() as tg:
        tg.start_soon(getter)
        await anyio.wait_all_tasks_blocked()  # idle, nothing ready anywhere
        high.add("spec")
        low.add("status")
        await anyio.wait_all_tasks_blocked()
        assert got == [], "an item became ready here while the other queue had a backlog"
        assert await high.get() == "spec"
        high.add("more-spec")  # after the turn was taken: not waited for
        await anyio.wait_all_tasks_blocked()
        assert got == ["status"]


async def test_a_getter_woken_then_cancelled_before_it_runs_passes_the_wake_up_on() -> None:
    """`Task.cancel` between the wake-up and the getter running: the next getter takes the
    item, nothing waits for the one that is gone."""
    q = fast_queue()
    first, second = asyncio.ensure_future(q.get()), asyncio.ensure_future(q.get())
    await anyio.wait_all_tasks_blocked()
    q.add("a")  # wakes the first
    first.cancel()
    with anyio.fail_after(5):
        assert await second == "a"
    assert first.cancelled() and not q._getters


async def test_a_getter_whose_delay_ran_out_or_that_was_cancelled_leaves_the_line() -> None:
    q = fast_queue()
    q.add_after("later", 0.02)
    with anyio.fail_after(5):
        assert await q.get() == "later"  # woken by its own delay running out
    assert not q._getters
    with anyio.move_on_after(0.02):
        await q.get()
    assert not q._getters
    waiting = asyncio.ensure_future(q.get())
    await anyio.wait_all_tasks_blocked()
    q.add("now")
    with anyio.fail_after(5):
        assert await waiting == "now"


async def taking(q: WorkQueue[str], got: list[str], n: int) -> None:
    """A worker that takes `n` items into `got`, each done at once."""
    while len(got) < n:
        item = await q.get()
        got.append(item)
        q.done(item)


def count_anyio_waits(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on, every anyio Event and `move_on_after` scope made, by name."""
    made: list[str] = []
    real_event, real_move_on_after = anyio.Event, anyio.move_on_after

    def event() -> anyio.Event:
        made.append("Event")
        return real_event()

    def move_on_after(delay: float | None, shield: bool = False) -> anyio.CancelScope:
        made.append("move_on_after")
        return real_move_on_after(delay, shield=shield)

    monkeypatch.setattr(anyio, "Event", event)
    monkeypatch.setattr(anyio, "move_on_after", move_on_after)
    return made


async def test_waiting_makes_no_anyio_event_or_cancel_scope(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's every wait is one asyncio future (and a loop timer while an item is
    delayed): an anyio Event and a `move_on_after` scope per wait cost ~1% of the
    management manager's CPU."""
    q = fast_queue()
    got: list[str] = []

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(taking, q, got, 6)
            await anyio.wait_all_tasks_blocked()
            made = count_anyio_waits(monkeypatch)
            for i in range(3):
                q.add(f"now-{i}")
                await anyio.wait_all_tasks_blocked()
                q.add_after(f"later-{i}", 0.01)
                await anyio.sleep(0.02)
    assert sorted(got) == sorted([f"now-{i}" for i in range(3)] + [f"later-{i}" for i in range(3)])
    assert made == []


async def test_a_turn_waited_for_too_long_comes_anyway() -> None:
    high, low = fast_queue(), fast_queue()
    high.add("stuck")  # the other queue's workers never take it (a server that does not answer)
    low.add("status")
    with anyio.fail_after(2):
        assert await low.get(behind=high, within=0.05) == "status"
    assert high._turns == [], "the lapsed turn is no longer waited for"


async def test_waiting_behind_another_queue_makes_no_anyio_event_or_cancel_scope(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker behind another queue waits once per item while that queue has a backlog:
    one asyncio future (and a loop timer for `within`), as for its own waits; an anyio
    Event and a `move_on_after` scope per wait each looked up the async library."""
    high, low = fast_queue(), fast_queue()
    made = count_anyio_waits(monkeypatch)
    got: list[str] = []

    async def getter() -> None:
        got.append(await low.get(behind=high, within=10))
        got.append(await low.get(behind=high))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            high.add("spec-1")
            high.add("spec-2")
            low.add("status-1")
            low.add("status-2")
            tg.start_soon(getter)
            await anyio.wait_all_tasks_blocked()
            assert got == []
            assert await high.get() == "spec-1"
            await anyio.wait_all_tasks_blocked()
            assert got == [], "spec-2 was ready too when the wait began"
            high.add("spec-3")  # after the first wait began: the second get waits for it
            assert await high.get() == "spec-2"
            await anyio.wait_all_tasks_blocked()
            assert got == ["status-1"], "the second get waits its turn behind spec-3"
            assert await high.get() == "spec-3"
            await anyio.wait_all_tasks_blocked()
    assert got == ["status-1", "status-2"]
    assert made == [] and high._turns == []


async def test_a_delayed_add_wakes_no_getter_whose_timer_already_covers_it() -> None:
    """A batching controller delays every event: a worker waiting with a timer that fires
    by the new item's time looks again then anyway, so the add wakes nobody (a wake-up per
    event found nothing due and waited again); an add due earlier than every timer, or
    with no timer running, wakes one as before; every item is handed out once due."""
    q = fast_queue()
    wake_ups = 0
    real_notify = q._notify

    def counting_notify() -> None:
        nonlocal wake_ups
        wake_ups += 1
        real_notify()

    q._notify = counting_notify  # type: ignore[method-assign]
    got: list[str] = []

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(taking, q, got, 5)
            await anyio.wait_all_tasks_blocked()
            q.add_after("first", 0.1)  # the worker waits with no timer: woken, it sets one
            assert wake_ups == 1
            await anyio.wait_all_tasks_blocked()
            for name in ("second", "third", "fourth"):
                q.add_after(name, 0.15)  # after the worker's timer: nobody woken
            assert wake_ups == 1 and got == []
            q.add_after("early", 0.02)  # before it: woken to plan again
            assert wake_ups == 2
    assert got == ["early", "first", "second", "third", "fourth"]
    assert not q._deadlines and not q._getters
