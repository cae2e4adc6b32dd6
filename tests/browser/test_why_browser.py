"""The "why" of a search in Chromium: a node's decision in words, the whole frontier of its step (sorted,
paged, siblings as a filter, rows clickable), and a comparison whose trees are clickable and whose REBASE
run is shadow-scored. Screenshots land in artifacts/ (docs/img holds copies)."""

from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from .pages import NODE_PIXEL_JS, PAIR, fill, open_run, shot, wait_idle, wait_notice, wait_plot, wait_text

pytestmark = pytest.mark.browser

WIDE = "c1" * 16  # a run whose steps have about 120 candidates: the frontier pages


@pytest.fixture(scope="module")
def wide_run(served: dict[str, Any]) -> str:
    from tests.doubles import record_synthetic

    store = served["store"]
    try:
        store.get_run(WIDE)
    except Exception:  # noqa: BLE001 - not written yet in this session
        record_synthetic(store, WIDE, n_nodes=900, budget=120, seed=21, problem_id="synthetic-wide")
    return WIDE


def _decided_node(store: Any, run_id: str, t: int) -> int:
    its = {i["iteration"]: i for i in store.get_iterations(run_id)}
    return int(its[t]["decisions"][len(its[t]["decisions"]) // 2]["node_id"])


def _click_node(page: Any, sel: str, node_id: int) -> None:
    target = page.evaluate(NODE_PIXEL_JS, [sel, node_id])
    assert target, f"node {node_id} not visible in {sel}"
    page.mouse.click(target["x"], target["y"])


def _frontier_labels(page: Any) -> list[str]:
    return page.evaluate("() => document.querySelector('#frontier .uats-plot').layout.yaxis.categoryarray")


def test_why_panel_explains_the_clicked_node(page: Any, served: dict[str, Any]) -> None:
    run_id = PAIR["h-uats"]
    nid = _decided_node(served["store"], run_id, 3)
    open_run(page, run_id)
    _click_node(page, "#tree", nid)
    text = wait_text(page, "#why-panel", f"node {nid}")
    assert "decided at iteration 3" in text
    assert "τ =" in text and ("OOD" in text or "ID" in text)
    assert "of C =" in text and "B =" in text and "C =" in text  # the node's share and where the step's went
    assert page.locator("#why-panel script, #why-panel img").count() == 0
    shot(page, "why-panel", "#why-panel")


def test_frontier_sorts_pages_filters_and_inspects(page: Any, served: dict[str, Any], wide_run: str) -> None:
    from ui.views.frontier import frontier_figure
    from ui.views.treedata import RunData

    data = RunData.load(served["store"], wide_run)
    t = max(data.iterations, key=lambda i: len(data.iterations[i].get("decisions") or []))
    nid = _decided_node(served["store"], wide_run, t)

    def expected(sort_by: str, per_page: int, page_: int | None = None) -> list[int]:
        fig = frontier_figure(data, t, sort_by=sort_by, per_page=per_page, page=page_, selected=nid)
        return fig["meta"]["rows"]

    def shown() -> list[int]:
        return [int(lab.split()[1][1:]) for lab in _frontier_labels(page)]

    open_run(page, wide_run)
    fill(page, "node-id", str(nid), submit=True)
    wait_plot(page, "#frontier", f"e.dataset.iteration === '{t}' && Number(e.dataset.nodes) === 50")
    assert shown() == expected("mean", 50, None)  # the page holding the selected node, best R̄ first
    # sort by σ²: the order the stored statistics give
    page.locator("#frontier-sort input").first.click()
    page.get_by_role("option", name="σ² (variance)").click()
    page.wait_for_function(f"() => document.querySelector('#frontier .uats-plot').layout.title.text.includes('var')",
                           timeout=20_000)
    assert shown() == expected("var", 50, None)
    # 25 rows a page, then the next page
    page.locator("#frontier-per-page input").first.click()
    page.get_by_role("option", name="25", exact=True).click()
    wait_plot(page, "#frontier", "Number(e.dataset.nodes) <= 25")
    first = page.evaluate("() => document.querySelector('#frontier .uats-plot').layout.yaxis.categoryarray[0]")
    start = int(first.split(".")[0])
    step, button = (-25, "#frontier-prev") if start > 25 else (25, "#frontier-next")
    page.click(button)
    page.wait_for_function("() => document.querySelector('#frontier .uats-plot').layout.yaxis.categoryarray[0]"
                           f".startsWith('{start + step}.')", timeout=20_000)
    assert shown() == expected("var", 25, (start + step - 1) // 25)
    # a click on a row inspects that candidate
    row = int(_frontier_labels(page)[0].split()[1][1:])
    page.evaluate("([id]) => document.querySelector('#frontier .uats-plot').emit('plotly_click', "
                  "{points: [{customdata: [id]}]})", [row])
    page.wait_for_function(f"() => document.querySelector('#node-id input').value === '{row}'", timeout=20_000)
    wait_text(page, "#why-panel", f"node {row}")
    # siblings only: a filter of the same view
    page.locator("#frontier-siblings input").check()  # the box itself: its help text fills the block
    page.wait_for_function("() => document.querySelector('#frontier .uats-plot').layout.title.text.includes('siblings')",
                           timeout=20_000)
    parent = data.nodes[row]["parent_id"]
    ids = [int(lab.split()[1][1:]) for lab in _frontier_labels(page)]
    assert row in ids and all(data.nodes[i]["parent_id"] == parent for i in ids)


def test_frontier_reads_at_200_candidates(page: Any, served: dict[str, Any], wide_run: str) -> None:
    from ui.views.treedata import RunData

    data = RunData.load(served["store"], wide_run)
    t = max(data.iterations, key=lambda i: len(data.iterations[i].get("decisions") or []))
    open_run(page, wide_run)
    fill(page, "node-id", str(_decided_node(served["store"], wide_run, t)), submit=True)
    page.locator("#frontier-per-page input").first.click()
    page.get_by_role("option", name="200").click()
    n = len(data.iterations[t]["decisions"])
    wait_plot(page, "#frontier", f"Number(e.dataset.nodes) === {min(200, n)}")
    # one row per candidate: no two y tick labels overlap
    overlaps = page.evaluate("""() => {
      const ticks = [...document.querySelectorAll('#frontier .uats-plot .ytick text')].map(e => e.getBoundingClientRect())
        .sort((a, b) => a.top - b.top);
      let bad = 0;
      for (let i = 1; i < ticks.length; i++) if (ticks[i].top < ticks[i - 1].bottom - 1) bad++;
      return [ticks.length, bad]; }""")
    assert overlaps[0] == min(200, n) and overlaps[1] == 0, overlaps
    page.locator("#frontier").scroll_into_view_if_needed()
    shot(page, "frontier", "#frontier")


def test_compare_click_shadow_and_export(page: Any, served: dict[str, Any]) -> None:
    page.get_by_role("tab", name="Compare").click()
    fill(page, "cmp-a", PAIR["h-uats"][:10], submit=True)
    fill(page, "cmp-b", PAIR["rebase"][:10], submit=True)
    page.click("#cmp-load")
    wait_plot(page, "#cmp-tree-b", "Number(e.dataset.nodes) > 1")
    nid_b = _decided_node(served["store"], PAIR["rebase"], 3)
    _click_node(page, "#cmp-tree-b", nid_b)
    wait_text(page, "#cmp-why", f"node {nid_b}")
    assert "Run B" in page.locator("#cmp-why").inner_text()
    wait_plot(page, "#cmp-inspector", "Number(e.dataset.nodes) > 0")
    # shadow scoring: MC passes on REBASE's candidates, stored apart, drawn in their own traces
    cost_before = served["store"].get_run(PAIR["rebase"])["cost"]
    zips_before = {p: p.stat().st_mtime_ns for p in served["export_dir"].rglob("*.zip")}
    fill(page, "cmp-shadow-k", "4")
    page.click("#cmp-shadow")
    # a job of the worker pool: its worker starts (a fresh interpreter) and loads the PRM first
    wait_notice(page, "shadow-scored run B", timeout_s=480)
    wait_plot(page, "#cmp-tree-b", "e.data.some(t => (t.name || '').startsWith('shadow'))")
    assert served["store"].get_run(PAIR["rebase"])["cost"] == cost_before
    _click_node(page, "#cmp-tree-b", nid_b)
    text = wait_text(page, "#cmp-why", "shadow")
    assert "4 MC passes" in text and "not spent by this run" in text
    page.wait_for_function("() => document.querySelector('#cmp-inspector .uats-plot').data"
                           ".some(t => t.name === 'shadow')", timeout=20_000)
    wait_idle(page)
    shot(page, "compare-shadow")
    # no zip was built behind the clicks (kaleido's Chromium would slow them): exports are built when asked
    assert {p: p.stat().st_mtime_ns for p in served["export_dir"].rglob("*.zip")} == zips_before
    # the comparison export holds both trees and the shadow scores; its LaTeX prints whole costs
    page.click("#cmp-export-build")
    button = page.locator("#cmp-export")
    deadline = time.time() + 120
    while time.time() < deadline and not (button.is_visible() and "compare-" in button.inner_text()):
        time.sleep(0.2)
    with page.expect_download(timeout=60_000) as info:
        button.click()
    with zipfile.ZipFile(Path(info.value.path())) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".json"))
        data = json.loads(zf.read(name))
        tex = zf.read(name.replace(".json", ".tex")).decode()
    assert len(data["a_nodes"]) == 160 and len(data["b_nodes"]) == 160 and len(data["b_shadow"]) == 159
    assert ".000" not in tex.split("\\midrule")[1].split("\\bottomrule")[0]
