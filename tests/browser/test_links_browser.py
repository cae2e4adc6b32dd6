"""In Chromium: links hold only what the user chose (no node until one is clicked, no iteration until one is
stepped to), a run or node that does not exist gets a message, and messages stay until the user acts."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from testkit.browser import wait_quiet

from .pages import (
    NODE_PIXEL_JS,
    PAIR,
    RING_ON_JS,
    STEP_S,
    notice_text,
    open_run,
    shot,
    wait_notice,
    wait_plot,
    wait_text,
)

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


FIGURE1_DRAWS_JS = "() => Number((document.querySelector('#figure1 .uats-plot') || {dataset: {}}).dataset.draws || 0)"


def link_load_fn(url: str) -> int:
    """The id of the page's load event that answers a link's node (ui/tabs/links.py open_from_url): the load whose
    outputs hold Figure 1 (the load's second answer, `.then`, and the page's other load do not)."""
    config = httpx.get(f"{url}/config", timeout=60).json()
    figure1 = next(c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == "figure1")
    loads = [d for d in config["dependencies"] if any(t[1] == "load" for t in d["targets"])]
    [first] = [d["id"] for d in loads if figure1 in d["outputs"]]
    return int(first)


class HeldQueue:
    """A page whose queued events' requests (`queue/join`: the page's load among them) are held until let go, but
    for those of the events `through`; events off the queue (a node's Why) are never held."""

    def __init__(self, pg: Any, refuse_early_figure1: bool = False, through: frozenset[int] = frozenset()) -> None:
        self.pg, self.held, self.open, self.through = pg, [], False, through
        pg.route("**/gradio_api/queue/join*", self._join)
        if refuse_early_figure1:  # the Figure 1 a studio address asks for as the page starts (link_prefetch.js)
            pg.route("**/node/figure1*", lambda route: route.abort())

    @staticmethod
    def _fn(route: Any) -> Any:
        """The event a held or arriving `queue/join` request is for (its fn_index)."""
        return json.loads(route.request.post_data or "{}").get("fn_index")

    def _join(self, route: Any) -> None:
        if self.open or self._fn(route) in self.through:
            route.continue_()
        else:
            self.held.append(route)

    def wait_held(self) -> None:
        """Until a request is held: Gradio sends the page's load once every component has mounted."""
        deadline = time.time() + STEP_S
        while not self.held and time.time() < deadline:
            self.pg.wait_for_timeout(100)
        assert self.held, "the page's load was never sent"

    def let_all_go(self) -> None:
        self.open = True
        for route in self.held:
            route.continue_()

    def let_go(self, fns: frozenset[int]) -> None:
        """The held requests of the events `fns` sent on, and those events' requests from now on never held."""
        self.through = self.through | fns
        for route in [r for r in self.held if self._fn(r) in fns]:
            self.held.remove(route)
            route.continue_()


@pytest.mark.opens_an_address
def test_a_studio_address_draws_its_figure1_before_the_page_s_load_is_answered(
    page: Any, served: dict[str, Any]
) -> None:
    """The studio's address asks for its node's Figure 1 as the page starts (ui/js/link_prefetch.js), and the
    inspector draws it as soon as it is mounted: here every queued event's request (the page's load among them) is
    held, and Figure 1 is drawn all the same. Let go, the load answers with the same figure, which is not drawn
    again. The counterfactual, in a second tab: with that early answer refused, nothing is drawn while the load is
    held, and the load draws it once let go."""
    run, node = PAIR["h-uats"], 12
    address = f"{served['url']}/?run={run}&node={node}"
    queue = HeldQueue(page)
    page.goto(address)
    wait_plot(page, "#figure1", f"e.dataset.drawnAt && e._uatsMeta.selected === {node}")
    assert page.evaluate(FIGURE1_DRAWS_JS) == 1
    assert page.evaluate("() => document.querySelector('#tree .uats-plot').dataset.drawnAt") is None  # still held
    queue.wait_held()
    queue.let_all_go()
    wait_plot(page, "#tree", f"e.dataset.run === '{run}'")  # the load's second answer: its first was applied
    assert page.evaluate(FIGURE1_DRAWS_JS) == 1  # the load's Figure 1 was the one drawn already
    assert details_text(page).startswith(f"Node {node}")

    other = page.context.new_page()
    try:
        queue = HeldQueue(other, refuse_early_figure1=True)
        other.goto(address)
        queue.wait_held()
        wait_quiet(other, STEP_S)
        assert other.evaluate(FIGURE1_DRAWS_JS) == 0  # nothing drew it: the early answer refused, the load held
        queue.let_all_go()
        wait_plot(other, "#figure1", f"e.dataset.drawnAt && e._uatsMeta.selected === {node}")
        assert other.evaluate(FIGURE1_DRAWS_JS) == 1
    finally:
        other.close()


WHY_JS = "() => (document.querySelector('#why-panel') || {innerText: ''}).innerText"  # '' until mounted


@pytest.mark.opens_an_address
def test_a_link_s_why_is_its_node_s_decision_before_the_rest_of_the_load(page: Any, served: dict[str, Any]) -> None:
    """A link's node arrives (the load's first answer) before the iteration slider is set (its second): the Why,
    written off the queue as soon as the node is, read the slider's 0 and said the node's decision had not come yet
    ("node 12: no decision about it yet (it is decided at iteration 2, after the one shown)"), and kept saying it
    when the page's later answers came in the other order. Here the load's first answer
    alone is let through, every other queued event held, while the Why is written; it already says what it says
    once they have all come."""
    run, node = PAIR["h-uats"], 12
    queue = HeldQueue(page, through=frozenset({link_load_fn(served["url"])}))
    page.goto(f"{served['url']}/?run={run}&node={node}")
    page.wait_for_function(f"() => ({WHY_JS})().includes('node {node}')")
    early = page.evaluate(WHY_JS)
    assert page.evaluate("() => document.querySelector('#tree .uats-plot').dataset.drawnAt") is None  # still held
    assert "no decision about it yet" not in early, early
    queue.let_all_go()
    wait_plot(page, "#tree", f"e.dataset.run === '{run}'")
    wait_quiet(page, STEP_S)
    assert page.evaluate(WHY_JS) == early


# a row of Figure 1 next to the inspected one (in view: the inspected row is centred in its box), at its R̄ tick:
# {x, y, id} in the window, where a mouse click reaches the plot
FIGURE1_ROW_PIXEL_JS = """() => {
  const gd = document.querySelector('#figure1 .uats-plot'), m = gd._uatsMeta;
  const i = m.focus_row > 0 ? m.focus_row - 1 : m.focus_row + 1;
  const tr = gd.data.find(t => t.name === 'R̄'), k = tr.y.indexOf(i);
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
  const x = box.left + xa._offset + xa.l2p(tr.x[k]), y = box.top + ya._offset + ya.l2p(i);
  const hit = document.elementFromPoint(x, y);
  return hit && gd.contains(hit) ? {x: x, y: y, id: tr.customdata[k][0]} : null;
}"""


@pytest.mark.opens_an_address
def test_a_row_clicked_before_the_page_s_load_answers_is_inspected_once_it_has(
    page: Any, served: dict[str, Any]
) -> None:
    """A studio address draws its node's Figure 1 before the page's load is answered (ui/js/link_prefetch.js), when
    the server holds no open run for the page yet: a row clicked then said "open a run first" and the click was
    lost. Here the load and its second answer (the tree, status and charts) are held while another row is clicked
    with the mouse; the load let go, that row's node is inspected; the second answer let go after it, the page is
    completed all the same (it was skipped when the node selected was not the link's), its tree ringed on that row."""
    run, node = PAIR["h-uats"], 12
    config = httpx.get(f"{served['url']}/config", timeout=60).json()
    load = link_load_fn(served["url"])
    [rest] = [d["id"] for d in config["dependencies"] if d.get("trigger_after") == load]
    queue = HeldQueue(page, through=frozenset(d["id"] for d in config["dependencies"]) - {load, rest})
    page.goto(f"{served['url']}/?run={run}&node={node}")
    wait_plot(page, "#figure1", f"e.dataset.drawnAt && e._uatsMeta.selected === {node}")
    queue.wait_held()
    row = page.evaluate(FIGURE1_ROW_PIXEL_JS)
    assert row is not None and row["id"] != node, row
    page.mouse.click(row["x"], row["y"])
    wait_quiet(page, STEP_S)  # any request the click sent has been answered
    assert "open a run first" not in notice_text(page)
    queue.let_go(frozenset({load}))
    wait_plot(page, "#figure1", f"e._uatsMeta.selected === {row['id']}")
    page.wait_for_function(f"() => document.querySelector('#node-id input').value === '{row['id']}'")
    wait_quiet(page, STEP_S)
    assert details_text(page).startswith(f"Node {row['id']}"), details_text(page)
    queue.let_all_go()
    wait_text(page, "#run-status", run[:8])
    page.wait_for_function(RING_ON_JS, arg=["#tree", row["id"]], timeout=STEP_S * 1000)
    assert "open a run first" not in notice_text(page)
