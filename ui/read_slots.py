"""Reads made off Gradio's queue (the node page, ui/tabs/node_page.py; a click's inspector and Why, AppContext
.read_off_queue), bounded in all and per reader: at most `total` at once, and at most `per_reader` of one reader's,
so twenty links one user opens at once take `per_reader` of the places and another user's page is read beside
them, not after them. A reader's waiting requests wait on their own bound, holding none of the shared places."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class ReadSlots:
    """`total` reads at once, `per_reader` of them one reader's; a reader's entry lives while it reads or waits. It may
    be made outside the server's event loop: an asyncio.Semaphore takes the loop it is first awaited in (3.10+)."""

    def __init__(self, total: int, per_reader: int) -> None:
        if total < 1 or per_reader < 1:
            raise ValueError(f"ReadSlots: total ({total}) and per_reader ({per_reader}) must be at least 1")
        self.total, self.per_reader = total, per_reader
        self._shared = asyncio.Semaphore(total)
        self._readers: dict[str, tuple[asyncio.Semaphore, int]] = {}  # reader -> (its bound, requests holding it)

    @asynccontextmanager
    async def held(self, reader: str) -> AsyncIterator[None]:
        """A place for one read of `reader`'s: its own bound first, then a shared place."""
        entry = self._readers.get(reader)
        own, users = entry if entry else (asyncio.Semaphore(self.per_reader), 0)
        self._readers[reader] = (own, users + 1)
        try:
            async with own, self._shared:
                yield
        finally:
            own, users = self._readers[reader]
            if users == 1:
                del self._readers[reader]
            else:
                self._readers[reader] = (own, users - 1)

    def readers(self) -> int:
        """How many readers read or wait now (the map is bounded by the requests in flight)."""
        return len(self._readers)
