"""The page's poll (ui/tabs/poll.py): one event per tick of the live timer, page states written in place.

Each Gradio event costs the page a snapshot of every component's value; with one tick listener per tab and
the change listeners of the states the ticks wrote, one tick made seven events and a live tree was drawn
seconds late (`python -m benchmarks app`, docs/log.md)."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import gradio as gr
import pytest
import sqlalchemy as sa
from gradio import Request

from storage import RunStore, schema as S
from testkit.doubles import WorkerPoolDouble, record_synthetic
from ui.app_ui import build_demo
from ui.tabs.common import TICK_S, PollParts
from ui.tabs.page_state import ComparedPair, OpenRun
from ui.tabs.poll import wire_poll


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> gr.Blocks:
    return build_demo(RunStore("sqlite://"), WorkerPoolDouble(), tmp_path_factory.mktemp("exports"))


def _live_timer(demo: gr.Blocks) -> gr.Timer:
    (timer,) = [b for b in demo.blocks.values() if isinstance(b, gr.Timer) and b.value == TICK_S]
    return timer


def test_one_event_per_tick_and_no_state_change_chain(demo: gr.Blocks) -> None:
    timer = _live_timer(demo)
    ticked = [f for f in demo.fns.values() if (timer._id, "tick") in f.targets]
    assert len(ticked) == 1, [f.name for f in ticked]
    (poll,) = ticked
    # what the poll writes and something listens to: only the hidden keys that change once, when a run or a
    # shadow job ends; never a page state or the iteration slider, which change on every tick
    listened = {bid for f in demo.fns.values() for bid, ev in f.targets if ev == "change"}
    chained = [o for o in poll.outputs if o._id in listened]
    assert sorted(type(o).__name__ for o in chained) == ["Textbox", "Textbox"], chained
    assert all(o.visible is False for o in chained if isinstance(o, gr.Textbox))
    assert not any(isinstance(o, gr.State) for o in chained)


def _toy_poll(parts: PollParts) -> tuple[SimpleNamespace, gr.Blocks]:
    with gr.Blocks() as blocks:
        ctx = SimpleNamespace(
            run_state=gr.State({}), pair_state=gr.State({}), timer=gr.Timer(TICK_S), poll=parts, reads=lambda: None
        )
        a, b, c = gr.Textbox(), gr.Textbox(), gr.Textbox()
        ctx.a, ctx.b, ctx.c = a, b, c

        def first(s: dict, x: str) -> dict:
            s["seen"] = x  # a page state is written in place
            return {b: "first"}

        parts.add(first, [ctx.run_state, a], [a, b])
        parts.add(lambda s: {a: "from the second", b: "second"}, [ctx.run_state], [a, b])
        parts.add(lambda: gr.skip(), [], [c])
        parts.add(lambda: {c: "fourth"}, [], [c])
        wire_poll(ctx)  # type: ignore[arg-type]
    return ctx, blocks


def test_parts_run_in_order_first_writer_wins_and_states_stay_in_place() -> None:
    ctx, blocks = _toy_poll(PollParts())
    (fn,) = [f for f in blocks.fns.values() if (ctx.timer._id, "tick") in f.targets]
    assert [o._id for o in fn.outputs] == [ctx.a._id, ctx.b._id, ctx.c._id]  # the state is not an output
    held = {"run_id": "r1"}
    out = fn.fn(None, held, "typed")  # (request, *inputs in the order they were first named)
    assert out == {ctx.b: "first", ctx.a: "from the second", ctx.c: "fourth"}  # by component
    assert held == {"run_id": "r1", "seen": "typed"}  # the session's own object, updated


def test_a_part_that_outputs_a_page_state_is_refused() -> None:
    parts = PollParts()
    with gr.Blocks():
        ctx = SimpleNamespace(run_state=gr.State({}), pair_state=gr.State({}), timer=gr.Timer(TICK_S), poll=parts)
        parts.add(lambda s: {}, [ctx.run_state], [ctx.run_state])
        with pytest.raises(ValueError, match="writes page states in place"):
            wire_poll(ctx)  # type: ignore[arg-type]


class _CountingStore(RunStore):
    """A RunStore that counts its reads of each run's row (get_run and run_version, by run id)."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.row_reads: Counter[str] = Counter()

    def get_run(self, run_id: str) -> dict:
        self.row_reads[run_id] += 1
        return super().get_run(run_id)

    def run_version(self, run_id: str):
        self.row_reads[run_id] += 1
        return super().run_version(run_id)


def test_one_tick_reads_each_run_once(tmp_path) -> None:
    """A live run open in Search and a live pair in Compare: the tick's parts (live tree, shadow panel, run bar,
    Why panel, Compare pair, its pickers' labels, idle check) read each run's row once between them."""
    store = _CountingStore(str(tmp_path / "runs.db"))
    opened, a, b = "1a" * 16, "2b" * 16, "3c" * 16
    for rid, seed in ((opened, 1), (a, 2), (b, 3)):
        record_synthetic(store, rid, seed=seed, n_nodes=30)
    with store.engine.begin() as conn:  # still running: every part has something to look at
        conn.execute(sa.update(S.runs).values(status="running"))
    demo = build_demo(store, WorkerPoolDouble(), tmp_path / "exports")
    (poll,) = [f for f in demo.fns.values() if (_live_timer(demo)._id, "tick") in f.targets]
    state_of = {type(o.value).__name__: o for o in poll.inputs if isinstance(o, gr.State)}
    s, cs = OpenRun(run_id=opened), ComparedPair(a=a, b=b)
    values = [
        s
        if o is state_of["OpenRun"]
        else cs
        if o is state_of["ComparedPair"]
        else (o.value() if callable(o.value) else o.value)
        for o in poll.inputs
    ]
    for tick in range(2):  # the first tick draws what changed, the second finds nothing new
        store.row_reads.clear()
        poll.fn(Request(session_hash="page"), *values)
        assert store.row_reads == {opened: 1, a: 1, b: 1}, (tick, store.row_reads)
    assert s.version == store.run_version(opened) and cs.versions == (store.run_version(a), store.run_version(b))
