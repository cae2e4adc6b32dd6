"""The page's poll (ui/tabs/poll.py): one event per tick of the live timer, page states written in place.

Each Gradio event costs the page a snapshot of every component's value; with one tick listener per tab and
the change listeners of the states the ticks wrote, one tick made seven events and a live tree was drawn
seconds late (`python -m benchmarks app`, docs/log.md)."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import pytest

from storage import RunStore
from tests.doubles import WorkerPoolDouble
from ui.app_ui import build_demo
from ui.tabs.common import TICK_S, PollParts
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
        ctx = SimpleNamespace(st=gr.State({}), cst=gr.State({}), timer=gr.Timer(TICK_S), poll=parts)
        a, b, c = gr.Textbox(), gr.Textbox(), gr.Textbox()
        ctx.a, ctx.b, ctx.c = a, b, c
        parts.add(lambda s, x: ({**s, "seen": x}, gr.skip(), "first"), [ctx.st, a], [ctx.st, a, b])
        parts.add(lambda s: ("from the second", "second"), [ctx.st], [a, b])
        parts.add(lambda: "third", [], [c])  # one output: its value, not a tuple (as in Gradio)
        wire_poll(ctx)  # type: ignore[arg-type]
    return ctx, blocks


def test_parts_run_in_order_first_writer_wins_and_states_stay_in_place() -> None:
    ctx, blocks = _toy_poll(PollParts())
    (fn,) = [f for f in blocks.fns.values() if (ctx.timer._id, "tick") in f.targets]
    assert [o._id for o in fn.outputs] == [ctx.a._id, ctx.b._id, ctx.c._id]  # the state is not an output
    held = {"run_id": "r1"}
    out = fn.fn(None, held, "typed")  # (request, *inputs in the order they were first named)
    assert out == ("from the second", "first", "third")
    assert held == {"run_id": "r1", "seen": "typed"}  # the session's own object, updated


def test_a_part_that_writes_a_state_it_does_not_read_is_refused() -> None:
    parts = PollParts()
    with gr.Blocks():
        ctx = SimpleNamespace(st=gr.State({}), cst=gr.State({}), timer=gr.Timer(TICK_S), poll=parts)
        parts.add(lambda: ({},), [], [ctx.st])
        with pytest.raises(ValueError, match="does not take as input"):
            wire_poll(ctx)  # type: ignore[arg-type]
