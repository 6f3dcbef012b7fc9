"""`gcpause.paused`: the collector is off inside and as it was after, whatever happens
inside; an informer's LIST leaves it as it found it, even when a page is not JSON."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import anyio
import pytest

from mcruntime import gcpause
from mcruntime.backoff import Backoff
from mcruntime.informer import Informer
from mcruntime.resources import CONFIGMAPS
from tests.support import eventually


@pytest.fixture
def collector_restored() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("collector_restored")
@pytest.mark.parametrize("enabled", [True, False])
def test_paused_turns_the_collector_off_inside_and_back_to_what_it_was(enabled: bool) -> None:
    gc.enable() if enabled else gc.disable()
    with gcpause.paused():
        assert not gc.isenabled()
    assert gc.isenabled() is enabled


@pytest.mark.usefixtures("collector_restored")
def test_paused_restores_the_collector_when_the_section_raises() -> None:
    gc.enable()
    with pytest.raises(ValueError), gcpause.paused():
        raise ValueError("a page that is not JSON")
    assert gc.isenabled()


class GarbledServer:
    """A transport whose LIST answers are not JSON (and whose watches are never reached)."""

    contact = None

    async def request(self, method: str, path: str, **_kwargs: object) -> bytes:
        return b'{"items": [ not json'


@pytest.mark.usefixtures("collector_restored")
async def test_a_list_page_that_is_not_json_fails_the_list_and_leaves_the_collector_on() -> None:
    gc.enable()
    informer = Informer(GarbledServer(), CONFIGMAPS, cluster="t", backoff=Backoff(0.01, 0.01))  # type: ignore[arg-type]
    async with anyio.create_task_group() as tg:
        await tg.start(informer.run)
        await eventually(lambda: informer.stats.errors >= 2, "the LIST failing, and retried")
        tg.cancel_scope.cancel()
    assert gc.isenabled()
    assert not informer.has_synced and len(informer.store) == 0
