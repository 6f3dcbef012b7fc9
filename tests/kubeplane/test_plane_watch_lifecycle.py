"""A watch lives exactly as long as its client's connection: when the client goes away the
server ends the watch at once (no lingering watcher, task or socket until the next event)."""

from __future__ import annotations

import aiohttp

from kubeplane import EmbeddedAPIServer

from .plane_support import eventually


async def test_client_disconnect_ends_the_watch() -> None:
    # bookmarks a minute apart: no write to the stream can end the watch before the bound below
    async with EmbeddedAPIServer(bookmark_interval=60) as apiserver, aiohttp.ClientSession() as session:
        resp = await session.get(
            f"{apiserver.url}/api/v1/configmaps?watch=true&resourceVersion=1&allowWatchBookmarks=true"
        )
        assert resp.status == 200

        async def open_watch() -> bool:
            return len(apiserver.plane.watchers) == 1

        await eventually(open_watch, "the watch to be registered")
        resp.close()

        async def closed() -> bool:
            return not apiserver.plane.watchers

        # nothing is written to the watch meanwhile, so only the disconnect can end it
        await eventually(closed, "the server to end the watch of a client that disconnected", within=5)
