"""Compare in Debian's Chromium: the list of decisions uncertainty changed, on a real H-UATS vs REBASE pair of
the embedded arithmetic world; a click on a row selects its node in both trees, at its iteration; where the runs
first part is marked in both trees; the list's headers and cells fit at 1280×800 and 1920×1080. With
UATS_SCREENSHOTS=1 the page is saved at 1280×800 and 1920×1080 (docs/img holds copies)."""

from __future__ import annotations

from typing import Any

import pytest

from .pages import ARTIFACTS, PAIR, RING_ON_JS, SCREENSHOTS, fill, shot, table_fit, wait_idle, wait_plot, wait_text

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def arith_pair(served: dict[str, Any]) -> tuple[str, str]:
    """H-UATS and REBASE on one arithmetic problem, seed and budget, written to the served app's run log; τ low
    enough that the embedded PRM's spread sends candidates to re-evaluation."""
    from uats_core.config import SearchConfig
    from uats_core.runner import DEFAULT_PRM, build_backends, run_search
    from uats_core.worlds.arith import world

    if not (DEFAULT_PRM / "config.json").is_file():
        pytest.skip("embedded models missing")
    ids, models = [], None
    for method in ("h-uats", "rebase"):
        cfg = SearchConfig(method=method, budget=8, seed=0, tau=0.0005, max_iterations=8).validate()
        models = models or build_backends(None, None, cfg)
        ids.append(
            run_search(
                world.get_problem("arith-test-0"), cfg, *models, subscribers=[served["store"].subscriber()]
            ).run_id
        )
    return ids[0], ids[1]


def _open_pair(page: Any, a: str, b: str) -> None:
    page.get_by_role("tab", name="Compare").click()
    fill(page, "cmp-a", a[:12], submit=True)
    fill(page, "cmp-b", b[:12], submit=True)
    page.click("#cmp-load")
    wait_plot(page, "#cmp-tree-a", f"e.dataset.run === '{a}'")
    wait_plot(page, "#cmp-tree-b", f"e.dataset.run === '{b}'")
    # Gradio 6 draws a table's body as a virtual grid of role=gridcell divs, data-testid cell-<row>-<column>
    page.wait_for_function(
        "() => [...document.querySelectorAll('#cmp-changed [role=gridcell]')]"
        ".some(c => c.innerText.includes('re-evaluated'))",
    )
    wait_idle(page)


# the mark where the runs part sits on node `id`: a trace of that name at the node's place in the tree
PART_MARK_JS = """(gd, id) => {
  const mark = gd.data.find(t => t.name === 'where the runs part');
  const nodes = gd.data.find(t => t.name && t.name.startsWith('nodes'));
  if (!mark || !nodes || mark.customdata[0][0] !== id) return false;
  const i = nodes.customdata.findIndex(c => c[0] === id);
  return i >= 0 && nodes.x[i] === mark.x[0] && nodes.y[i] === mark.y[0];
}"""


@pytest.mark.parametrize("screen_page", ["1280x800", "1920x1080"], indirect=True)
def test_the_uncertainty_list_fits_the_page(screen_page: Any) -> None:
    """Every header's words on one line each and no cell's text cut off or run past the table, at both sizes (at
    1280 the headers broke letter by letter, "ru|n", "extr|a", "childre|n", while the steps took the width)."""
    pg = screen_page
    _open_pair(pg, PAIR["h-uats"], PAIR["rebase"])
    fit = table_fit(pg, "#cmp-changed")
    assert fit["cells"] >= 2 * 11 and not fit["broken"] and not fit["cut"], fit
    size = pg.viewport_size
    shot(pg, f"compare-changed-{size['width']}x{size['height']}", "#cmp-changed")


def test_a_row_of_the_uncertainty_list_selects_its_node_in_both_trees(
    page: Any, served: dict[str, Any], arith_pair: tuple[str, str]
) -> None:
    from ui.views.divergence import counterpart
    from ui.views.treedata import RunData
    from ui.views.uncertainty import changed_table

    a_id, b_id = arith_pair
    a, b = RunData.load(served["store"], a_id), RunData.load(served["store"], b_id)
    rows, targets = changed_table(a, b)
    assert rows and all(t[0] == "a" for t in targets)  # REBASE decides nothing by uncertainty
    # a row whose step REBASE sampled too, so the two rings sit on the same step in both trees
    matches = [(i, counterpart(b.state_at(t), a.state_at(None).prefix_key(n))) for i, (_, n, t) in enumerate(targets)]
    row, (b_node, shared) = max(matches, key=lambda m: (m[1][1], -m[0]))
    _, a_node, t = targets[row]
    assert shared > 0
    _open_pair(page, a_id, b_id)
    # where the runs first part: a mark on its node in both trees, as the summary says it in words
    from ui.views.comparison import divergence_nodes
    from ui.views.divergence import decision_divergence

    parts = divergence_nodes(decision_divergence(a, b))
    assert None not in parts, parts
    for sel, nid in zip(("#cmp-tree-a", "#cmp-tree-b"), parts):
        assert page.eval_on_selector(f"{sel} .uats-plot", PART_MARK_JS, nid), (sel, nid)
    summary = page.locator("#cmp-summary").inner_text()
    assert f"uncertainty changed {len(rows)} decision(s) of A" in summary and "Where they first differ" in summary
    header = page.locator("#cmp-changed th").filter(has_text="R̄ alone").first
    assert "first K0 passes" in (header.get_attribute("title") or "")  # the column's tooltip
    page.locator(f'#cmp-changed [data-testid="cell-{row}-3"]').click()
    page.wait_for_function(RING_ON_JS, arg=["#cmp-tree-a", a_node])
    page.wait_for_function(RING_ON_JS, arg=["#cmp-tree-b", b_node])
    wait_plot(page, "#cmp-tree-a", f"Number(e.dataset.iteration) === {t}")
    wait_text(page, "#cmp-why", f"node {a_node}")
    assert f"in run B: node {b_node}" in page.locator("#cmp-why").inner_text()
    if SCREENSHOTS:  # what a person sees: the viewport; on a laptop where the row click leaves the trees (rings in
        # view, the list above them), on a wide screen from the summary down (list and rings together)
        ARTIFACTS.mkdir(exist_ok=True)
        for width, height, scroll in (
            (1280, 800, "document.querySelector('#cmp-tree-a').scrollIntoView({block: 'nearest'})"),
            (1920, 1080, "window.scrollBy(0, document.querySelector('#cmp-summary').getBoundingClientRect().top - 8)"),
        ):
            page.set_viewport_size({"width": width, "height": height})
            wait_idle(page)
            page.evaluate(f"() => {{ {scroll}; }}")
            page.screenshot(path=str(ARTIFACTS / f"compare-uncertainty-{width}x{height}.png"))
