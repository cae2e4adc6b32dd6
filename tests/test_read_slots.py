"""ui/read_slots.py: reads bounded in all and per reader; a reader's waiting requests hold no shared place; the map
of readers empties as their requests end, however they end."""

from __future__ import annotations

import asyncio

import pytest

from testkit.own_loop import run_on_own_loop
from ui.read_slots import ReadSlots


def test_a_reader_holds_at_most_its_places_and_others_read_beside_it() -> None:
    async def scenario() -> tuple[int, int, list[str], int]:
        slots, release = ReadSlots(total=3, per_reader=2), asyncio.Event()
        now, most, order = {"a": 0, "b": 0}, {"a": 0, "b": 0}, []

        async def read(reader: str, tag: str) -> None:
            async with slots.held(reader):
                now[reader] += 1
                most[reader] = max(most[reader], now[reader])
                order.append(tag)
                if reader == "a":
                    await release.wait()
                now[reader] -= 1

        first = [asyncio.create_task(read("a", f"a{i}")) for i in range(6)]
        await asyncio.sleep(0.01)  # a's first two read, the other four wait on a's own bound
        await read("b", "b0")  # the one shared place a's waiting reads do not hold
        waiting = sum(not t.done() for t in first)
        release.set()
        await asyncio.gather(*first)
        return most["a"], waiting, order, slots.readers()

    most_a, waiting, order, readers = run_on_own_loop(scenario())
    assert most_a == 2
    assert waiting == 6 and order.index("b0") == 2  # b read after a's first two, before any of a's others
    assert readers == 0


def test_a_cancelled_wait_leaves_no_reader_behind() -> None:
    async def scenario() -> int:
        slots, release = ReadSlots(total=1, per_reader=1), asyncio.Event()

        async def read(reader: str) -> None:
            async with slots.held(reader):
                await release.wait()

        holder = asyncio.create_task(read("a"))
        waiter = asyncio.create_task(read("b"))  # waits for the one shared place
        await asyncio.sleep(0.01)
        waiter.cancel()  # a client that went away while it waited
        with pytest.raises(asyncio.CancelledError):
            await waiter
        release.set()
        await holder
        return slots.readers()

    assert run_on_own_loop(scenario()) == 0


@pytest.mark.parametrize(("total", "per_reader"), [(0, 1), (4, 0)])
def test_bounds_below_one_are_refused(total: int, per_reader: int) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ReadSlots(total, per_reader)
