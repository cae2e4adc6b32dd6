"""In Chromium: links hold only what the user chose (no node until one is clicked, no iteration until one is
stepped to), a run or node that does not exist gets a message, and messages stay until the user acts."""

from __future__ import annotations

import time
from typing import Any

import pytest

from .pages import NODE_PIXEL_JS, PAIR, notice_text, open_run, shot, wait_notice, wait_plot

pytestmark = pytest.mark.browser


def details_text(pg: Any) -> str:
    """The inspector's details as written (not Gradio's progress timer shown over them while a request runs)."""
    return pg.locator('#node-details [data-testid="markdown"]').inner_text().strip()


def goto(pg: Any, url: str) -> None:
    """Open `url` in the page and wait for the app to be up (minutes on a loaded machine)."""
    pg.goto(url)
    pg.wait_for_selector("#run-btn")


def wait_address(pg: Any, cond: str, timeout_s: float = 60) -> str:
    pg.wait_for_function(
        f"() => {{ const q = new URLSearchParams(location.search); return {cond}; }}", timeout=timeout_s * 1000
    )
    return pg.evaluate("() => location.search")


def test_opening_a_run_leaves_the_node_out_of_the_address(page: Any, served: dict[str, Any]) -> None:
    open_run(page, PAIR["rebase"])
    wait_address(page, f"q.get('run') === '{PAIR['rebase']}'")
    time.sleep(1.0)  # the address sync runs every 0.3 s: give it a few turns to (wrongly) add a node
    search = page.evaluate("() => location.search")
    assert "node=" not in search and "t=" not in search, search  # neither was chosen: the final tree, no node
    target = page.evaluate(NODE_PIXEL_JS, ["#tree", None])
    page.mouse.click(target["x"], target["y"])
    wait_address(page, f"q.get('node') === '{target['id']}'")
    # a link opened fresh holds the run alone: nothing selected
    goto(page, f"{served['url']}/?run={PAIR['rebase']}")
    wait_plot(page, "#tree", f"e.dataset.run === '{PAIR['rebase']}'")
    time.sleep(1.0)
    search = page.evaluate("() => location.search")
    assert "node=" not in search and "t=" not in search, search
    assert details_text(page) == ""


@pytest.mark.opens_an_address
def test_a_run_that_does_not_exist_keeps_its_message(page: Any, served: dict[str, Any]) -> None:
    goto(page, f"{served['url']}/?run=doesnotexist")
    wait_notice(page, "doesnotexist")
    # the page's own start-up (problem list, runs, pickers) must not wipe it
    deadline = time.time() + 4
    while time.time() < deadline:
        assert "doesnotexist" in notice_text(page), notice_text(page)
        time.sleep(0.2)
    shot(page, "link-run-missing")


@pytest.mark.opens_an_address
def test_a_node_that_does_not_exist_gets_a_message(page: Any, served: dict[str, Any]) -> None:
    goto(page, f"{served['url']}/?run={PAIR['h-uats']}&node=9999")
    wait_plot(page, "#tree", f"e.dataset.run === '{PAIR['h-uats']}'")
    text = wait_notice(page, "9999")
    assert "node" in text and "no node 9999" in text, text
    deadline = time.time() + 3
    while time.time() < deadline:
        assert "9999" in notice_text(page)
        time.sleep(0.2)
    # nothing is selected, so the address names the run alone
    wait_address(page, f"q.get('run') === '{PAIR['h-uats']}' && !q.has('node')")
    assert details_text(page) == ""
    shot(page, "link-node-missing")


@pytest.mark.opens_an_address
def test_a_link_to_a_node_draws_its_figure1_then_its_tree_each_once(page: Any, served: dict[str, Any]) -> None:
    """ui/tabs/links.py answers a node's link in two: the node (its Figure 1 and text) first, then the run's tree and
    charts. The live poll between the two must not send the tree again nor empty Figure 1 (it did, before the
    first answer recorded the version it showed)."""
    run, node = PAIR["h-uats"], 12
    goto(page, f"{served['url']}/?run={run}&node=0{node}")  # a number as typed: the tree follows all the same
    wait_plot(page, "#tree", f"e.dataset.run === '{run}'")
    time.sleep(2.0)  # four of the poll's ticks
    draws = page.evaluate("() => (window.__uatsDraws || []).filter(d => d.run).map(d => d.el)")
    assert draws.index("figure1") < draws.index("tree") and draws.count("tree") == 1, draws
    shown = page.evaluate(
        "() => { const e = document.querySelector('#figure1 .uats-plot');"
        " return [e._uatsMeta.selected, e.style.display, Number(e.dataset.draws)]; }"
    )
    assert shown == [node, "block", 1], shown
    assert details_text(page).startswith(f"Node {node}")
