"""In Chromium: a node's own page (/node?run=…&node=…, ui/tabs/node_page.py, written by the server), as a colleague
who was sent the link opens it, at 1280 × 800 and 1920 × 1080: the node's Figure 1 and Why on the first screen beside
the tree, one ring on the node, its LaTeX typeset, another node a click away (its own page: the address names it),
the studio one link away, and an address that names no run gets one line saying so."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from .conftest import SCREENS
from .pages import NODE_PIXEL_JS, PAIR, RING_ON_JS, shot, wait_plot

pytestmark = pytest.mark.browser

RUN = PAIR["h-uats"]


@pytest.fixture()
def fresh(context_for: Callable[[dict[str, int]], Any], request: pytest.FixtureRequest) -> Iterator[Any]:
    """A new page at the screen the test names, nothing loaded yet (a link is the first thing it opens)."""
    ctx = context_for(SCREENS[request.param])
    ctx.set_storage_state({"cookies": [], "origins": []})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    try:
        yield pg
    finally:
        for opened in ctx.pages:
            opened.close()
    assert not errors, errors  # no JavaScript error on the page, ever


def _figure1_for(pg: Any, node: int) -> None:
    wait_plot(pg, "#figure1", f"e._uatsMeta && e._uatsMeta.selected === {node} && e.dataset.drawnAt")


def _top(pg: Any, selector: str) -> float:
    return float(pg.eval_on_selector(selector, "e => e.getBoundingClientRect().top"))


def _a_step_node(served: dict[str, Any]) -> int:
    """A node of the run's third step: a scored step with siblings."""
    nodes = served["store"].get_nodes(RUN)
    return int(next(n["id"] for n in nodes if n.get("depth") == 3))


@pytest.mark.parametrize("fresh", list(SCREENS), indirect=True)
def test_a_node_link_opens_the_node_beside_its_tree(fresh: Any, served: dict[str, Any], request: Any) -> None:
    pg, node = fresh, _a_step_node(served)
    pg.goto(f"{served['url']}/node?run={RUN}&node={node}")
    _figure1_for(pg, node)
    wait_plot(pg, "#tree", f"e.dataset.run === '{RUN}'")
    pg.wait_for_function(RING_ON_JS, arg=["#tree", node])
    height = pg.viewport_size["height"]
    # the answer to the link is on the first screen, with no scroll: Figure 1, the Why and the tree
    for selector in ("#figure1", "#why-panel", "#tree"):
        assert _top(pg, selector) < height - 150, (selector, _top(pg, selector))
    assert f"node {node}" in pg.locator("#why-panel").inner_text()
    # the step's LaTeX typeset by KaTeX, its source hidden (the MathML copy is for screen readers)
    pg.wait_for_function("() => document.querySelectorAll('#node-details .katex').length > 0")
    assert pg.eval_on_selector("#node-details .katex-mathml", "e => getComputedStyle(e).position") == "absolute"
    shot(pg, f"node-page-{request.node.callspec.id}", full_page=False)

    # another node, clicked in the tree: its own page, its Figure 1, one ring on it, and the address names it
    target = pg.evaluate(NODE_PIXEL_JS, ["#tree", None])
    if target["id"] in (0, node):
        target = pg.evaluate(NODE_PIXEL_JS, ["#tree", node + 1])
    with pg.expect_navigation():
        pg.mouse.click(target["x"], target["y"])
    assert parse_qs(urlsplit(pg.url).query)["node"] == [str(target["id"])]
    _figure1_for(pg, target["id"])
    wait_plot(pg, "#tree", f"e.dataset.run === '{RUN}'")
    pg.wait_for_function(RING_ON_JS, arg=["#tree", target["id"]])
    rings = pg.eval_on_selector(
        "#tree .uats-plot", "gd => (gd.layout.shapes || []).filter(s => s.name === 'selected').length"
    )
    assert rings == 1
    # the studio, one link away: the same run, the same node
    with pg.expect_navigation():
        pg.get_by_text("Open in the studio").click()
    pg.wait_for_selector("#run-btn")
    assert "/node" not in pg.url
    wait_plot(pg, "#tree", f"e.dataset.run === '{RUN}'")
    _figure1_for(pg, target["id"])


@pytest.mark.parametrize("fresh", ["1280x800"], indirect=True)
def test_an_address_without_a_run_gets_one_line(fresh: Any, served: dict[str, Any]) -> None:
    pg = fresh
    pg.goto(f"{served['url']}/node?run=doesnotexist&node=3")
    pg.wait_for_function("() => (document.querySelector('#node-head') || {}).innerText?.includes('doesnotexist')")
    assert pg.locator("#figure1 .uats-plot").get_attribute("data-drawn-at") is None  # nothing drawn
    pg.goto(f"{served['url']}/node")
    pg.wait_for_function(
        "() => (document.querySelector('#node-head') || {}).innerText?.includes('no run in the address')",
    )


@pytest.mark.opens_an_address
def test_the_studio_s_inspector_gives_the_node_s_link(laptop_page: Any, served: dict[str, Any]) -> None:
    """The inspector's head carries the link to the inspected node's page, on the first screen."""
    pg, node = laptop_page, _a_step_node(served)
    pg.goto(f"{served['url']}/?run={RUN}&node={node}")
    _figure1_for(pg, node)
    share = pg.locator("#inspector-head .uats-share")
    share.wait_for(state="visible")
    assert f"node={node}" in (share.get_attribute("href") or "")
    assert share.bounding_box()["y"] < pg.viewport_size["height"]
    with pg.context.expect_page() as opened:
        share.click()
    linked = opened.value
    _figure1_for(linked, node)
    assert "/node?" in linked.url


TREE_FITS_JS = """() => { const t = document.querySelector('#tree .uats-plot');
  return !!t && !!t._fullLayout && Math.abs(t._fullLayout.width - t.clientWidth) <= 1; }"""


@pytest.mark.parametrize("fresh", ["1280x800"], indirect=True)
def test_a_widened_window_widens_the_tree(fresh: Any, served: dict[str, Any]) -> None:
    """Opened at 1280×800 and widened to 1920×1080, the page's tree kept the width it had (448 px in an 862 px
    column): a relayout of its height, the legend's fit at that width, left its layout with a width, which Plotly's
    own resize leaves alone (ui/js/plot.js now fits each plot to its box once the window has stopped changing)."""
    pg, node = fresh, _a_step_node(served)
    pg.goto(f"{served['url']}/node?run={RUN}&node={node}")
    _figure1_for(pg, node)
    wait_plot(pg, "#tree", f"e.dataset.run === '{RUN}'")
    pg.wait_for_function(TREE_FITS_JS)
    narrow = pg.evaluate("() => document.querySelector('#tree .uats-plot').clientWidth")
    pg.set_viewport_size(SCREENS["1920x1080"])
    pg.wait_for_function(f"() => document.querySelector('#tree .uats-plot').clientWidth > {narrow} + 100")
    pg.wait_for_function(TREE_FITS_JS)
    pg.wait_for_function(RING_ON_JS, arg=["#tree", node])  # its ring still on the node
    shot(pg, "node-page-widened-1920x1080", full_page=False)
