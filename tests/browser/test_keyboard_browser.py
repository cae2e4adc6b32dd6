"""A tree node by keyboard alone, in Chromium at 1280×800: Tab reaches the node id box (empty, with a placeholder
that says what it takes, until a node is chosen: it had shown 0), a typed id and Enter inspect that node: the
inspector opens beside the tree on it and the tree rings it; opening another run empties the box again (it kept
the last run's node)."""

from __future__ import annotations

from typing import Any

import pytest

from .pages import PAIR, RING_ON_JS, open_run, wait_idle, wait_plot, wait_text

pytestmark = pytest.mark.browser

# the element that has the keyboard's focus is the node id box's input
ON_NODE_BOX = (
    "() => { const a = document.activeElement; return !!a && !!a.closest('#node-id') && a.tagName === 'INPUT'; }"
)


def test_tab_type_enter_inspects_a_node(laptop_page: Any, served: dict[str, Any]) -> None:
    from ui.views.treedata import RunData

    pg, rid = laptop_page, PAIR["h-uats"]
    state = RunData.load(served["store"], rid).state_at(None)
    nid = sorted(i for i in state.nodes if i)[len(state.nodes) // 2]
    box = pg.locator("#node-id input")
    assert box.input_value() == "" and box.get_attribute("placeholder"), box.get_attribute("placeholder")
    pg.goto(f"{served['url']}/?run={rid}")
    wait_plot(pg, "#tree", f"e.dataset.run === '{rid}'")
    wait_idle(pg)
    assert box.input_value() == ""  # a run open, no node chosen yet
    for _ in range(200):  # Tab through the page's controls to the box, as a keyboard user does
        if pg.evaluate(ON_NODE_BOX):
            break
        pg.keyboard.press("Tab")
    assert pg.evaluate(ON_NODE_BOX), pg.evaluate("() => document.activeElement.outerHTML.slice(0, 200)")
    pg.keyboard.type(str(nid))
    pg.keyboard.press("Enter")
    wait_text(pg, "#node-details", f"Node {nid}")
    pg.wait_for_function(RING_ON_JS, arg=["#tree", nid])
    # ui/js/inspector.js opens the inspector once the text names the node, not in step with the ring
    pg.locator("#inspector-panel").wait_for(state="visible")
    assert box.input_value() == str(nid)
    pg.locator("#inspector-panel .uats-close").click()  # back to the form (the inspector takes its place at 1280)
    open_run(pg, PAIR["rebase"])
    wait_idle(pg)
    assert box.input_value() == "", box.input_value()
