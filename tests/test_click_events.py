"""What a node click sets off: the inspector's event and the Why panel's, and no change of a page state.

Gradio fires a state's change listeners when the state's hash differs after an event (gradio.utils.deep_hash). A
click changes the selection alone, which none of those listeners read (run bar, Why panel's run follower, idle
timer); each such listener was one more round trip per click and more rounds of the page's status bookkeeping
(ui/tabs/page_state.py)."""

from __future__ import annotations

import gradio as gr
import pytest
from gradio.utils import deep_hash

from storage import RunStore
from testkit.doubles import WorkerPoolDouble
from ui.app_ui import build_demo
from ui.tabs.page_state import ComparedPair, OpenRun, replaced


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> gr.Blocks:
    return build_demo(RunStore("sqlite://"), WorkerPoolDouble(), tmp_path_factory.mktemp("exports"))


def test_a_new_selection_alone_is_no_state_change() -> None:
    s = OpenRun(run_id="r" * 32)
    assert deep_hash(replaced(s, selected=7)) == deep_hash(s)
    # what the listeners read still changes the hash
    for changed in (replaced(s, t=3), replaced(s, run_id="q" * 32), replaced(s, collapsed=(4,))):
        assert deep_hash(changed) != deep_hash(s), changed
    cs = ComparedPair(a="a" * 32, b="b" * 32)
    assert deep_hash(replaced(cs, selected=(3, None))) == deep_hash(cs)
    assert deep_hash(replaced(cs, t=2)) != deep_hash(cs)


def test_a_tree_click_chains_only_the_why_panel(demo: gr.Blocks) -> None:
    (on_click,) = [f for f in demo.fns.values() if f.name == "on_tree_select"]  # the Search tab's tree
    listened = {bid: f for f in demo.fns.values() for bid, ev in f.targets if ev == "change"}
    # the outputs whose change sets off another event: the page state (a click changes no field in its hash) and
    # the node id box, which the Why panel follows
    chained = [o for o in on_click.outputs if o._id in listened]
    assert sorted(type(o).__name__ for o in chained) == ["State", "Textbox"], chained
    (box,) = [o for o in chained if isinstance(o, gr.Textbox)]
    assert box.elem_id == "node-id"
