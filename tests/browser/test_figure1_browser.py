"""What a person sees, measured in Chromium at 1280×800 and 1920×1080 (issue 40): Figure 1 of a step of 8, 21 and
64 candidates with no two texts overlapping and none cut off, the spreads on one scale (the most uncertain
candidate widest, a confident one a tick); the whole
tree of an N = 64 run with no decision label over another or over the colour bar and legend (zooming in brings
the hidden ones back); a focus after a zoom framing its nodes; the tree in view after ◀ prev / next ▶.

Before these changes the inspector's Figure 1 piled its R̄/σ²/K labels on each other from about 8 candidates,
boxes of σ² ≈ 1e-4 were 1-3 px slivers, the N = 64 tree's labels ran into each other, a focus kept the old zoom,
and prev/next scrolled the tree under the sticky bar."""

from __future__ import annotations

from typing import Any

import pytest

from .pages import choose, shot, text_layout, wait_idle, wait_plot

pytestmark = pytest.mark.browser

SCREENS = ["1280x800", "1920x1080"]
RUNS = {8: "f8" * 16, 21: "f21" * 10 + "ff", 64: "f64" * 10 + "ff"}


@pytest.fixture(scope="module")
def step_runs(served: dict[str, Any]) -> dict[int, str]:
    """Synthetic H-UATS runs whose every step has exactly 8, 21 or 64 candidates (the real engine's events)."""
    from testkit.doubles import record_synthetic

    store = served["store"]
    for n, rid in RUNS.items():
        if not any(r["run_id"] == rid for r in store.list_runs(limit=500)):
            record_synthetic(
                store, rid, n_nodes={8: 120, 21: 260, 64: 700}[n], budget=n, seed=11, problem_id=f"synthetic-f{n}"
            )
    return RUNS


def _node_decided_at(served: dict[str, Any], rid: str, t: int) -> int:
    from ui.views.treedata import RunData

    data = RunData.load(served["store"], rid)
    return data.step(t)[0][len(data.step(t)[0]) // 2].node_id


# each row's box on the spread panel (a bar of the spread trace, its quartiles): its width in pixels and the σ² of
# the row's passes it carries
SHAPE_BOXES_JS = r"""() => {
  const gd = document.querySelector('#figure1 .uats-plot');
  const i = gd.data.findIndex(t => t.type === 'bar' && t.xaxis === 'x2');
  const paths = [...gd.calcdata[i][0].node3.node().querySelectorAll('.point path')];
  return gd.data[i].customdata.map((c, k) => [paths[k] ? paths[k].getBoundingClientRect().width : -1, c[1]]);
}"""


@pytest.mark.opens_an_address
@pytest.mark.parametrize("screen_page", SCREENS, indirect=True)
def test_figure1_texts_never_overlap_or_clip(
    screen_page: Any, served: dict[str, Any], step_runs: dict[int, str]
) -> None:
    pg, size = screen_page, screen_page.viewport_size
    for n in (8, 21, 64):  # one page, three steps: a page's load is most of a browser test's time
        rid, t = step_runs[n], 3
        nid = _node_decided_at(served, rid, t)
        pg.goto(f"{served['url']}/?run={rid}&node={nid}&t={t}")
        wait_plot(pg, "#figure1", f"e.dataset.run === '{rid}' && Number(e.dataset.nodes) === {n}")
        wait_idle(pg)
        seen = text_layout(pg, "#figure1")
        # every row's table line, its label, the ticks, the title and the caption
        assert seen["count"] >= 2 * n + 8, (n, seen["count"])
        assert not seen["overlaps"], (n, seen["overlaps"][:10])
        assert not seen["clipped"], (n, seen["clipped"][:10])
        boxes = pg.evaluate(SHAPE_BOXES_JS)  # one scale for the step: the most uncertain widest, a confident one a tick
        top = max(v for _, v in boxes)
        widest = max(w for w, _ in boxes)
        assert len(boxes) == n and min(w for w, _ in boxes) >= 0, (n, boxes)
        assert max(boxes, key=lambda b: b[1])[0] >= 0.5 * widest >= 6, (n, boxes)
        assert all(w <= max(3, widest / 5) for w, v in boxes if v < top / 100), (n, boxes)  # a tenth of σ: a tick
        shot(pg, f"figure1-{n}-{size['width']}x{size['height']}", "#figure1")


# the view shown now, as labelCull (ui/js/treelod.js) records the view it measured the labels in
LABEL_VIEW = "[...e._fullLayout.xaxis.range, ...e._fullLayout.yaxis.range].map(v => Number(v).toFixed(3)).join(',')"
TREE_MARKS_JS = r"""() => {
  const gd = document.querySelector('#tree .uats-plot');
  const fl = gd._fullLayout, box = gd.getBoundingClientRect();
  const plot = {left: box.left + fl.xaxis._offset, right: box.left + fl.xaxis._offset + fl.xaxis._length,
                top: box.top + fl.yaxis._offset, bottom: box.top + fl.yaxis._offset + fl.yaxis._length};
  const i = gd.data.findIndex(t => t.name === 'marks');
  const g = gd.querySelector('.trace' + gd._fullData[i].uid);
  const shown = [...g.querySelectorAll('.textpoint text')].filter(t => getComputedStyle(t).display !== 'none')
                  .map(t => t.getBoundingClientRect());
  let overlaps = 0, outside = 0;
  shown.forEach((a, k) => {
    if (a.left < plot.left || a.right > plot.right || a.top < plot.top || a.bottom > plot.bottom) outside++;
    for (const b of shown.slice(k + 1))
      if (Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 &&
          Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5) overlaps++;
  });
  return {shown: shown.length, all: gd.data[i].text.length, overlaps, outside};
}"""


@pytest.mark.opens_an_address
@pytest.mark.parametrize("screen_page", SCREENS, indirect=True)
def test_whole_tree_labels_never_collide_at_n64(
    screen_page: Any, served: dict[str, Any], step_runs: dict[int, str]
) -> None:
    pg, size = screen_page, screen_page.viewport_size
    rid = step_runs[64]
    pg.goto(f"{served['url']}/?run={rid}&t=4")
    wait_plot(
        pg,
        "#tree",
        f"e.dataset.run === '{rid}' && e.dataset.iteration === '4' && "
        f"e.dataset.lodPending === '0' && e.dataset.labelView === {LABEL_VIEW}",
    )
    wait_idle(pg)
    whole = pg.evaluate(TREE_MARKS_JS)
    assert whole["all"] > whole["shown"] > 0 and whole["overlaps"] == 0 and whole["outside"] == 0, whole
    # zoomed in on the plot's middle: labels left out at the whole-tree zoom come back, still none overlapping
    pg.evaluate(
        "() => { const gd = document.querySelector('#tree .uats-plot'); const r = gd._fullLayout.xaxis.range;"
        " const m = (r[0] + r[1]) / 2, w = (r[1] - r[0]) / 8;"
        " return Plotly.relayout(gd, {'xaxis.range': [m - w, m + w]}); }"
    )
    wait_plot(pg, "#tree", f"e.dataset.lodPending === '0' && e.dataset.labelView === {LABEL_VIEW}")
    zoomed = pg.evaluate(TREE_MARKS_JS)
    assert zoomed["overlaps"] == 0 and zoomed["outside"] == 0, zoomed
    assert zoomed["shown"] > 0
    shot(pg, f"tree-labels-n64-{size['width']}x{size['height']}", "#tree")


FOCUS_JS = r"""() => {
  const gd = document.querySelector('#tree .uats-plot');
  const fl = gd._fullLayout, box = gd.getBoundingClientRect();
  const plot = {left: box.left + fl.xaxis._offset, right: box.left + fl.xaxis._offset + fl.xaxis._length,
                top: box.top + fl.yaxis._offset, bottom: box.top + fl.yaxis._offset + fl.yaxis._length};
  const pts = [...gd.querySelectorAll('.scatterlayer .trace path.point')].map(p => p.getBoundingClientRect())
                .filter(b => b.width > 0);
  const notes = [...gd.querySelectorAll('.annotation')].map(a => a.getBoundingClientRect()).filter(b => b.width > 0);
  const inside = b => b.left >= plot.left - 1 && b.right <= plot.right + 1 && b.top >= plot.top - 1
    && b.bottom <= plot.bottom + 1;
  const cbar = gd.querySelector('.colorbar');
  const cb = cbar ? cbar.getBoundingClientRect() : null;
  const onBar = b => cb && b.left < cb.right && b.right > cb.left && b.top < cb.bottom && b.bottom > cb.top;
  return {points: pts.length, outside: pts.filter(b => !inside(b)).length,
          notes: notes.length, notes_on_bar: notes.filter(onBar).length,
          notes_outside: notes.filter(b => !inside(b)).length};
}"""


@pytest.mark.opens_an_address
def test_focus_after_a_zoom_frames_the_subtree(
    laptop_page: Any, served: dict[str, Any], step_runs: dict[int, str]
) -> None:
    """A focus after a zoom frames the subtree beside the open inspector, and again in the whole width once the
    inspector is closed, where the subtree is detailed and its R̄/σ² notes keep off the colour bar.

    Beside the inspector at 1280 the tree's plot is about 320 px wide: the subtree's columns are closer than the
    level of detail's least column (LOD.minColPx, ui/js/treelod.js), so it stays compact there, by that rule."""
    pg = laptop_page
    rid = step_runs[21]
    from ui.views.treedata import RunData

    state = RunData.load(served["store"], rid).state_at(None)
    sub = max((i for i in state.nodes if i and 6 <= len(state.subtree(i)) <= 40), key=lambda i: len(state.subtree(i)))
    focused = len({0, *state.path(sub), *state.subtree(sub)})  # bigtree.focus_nodes: its path and its subtree
    pg.goto(f"{served['url']}/?run={rid}&node={sub}")
    wait_plot(pg, "#tree", f"e.dataset.run === '{rid}' && e.dataset.lodPending === '0'")
    wait_idle(pg)
    # the user zooms into the left edge of the whole tree first
    pg.evaluate(
        "() => { const gd = document.querySelector('#tree .uats-plot'); const r = gd._fullLayout.xaxis.range;"
        " return Plotly.relayout(gd, {'xaxis.range': [r[0], r[0] + (r[1] - r[0]) / 6]}); }"
    )
    pg.get_by_text("View: filters, search, collapse").click()
    choose(pg, "f-focus", "selected subtree")
    wait_plot(
        pg,
        "#tree",
        f"Number(e.dataset.shown) === {focused} && e._fullLayout.xaxis.autorange === true && "
        f"e.dataset.lodPending === '0' && e.dataset.labelView === {LABEL_VIEW}",
    )
    beside = pg.evaluate(FOCUS_JS)
    assert beside["points"] >= 6 and beside["outside"] == 0, beside  # every focused node inside the plot area
    assert beside["notes"] == 0 or (beside["notes_on_bar"] == 0 and beside["notes_outside"] == 0), beside
    narrow = pg.eval_on_selector("#tree .uats-plot", "e => e._fullLayout.xaxis._length")
    # the inspector closed: the tree takes the whole width again (it had stayed as narrow as the inspector left it)
    pg.click("#inspector-panel .uats-close")
    wait_plot(
        pg,
        "#tree",
        f"e._fullLayout.xaxis._length > 1.5 * {narrow} && e.dataset.lod === 'detail' && "
        f"e.dataset.lodPending === '0' && e.dataset.labelView === {LABEL_VIEW}",
    )
    seen = pg.evaluate(FOCUS_JS)
    assert seen["points"] >= 6 and seen["outside"] == 0, seen
    assert seen["notes"] > 0 and seen["notes_on_bar"] == 0 and seen["notes_outside"] == 0, seen
    shot(pg, "focus-after-zoom-1280x800", "#tree")


@pytest.mark.opens_an_address
@pytest.mark.parametrize("screen_page", SCREENS, indirect=True)
def test_replay_keeps_the_tree_in_view(screen_page: Any, served: dict[str, Any], step_runs: dict[int, str]) -> None:
    pg, size = screen_page, screen_page.viewport_size
    rid = step_runs[8]
    pg.goto(f"{served['url']}/?run={rid}")
    wait_plot(pg, "#tree", f"e.dataset.run === '{rid}'")
    wait_idle(pg)
    pg.evaluate("() => window.scrollTo(0, 900)")  # the page scrolled down to the inspector, as a reader does
    last = int(pg.eval_on_selector("#tree .uats-plot", "e => e.dataset.iteration"))
    for button, want in (("#prev-btn", last - 1), ("#prev-btn", last - 2), ("#next-btn", last - 1)):
        pg.click(button)
        wait_plot(pg, "#tree", f"e.dataset.iteration === '{want}'")
        tree = pg.locator("#tree").bounding_box()
        bar = pg.locator("#run-bar").bounding_box()
        view_h = size["height"]
        assert tree["y"] >= bar["y"] + bar["height"] - 1, (tree, bar)  # not under the sticky bar
        assert tree["y"] < view_h - 200, (tree, view_h)  # and in the window, its top rows readable
        status = pg.locator("#run-status").inner_text()
        assert f"replaying iteration {want} of {last}" in status, status
    shot(pg, f"replay-{size['width']}x{size['height']}", full_page=False)
