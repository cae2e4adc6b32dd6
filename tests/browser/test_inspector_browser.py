"""In Chromium: an address with ?run=&node=&t= opens that view; ← and → step iterations and the inspector
shows the node as it was at each; Cases filters before ranking and names empty quadrants; a typed
problem runs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from .pages import choose, fill, plot_data, shot, wait_idle, wait_notice, wait_plot, wait_text

pytestmark = pytest.mark.browser


TIMED = "c0" * 16


def _timed_run(store: Any) -> None:
    """A hand-made run whose node 1 changes after it is written: scored with 7 passes at t=1, expanded
    (2 children) at t=2, re-evaluated with 2 more passes at t=3; node 2 finishes at t=4."""
    from testkit.doubles import record
    from uats_core.events import IterationEnded, NodesUpdated, RunEnded, RunStarted
    from uats_core.records import StepInfo
    from uats_core.tree import FINISHED, KEPT, Node

    if any(r["run_id"] == TIMED for r in store.list_runs(limit=500)):
        return

    def node(nid: int, parent: int, scores: list[float], **kw: Any) -> dict[str, Any]:
        n = Node(
            id=nid,
            parent_id=parent,
            depth=1 if parent == 0 else 2,
            step=f"step of node {nid}",
            mc_scores=scores,
            initial_passes=7,
            scored_iter=kw.get("created_iter", 1),
            status=KEPT,
            **kw,
        )
        k = len(scores)
        n.mean = sum(scores) / k
        n.var = sum((x - n.mean) ** 2 for x in scores) / (k - 1)
        return n.record()

    seven = [0.5, 0.6, 0.7, 0.5, 0.6, 0.7, 0.55]
    nine = seven + [0.9, 0.1]
    record(
        store,
        [
            RunStarted(
                run_id=TIMED,
                method="h-uats",
                problem_id="timed-1",
                question="What is 1 + 1?",
                gold_answer="2",
                seed=0,
                config={"tau": 0.003},
                policy="p",
                prm="q",
            ),
            NodesUpdated(1, [node(1, 0, seven, created_iter=1)]),
            IterationEnded(1, [], StepInfo(width=1), 1.0, 1.0),
            NodesUpdated(
                2,
                [
                    node(1, 0, seven, created_iter=1, children_granted=2, expanded_iter=2),
                    node(2, 1, seven, created_iter=2),
                    node(3, 1, seven, created_iter=2),
                ],
            ),
            IterationEnded(2, [], StepInfo(width=1), 1.0, 2.0),
            NodesUpdated(
                3,
                [node(1, 0, nine, created_iter=1, children_granted=2, expanded_iter=2, extra_passes=2, reeval_iter=3)],
            ),
            IterationEnded(3, [], StepInfo(width=1), 1.0, 3.0),
            NodesUpdated(
                4, [{**node(2, 1, seven, created_iter=2), "status": FINISHED, "answer": "2", "correct": True}]
            ),
            IterationEnded(4, [], StepInfo(width=1), 1.0, 4.0),
            RunEnded(status="finished", answer="2", correct=True, cost=4.0, iterations=4),
        ],
    )


def test_address_opens_a_node_at_an_iteration_and_arrows_step_back_in_time(page: Any, served: dict[str, Any]) -> None:
    _timed_run(served["store"])
    run_id = TIMED
    page.goto(f"{served['url']}/?run={run_id}&node=1&t=3")
    wait_plot(page, "#tree", f"e.dataset.run === '{run_id}' && Number(e.dataset.iteration) === 3")
    details = wait_text(page, "#node-details", "Node 1 ")
    assert "K 9 " in details and "re-evaluated t=3" in details and "children granted 2" in details, details
    assert page.locator("#node-id input").input_value() == "1"
    shot(page, "url-opened-node")
    # ← steps back one iteration, and the inspector shows the node as it was then
    page.locator("#brand").click()
    page.keyboard.press("ArrowLeft")
    wait_plot(page, "#tree", "Number(e.dataset.iteration) === 2")
    details = wait_text(page, "#node-details", "K 7 ")
    assert "re-evaluated" not in details and "children granted 2" in details, details
    page.wait_for_function("() => location.search.includes('t=2') && location.search.includes('node=1')")
    page.keyboard.press("ArrowLeft")
    wait_plot(page, "#tree", "Number(e.dataset.iteration) === 1")
    details = wait_text(page, "#node-details", "children granted 0")
    assert "expanded" not in details and "K 7 " in details, details
    page.keyboard.press("ArrowRight")
    wait_plot(page, "#tree", "Number(e.dataset.iteration) === 2")
    wait_text(page, "#node-details", "children granted 2")
    # typing in a box never steps the tree
    box = page.locator("#node-id input")
    box.click()
    box.press("ArrowLeft")
    time.sleep(1.0)
    assert plot_data(page, "#tree", "iteration") == "2"
    # the address now names this view: a fresh page opened on it shows the same
    url = page.url
    assert f"run={run_id}" in url and "node=1" in url and "t=2" in url, url
    page.goto(url)
    wait_plot(page, "#tree", f"e.dataset.run === '{run_id}' && Number(e.dataset.iteration) === 2")
    wait_text(page, "#node-details", "K 7 ")


@pytest.mark.opens_an_address
def test_inspector_follows_the_slider_back_to_before_the_node(page: Any, served: dict[str, Any]) -> None:
    _timed_run(served["store"])
    page.goto(f"{served['url']}/?run={TIMED}&node=2")  # no t: the final tree
    wait_plot(page, "#tree", f"e.dataset.run === '{TIMED}' && Number(e.dataset.iteration) === 4")
    wait_text(page, "#node-details", "final answer")
    slider = page.locator("#t-slider input[type=range]")
    slider.focus()
    for expected in (3, 2, 1):  # the slider's own arrow keys move it, as a drag does
        page.keyboard.press("ArrowLeft")
        wait_plot(page, "#tree", f"Number(e.dataset.iteration) === {expected}")
    wait_text(page, "#node-details", "Node 2 is not in the tree at iteration 1")
    shot(page, "inspector-before-node")


def test_cases_filter_before_ranking_and_name_empty_quadrants(page: Any, served: dict[str, Any]) -> None:
    from ui.views.cases import QUADRANTS, mine

    store = served["store"]
    full = mine(store, per_quadrant=1000)
    quadrant = max(QUADRANTS, key=lambda q: len(full.pools[q]))
    assert len(full.pools[quadrant]) > 8, "need a case ranked below the default top 8"
    low = full.pools[quadrant][-1]
    for star in store.list_stars(starred_only=True):  # only this node starred: the other quadrants are empty
        store.star_case(star["run_id"], star["node_id"], starred=False)
    store.star_case(low.run_id, low.node_id, starred=True)
    page.get_by_role("tab", name="Cases").click()
    page.locator("#c-starred input").check()
    page.click("#c-mine")
    summary = wait_text(page, "#cases-summary", "no starred case")
    for q in QUADRANTS:
        if q != quadrant:
            assert f"{q}: no starred case" in summary, summary
    table = page.locator("#cases-table").inner_text()
    assert low.run_id[:8] in table and str(low.node_id) in table
    assert notice_is_quiet(page)
    shot(page, "cases-starred-low-ranked")
    store.star_case(low.run_id, low.node_id, starred=False)


def test_a_case_opens_in_the_search_tab_with_its_node_inspected(page: Any) -> None:
    """Cases → a row → "Open in Search": the Search tab is shown (ui/js/show_search.js) with the case's run open
    and its node in the inspector."""
    page.get_by_role("tab", name="Cases").click()
    page.click("#c-mine")
    first = page.locator('#cases-table [data-testid="cell-0-1"]')
    first.wait_for()
    run_prefix, node = first.inner_text().strip(), page.locator('#cases-table [data-testid="cell-0-2"]').inner_text()
    first.click()
    wait_text(page, "#case-details", f"Node {node.strip()}")
    page.click("#case-open")
    page.wait_for_function(
        '() => document.querySelector(\'button[role="tab"][data-tab-id="search"]\')'
        ".getAttribute('aria-selected') === 'true'",
    )
    wait_text(page, "#node-details", f"Node {node.strip()} ")
    wait_plot(page, "#tree", f"e.dataset.run.startsWith('{run_prefix}')")


def notice_is_quiet(page: Any) -> bool:
    loc = page.locator("#notice")
    return not (loc.count() and loc.is_visible() and "no scored nodes" in loc.inner_text())


def test_a_typed_problem_runs(page: Any, served: dict[str, Any], tiny_models: tuple[str, str]) -> None:
    store = served["store"]
    policy, prm = tiny_models
    page.get_by_text("Models", exact=True).click()
    choose(page, "policy", Path(policy).name)  # the server offers the tiny models' folder (conftest)
    choose(page, "prm", Path(prm).name)
    fill(page, "budget", "4")
    page.get_by_text("…or type a problem").click()
    question = "Tom has 3 apples and buys 4 more. How many apples <b>now</b>?"
    fill(page, "free-question", question)
    fill(page, "free-answer", "7")
    wait_text(page, "#question", "Tom has 3 apples")
    page.click("#run-btn")
    wait_notice(page, "run ")
    deadline = time.time() + 60
    runs: list[dict[str, Any]] = []
    while not runs and time.time() < deadline:
        runs = [r for r in store.list_runs(limit=10) if r["question"] == question]
        time.sleep(0.2)
    assert runs, "the typed problem was not started"
    run = runs[0]
    assert run["problem_id"].startswith("typed-") and run["gold_answer"] == "7"
    deadline = time.time() + 240
    while store.get_run(run["run_id"])["status"] in ("queued", "running") and time.time() < deadline:
        time.sleep(0.25)
    assert store.get_run(run["run_id"])["status"] == "finished", store.get_run(run["run_id"]).get("error")
    wait_plot(page, "#tree", f"e.dataset.run === '{run['run_id']}' && e.dataset.status === 'finished'")
    wait_notice(page, "finished")  # the notice that said queued follows the run to its end
    assert "<b>" not in page.locator("#question").inner_html().replace("&lt;b&gt;", "")
    wait_idle(page)
    shot(page, "typed-problem")
